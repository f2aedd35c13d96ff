package tools

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/tools/serve"
)

// stdioSessionID is the id of the stdio transport's one session, as
// mcp-go's stdio server gives it.
const stdioSessionID = "stdio"

// ServeStdio serves one client over in and out until in ends or ctx is
// done. stdout carries only MCP frames; the session's attachments end with
// it.
//
// Frames are read here first: a plain call of a proxied tool is answered
// on the fast path (fastpath.go), everything else goes on to the MCP
// server through a pipe. Both write whole frames through one writer.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	srv := server.NewStdioServer(g.mcp)
	// mcp-go runs a stdio session's tools/call on 5 workers by default: a
	// sixth call would wait for one of them to end, so a few gateway tools
	// that wait (attach_resource, wait_task, a slow call_attached_tool)
	// would hold up every other. Over HTTP each request has a goroutine;
	// here, mcp-go's largest pool and queue.
	server.WithWorkerPoolSize(100)(srv)
	server.WithQueueSize(10000)(srv)
	srv.SetErrorLogger(slog.NewLogLogger(g.log.Handler(), slog.LevelError))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := jsonrpc.NewFrameWriter(out) // the server writes a frame per Write
	// No writer waits on a client that stops reading while its answers
	// fit the backlog; past it, writers wait and the reader reads no more
	// requests (stdioReader.run). mcp-go serves each request on a
	// goroutine of its own: without this, each held an answer, and a
	// client that wrote and never read grew memory without bound.
	w.Backlog, w.Wait = cmp.Or(g.opts.StdioBacklog, DefaultStdioBacklog), true
	// A client that closed its end of out has gone, even if it keeps in
	// open: the session ends, and with it its upstreams.
	w.OnError = func(err error) {
		g.log.Warn("the client's end of stdout is closed: ending the session", "err", err)
		cancel()
	}
	toServer, fromReader := io.Pipe()
	r := &stdioReader{g: g, w: w, server: fromReader}
	g.stdioOut.Store(r)
	defer g.stdioOut.CompareAndSwap(r, nil)
	// An over-size frame is read through and dropped, so it is refused
	// and the session goes on, instead of growing memory without bound.
	lines := jsonrpc.NewLineReader(in, 64<<10)
	lines.Max = jsonrpc.MaxMessage
	go r.run(ctx, lines)
	err := srv.Listen(ctx, toServer, serve.DropAnswers{W: w, U: &r.unanswered})
	cancel() // the client is gone: its fast calls in flight end too
	_ = toServer.Close()
	r.calls.Shut()
	r.inFlight.StopAll()
	r.calls.Wait()
	// A call is done once its answer is written or held; what an
	// upstream's reader still holds goes out now, and the backlog, before
	// the caller closes out.
	_ = w.Flush()
	_ = w.Written()
	return err
}

// stdioReader reads the client's frames and sends each to the fast path
// or on to the MCP server.
type stdioReader struct {
	g      *Gateway
	w      *jsonrpc.FrameWriter
	server *io.PipeWriter
	calls  serve.CallGroup
	// held is what the reader holds back while it has more frames at
	// hand: the requests of fast calls, which then reach each upstream in
	// one write, and refusals. Only the reader's goroutine uses it.
	held jsonrpc.Batch
	// inFlight are the fast calls in flight. Over stdio the session is
	// the reader's own.
	inFlight serve.Inflight
	// unanswered are the server's calls that the client cancelled.
	unanswered serve.Unanswered
	// opened: an initialize has gone to the server; before, requests but
	// ping are refused (serve.BeforeInitialize).
	opened atomic.Bool
}

// run reads the client's frames. A frame is valid until the next read:
// the fast path and the server's pipe (whose Write returns once the
// server has copied it all) are done with it by then. What the fast path
// held goes out before the reader waits, on the client or on the server.
func (r *stdioReader) run(ctx context.Context, in *jsonrpc.LineReader) {
	defer r.held.Flush()
	for {
		if !r.room(ctx) {
			return // the session ends
		}
		line, err := in.ReadLine()
		if long, ok := err.(*jsonrpc.LongLine); ok { // as ReadLine returns it, unwrapped
			r.refuseLong(long)
			line, err = nil, nil
		}
		if !r.take(ctx, serve.ClientFrame(line, err), &r.held) {
			return // the server stopped listening
		}
		if err != nil || !in.LineBuffered() {
			r.held.Flush()
		}
		if err != nil {
			_ = r.server.CloseWithError(err) // io.EOF ends the server's Listen
			return
		}
	}
}

// room waits, before the next frame is read, while the client has left
// a backlog of answers unread; what is held goes out first. It reports
// false when the session ended meanwhile.
func (r *stdioReader) room(ctx context.Context) bool {
	if r.w.Waiting() < r.w.Backlog {
		return true
	}
	r.held.Flush()
	return r.w.Room(ctx)
}

// take serves line, a frame of the client's: with a refusal at the door
// (refuseFrame, atDoor), on the fast path, or on to the MCP server. What
// it writes to the client or an upstream may be held in held. It reports
// false when the server stopped listening.
func (r *stdioReader) take(ctx context.Context, line []byte, held *jsonrpc.Batch) bool {
	if len(line) == 0 || r.refuseFrame(line, held) {
		return true // nothing read, or refused
	}
	return r.route(ctx, line, held, true)
}

// refuseFrame answers line with the error that refuses it before either
// path sees it, if one does, and reports whether it did: a batch or a
// frame whose members could be read two ways (serve.FrameRefusal), or a
// request before initialize (serve.BeforeInitialize).
func (r *stdioReader) refuseFrame(line []byte, held *jsonrpc.Batch) bool {
	msg := serve.FrameRefusal(line)
	if msg == nil && !r.opened.Load() {
		msg = serve.BeforeInitialize(line)
	}
	if msg != nil {
		r.refuse(held, msg)
	}
	return msg != nil
}

// route serves line, a frame past the door, as take does. wait: a call
// of a tool of a pinned server still starting may wait for it
// (startingCall); after that wait, the call is routed again with none.
func (r *stdioReader) route(ctx context.Context, line []byte, held *jsonrpc.Batch, wait bool) bool {
	switch {
	case bytes.Contains(line, serve.MetaKeyProtocolVersion) && r.refuseStateless(line, held):
		// a request of the stateless protocol, on no path
	case r.fast(ctx, line, held, wait):
		// answered on the fast path
	case r.atDoor(line, held):
		// refused with an error, or dropped
	default:
		r.opening(line)
		r.unanswered.Forget(line) // a new request reusing the id
		held.Flush()
		if _, err := r.server.Write(line); err != nil {
			return false
		}
	}
	return true
}

// fast answers line on the fast path and reports whether it took it. A
// call to a stdio server is started here and answered from the reader of
// that server's pipe, as soon as its response is read (StartRaw); any
// other call runs on a goroutine of its own, as the server runs calls. A
// cancellation of a fast call is applied here and still passed on to the
// server.
func (r *stdioReader) fast(ctx context.Context, line []byte, held *jsonrpc.Batch, wait bool) bool {
	s := r.g.stdio.Load()
	c, ok := r.g.fastCall(s, line)
	if !ok {
		if f, ok := r.g.fastList(s, line); ok {
			r.reply(f, held)
			return true
		}
		if r.offers(ctx, s, line) || wait && r.startingCall(ctx, s, line) {
			return true
		}
		// Looked for only now: a call's frame may be large, and a
		// notice is never a call.
		if id, stopped := r.inFlight.Cancel(line); id != "" && !stopped {
			r.unanswered.Add(id) // before the server hears the notice
		}
		return false
	}
	if !r.calls.Add() {
		return false // the session is ending; the server answers
	}
	traced, trace := r.g.opts.Tracing.startCall(ctx, nil, c)
	a, refused := r.g.admit(s, c.called(), nil)
	if refused != nil {
		f := r.g.failedFrame(s, c, refused)
		trace.end(f)
		r.reply(f, held)
		r.calls.Done()
		return true
	}
	sc := &stdioCall{r: r, ctx: ctx, c: c, a: a, trace: trace}
	r.inFlight.Add(c.ID, sc)
	progress := c.progress(r)
	if trace == nil { // a traced call runs in the context that holds its spans, below
		if stop, ok := s.att.StartRaw(c.Name, c.Arguments, c.Meta, progress, held, sc.finish); ok {
			sc.started(stop)
			return true
		}
	}
	// The arguments and _meta are slices of the frame, which the call
	// outlives.
	sc.c.Arguments, sc.c.Meta = bytes.Clone(c.Arguments), bytes.Clone(c.Meta)
	callCtx, cancel := context.WithCancelCause(traced)
	sc.started(cancel)
	go func() {
		defer cancel(nil)
		// sc's copy, not c: a closure over c, larger than 128 bytes, put
		// it on the heap on every call, this way taken or not.
		raw, err := s.att.CallRaw(callCtx, sc.c.Name, sc.c.Arguments, sc.c.Meta, progress)
		sc.finish(raw, err, nil)
	}()
	return true
}

// Notify writes a notice of an upstream's to the client: progress on a
// fast call, a log message. It is written on the goroutine that read it,
// before the call's result, which that goroutine reads after it.
func (r *stdioReader) Notify(n mcp.JSONRPCNotification) {
	line, err := json.Marshal(n)
	if err == nil {
		_, err = r.w.Write(append(line, '\n'))
	}
	if err != nil {
		r.g.log.Debug("notice not relayed", "method", n.Method, "err", err)
	}
}

// stdioCall is a fast call in flight on the stdio transport. One of them
// holds all a call needs, so that a call allocates little besides it.
type stdioCall struct {
	r     *stdioReader
	ctx   context.Context
	c     callFrame
	a     admission
	trace *callTrace // nil while tracing is off

	// A cancellation that comes while the call is starting still stops
	// it, without a lock held across the start, which writes to the
	// upstream and could wait on it.
	mu    sync.Mutex
	end   func(error) // how to stop it; nil until started
	cause error       // why it was stopped; nil until it is
	// byClient: the client cancelled the call, and gets no answer.
	byClient atomic.Bool
}

// finish writes the call's result to the client, or holds it in b
// (attach.RawDone), unless the client cancelled the call, and forgets the
// call.
func (sc *stdioCall) finish(raw json.RawMessage, err error, b *jsonrpc.Batch) {
	r := sc.r
	r.inFlight.Remove(sc.c.ID)
	f := r.g.fastResult(sc.ctx, r.g.stdio.Load(), sc.c, sc.a, raw, err)
	sc.trace.end(f)
	if !sc.byClient.Load() {
		r.reply(f, b)
	}
	r.calls.Done()
}

// Cancel stops the call for the client, which then gets no answer; the
// upstream is told the client's reason.
func (sc *stdioCall) Cancel(reason string) {
	sc.byClient.Store(true)
	sc.halt(serve.ByClient(reason))
}

// Stop stops the call: its session ends.
func (sc *stdioCall) Stop() { sc.halt(context.Canceled) }

// halt stops the call with cause, now or as soon as it has started.
func (sc *stdioCall) halt(cause error) {
	sc.mu.Lock()
	if sc.cause == nil {
		sc.cause = cause
	}
	end := sc.end
	sc.mu.Unlock()
	if end != nil {
		end(cause)
	}
}

// started records how to stop the call; a stop may run twice, which ends
// the call once.
func (sc *stdioCall) started(stop func(error)) {
	sc.mu.Lock()
	sc.end = stop
	cause := sc.cause
	sc.mu.Unlock()
	if cause != nil {
		stop(cause)
	}
}

// reply writes one frame to the client, or holds it in b.
func (r *stdioReader) reply(f serve.Frame, b *jsonrpc.Batch) {
	if err := f.WriteLine(r.w, b); err != nil {
		r.g.log.Debug("fast call result not written", "err", err)
	}
}

// HTTP serves MCP over streamable HTTP at /mcp, with /healthz.
type HTTP struct {
	g             *Gateway
	streamable    *server.StreamableHTTPServer
	mux           *http.ServeMux
	authToken     string
	idleTTL       time.Duration
	reapAfter     time.Duration
	headerTimeout time.Duration
	bodyTimeout   time.Duration
	connTimeout   time.Duration // IdleConnTimeout
	heartbeat     time.Duration // StreamHeartbeat
	maxSessions   int64
	versions      []string // the protocol versions offered
	ids           *serve.SessionIDs
	events        *serve.EventStore
	kept          keptConns
	answering     atomic.Int64 // requests the server is answering (Shutdown)
}

// HTTPOptions configure NewHTTP.
type HTTPOptions struct {
	// AuthToken, when set, must come as "Authorization: Bearer <token>".
	AuthToken string
	// IdleTTL ends sessions whose client went away without saying so;
	// zero means config.DefaultSessionIdle.
	IdleTTL time.Duration
	// ReapAfter ends a session sooner, once its client shows no sign of
	// life for that long (reap.go); zero means config.DefaultSessionReap.
	ReapAfter time.Duration
	// ReadHeaderTimeout bounds the reading of a request's head on the
	// connections the gateway serves itself (keepalive.go); zero means
	// DefaultReadHeaderTimeout. Give the http.Server the same.
	ReadHeaderTimeout time.Duration
	// IdleConnTimeout closes a client's connection that carried no
	// request for that long, on the connections the gateway serves
	// itself, and one whose client read nothing of an answer for that
	// long; zero means DefaultIdleConnTimeout. Give the http.Server the
	// same (IdleTimeout). An open event stream is a request in progress,
	// not an idle connection.
	IdleConnTimeout time.Duration
	// BodyTimeout bounds the reading of a request's body once its head
	// is in; zero means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// MaxSessions caps the sessions open at once: a request that would
	// open one more (one without a session id) is refused with 503 until
	// one ends. Zero means config.DefaultMaxSessions.
	MaxSessions int
	// StreamHeartbeat is how long a session's GET stream may stay quiet
	// before a comment is written on it (serve/heartbeat.go); zero means
	// DefaultStreamHeartbeat, and a negative value writes none.
	StreamHeartbeat time.Duration
}

// HTTPOptionsFrom returns the options cfg sets.
func HTTPOptionsFrom(cfg *config.Config) HTTPOptions {
	return HTTPOptions{AuthToken: cfg.AuthToken, MaxSessions: cfg.MaxSessions, IdleTTL: cfg.SessionIdleTimeout, ReapAfter: cfg.SessionReapAfter}
}

// DefaultIdleConnTimeout is how long a client's connection may wait idle
// between requests: without a bound, clients that open connections and
// leave them hold a goroutine and buffers each for good.
const DefaultIdleConnTimeout = 2 * time.Minute

// DefaultReadHeaderTimeout is the time a client has to send a request's
// head once it has started it.
const DefaultReadHeaderTimeout = 10 * time.Second

// DefaultBodyTimeout is the time a client has to send a request's body
// once its head is in: a body that stalled held its connection and a
// goroutine for good, and a shutdown its whole drain.
const DefaultBodyTimeout = time.Minute

// NewHTTP builds the HTTP handler.
//
// Sessions: mcp-go's newest protocol (2026-07-28) is stateless, with no
// session to hang attachments on. The gateway therefore offers only the
// session-oriented versions (2025-11-25 and older); a client on the newest
// version learns this from server/discover and negotiates down, keeping its
// attachments for the life of its Mcp-Session-Id.
func (g *Gateway) NewHTTP(opt HTTPOptions) *HTTP {
	if opt.IdleTTL == 0 {
		opt.IdleTTL = config.DefaultSessionIdle
	}
	if opt.ReapAfter == 0 {
		opt.ReapAfter = config.DefaultSessionReap
	}
	if opt.ReadHeaderTimeout == 0 {
		opt.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if opt.IdleConnTimeout == 0 {
		opt.IdleConnTimeout = DefaultIdleConnTimeout
	}
	if opt.BodyTimeout == 0 {
		opt.BodyTimeout = DefaultBodyTimeout
	}
	if opt.MaxSessions == 0 {
		opt.MaxSessions = config.DefaultMaxSessions
	}
	if opt.StreamHeartbeat == 0 {
		opt.StreamHeartbeat = serve.DefaultStreamHeartbeat
	}
	h := &HTTP{g: g, authToken: opt.AuthToken, mux: http.NewServeMux(), idleTTL: opt.IdleTTL, reapAfter: opt.ReapAfter, headerTimeout: opt.ReadHeaderTimeout,
		connTimeout: opt.IdleConnTimeout, bodyTimeout: opt.BodyTimeout, maxSessions: int64(opt.MaxSessions),
		heartbeat: opt.StreamHeartbeat}
	h.kept.idle = opt.IdleConnTimeout
	h.versions = serve.SessionVersions()
	h.ids = &serve.SessionIDs{}
	h.events = serve.NewEventStore(256, 16<<20, 256<<20, 2*time.Minute)
	h.streamable = server.NewStreamableHTTPServer(g.mcp,
		server.WithSessionIdManager(h.ids), // not WithStateful: it keeps every ended id
		server.WithStreamableHTTPProtocolVersions(h.versions...),
		server.WithSessionIdleTTL(opt.IdleTTL),
		server.WithEventStore(h.events),
		server.WithStreamableHTTPLogger(g.log),
		server.WithHTTPContextFunc(callbackBase),
	)
	h.mux.Handle("/mcp", h.guard(h.fast(serve.Released(h.streamable))))
	// The user's browser comes back here from a server's authorization
	// page: no session, no token, only the flow's state.
	h.mux.HandleFunc("GET "+attach.CallbackPath, h.oauthCallback)
	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.mux.Handle("GET /metrics", h.guard(g.metrics.handler()))
	return h
}

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// callbackBase has an attach's OAuth flow come back to the gateway's own
// listener, as the client reached it.
func callbackBase(ctx context.Context, r *http.Request) context.Context {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return attach.WithCallbackBase(ctx, scheme+"://"+r.Host)
}

// oauthCallback completes the flow the redirect back names, and tells
// the user to return to their client.
func (h *HTTP) oauthCallback(w http.ResponseWriter, r *http.Request) {
	urn, err := h.g.manager.Callback(r.Context(), r.URL.Query())
	attach.WriteCallbackPage(w, urn, err)
}

// Shutdown ends every HTTP session (and so its attachments) and releases
// open event streams, so that http.Server.Shutdown can finish. The
// connections the gateway serves itself are closed once idle; Shutdown
// waits for them until ctx ends.
func (h *HTTP) Shutdown(ctx context.Context) error {
	// The calls still running (those the drain cut) end first, each
	// answered with a sentence that says so; a request the server answers
	// has its answer written on its own stream, which the server's
	// shutdown closes: it ended with no answer at all. Answers on the
	// connections the gateway serves itself close them from now on.
	// The sessions' ends may take a while more for their agents' tasks,
	// which are cancelled at the agents meanwhile (within ctx, too).
	h.kept.closing.Store(true)
	ended := make(chan struct{})
	go func() {
		h.g.manager.Shutdown()
		close(ended)
	}()
	wait, cancel := context.WithTimeout(ctx, answersGrace)
	tick := time.NewTicker(10 * time.Millisecond)
	for h.answering.Load() > 0 && wait.Err() == nil {
		select {
		case <-tick.C:
		case <-wait.Done():
		}
	}
	tick.Stop()
	cancel()
	h.kept.shutdown(ctx)
	err := h.streamable.Shutdown(ctx)
	h.kept.back.shutdown(ctx)
	select {
	case <-ended:
	case <-ctx.Done():
	}
	return err
}

// answersGrace bounds how long Shutdown waits for the server's answers to
// calls it ended.
const answersGrace = 2 * time.Second

// guard applies the gateway's HTTP access rules before MCP sees a request:
// the Origin check against DNS rebinding from browsers, the bearer token,
// and the body cap.
func (h *HTTP) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr); serve.Rebound(r.Host, local) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		if !h.originOK(r) {
			http.Error(w, "Forbidden: Origin "+r.Header.Get("Origin")+" may not use this gateway", http.StatusForbidden)
			return
		}
		if serve.AllowCORS(w, r) {
			return // a preflight, answered before the token: it carries none
		}
		if !h.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ardgate"`)
			http.Error(w, "Unauthorized: send Authorization: Bearer <ARDGATE_AUTH_TOKEN>", http.StatusUnauthorized)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, jsonrpc.MaxMessage)
		next.ServeHTTP(w, r)
	})
}

func (h *HTTP) originOK(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o == "" || serve.OriginAllowed(o, r.Host)
}

// authorized tells whether the request carries the bearer token, when the
// gateway has one.
func (h *HTTP) authorized(r *http.Request) bool {
	if h.authToken == "" {
		return true
	}
	// The scheme's name is case-insensitive (RFC 9110, 11.1).
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(got), []byte(h.authToken)) == 1
}

// fast answers a plain call of a proxied tool of a known session on the
// fast path (fastpath.go), then serves the calls that follow on its
// connection itself (keepalive.go), and passes every other request to
// next, the MCP server, with its body as it came. A notifications/cancelled
// among them stops the fast call it names on its way, or cancels the
// answer of a request the server runs (serve.ServerCall).
// A batch or a frame whose members could be read two ways
// (serve.FrameRefusal), a body over the cap, or a request whose id is refused
// (idRefusal) is answered with an error (serve/door.go).
//
// The server keeps each session's idle clock, and only it can: a session
// that the server has not seen for a quarter of the idle TTL takes the
// server's path once, which winds that clock.
func (h *HTTP) fast(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.refuseVersion(w, r) {
			return
		}
		s, ok := h.fastSession(r)
		if s != nil {
			defer h.serving(r, s)()
		}
		switch r.Method {
		case http.MethodPost:
			h.post(next, w, r, s, ok)
		case http.MethodGet, http.MethodDelete:
			h.stream(next, w, r, s)
		default: // mcp-go's server answered 404 "page not found"
			w.Header().Set("Allow", "GET, POST, DELETE")
			http.Error(w, "Method Not Allowed: /mcp takes POST (messages), GET (a session's event stream) and DELETE (the end of a session)", http.StatusMethodNotAllowed)
		}
	})
}

// refuseVersion answers a request in a protocol version the gateway does
// not speak, and reports whether it did. It comes first, as the spec asks
// and mcp-go's server does: the gateway's own answers at the door
// (refusals of unknown tools, levels) came back 200 in a version never
// agreed.
func (h *HTTP) refuseVersion(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header.Get(mcp.HeaderProtocolVersion)
	if v == "" || slices.Contains(h.versions, v) || mcp.IsModernProtocol(v) && mcp.IsValidProtocolVersion(v) {
		return false
	}
	http.Error(w, "Bad Request: Unsupported protocol version: "+guard.Text(v, 40)+"; this gateway speaks "+strings.Join(h.versions, ", "), http.StatusBadRequest)
	return true
}

// stream serves a GET, which opens a session's event stream, or a DELETE,
// which ends a session, once it names a live one.
func (h *HTTP) stream(next http.Handler, w http.ResponseWriter, r *http.Request, s *session) {
	get := r.Method == http.MethodGet
	if get && r.Header.Get(server.HeaderKeySessionID) == "" {
		// The spec's answer to a GET the server opens no stream for:
		// clients that open one before initialize (the AI SDK) take 405
		// as "no stream here" and go on, but fail on a 400.
		w.Header().Set("Allow", "POST")
		http.Error(w, noStreamWithoutSession, http.StatusMethodNotAllowed)
		return
	}
	if h.refuseUnknownSession(w, r) {
		return
	}
	if get && !serve.AcceptsEventStream(serve.AcceptOf(r.Header)) {
		// Held open, the stream would hang a client that asked for JSON
		// and waits for a body that never ends.
		http.Error(w, "Not Acceptable: a GET opens the session's event stream (text/event-stream); send it in Accept, or POST a message", http.StatusNotAcceptable)
		return
	}
	if get {
		if s != nil {
			s.streams.Add(1) // a session listening is not idle
			defer s.streams.Add(-1)
			s.streamed.fire()
			w = h.resumeAnew(w, r, s)
		}
		hw, stop := h.beating(w)
		defer stop()
		w = hw
	}
	next.ServeHTTP(requestWriter{w}, r)
}

// post serves a message posted: the gateway answers it at the door when it
// can (door), refuses it when it must (refuseMessage), and else passes it
// on to the server with its body as it came.
func (h *HTTP) post(next http.Handler, w http.ResponseWriter, r *http.Request, s *session, fast bool) {
	if !serve.Answerable(serve.AcceptOf(r.Header)) {
		// Answered as an event stream all the same, which a client that
		// asked for neither cannot read.
		http.Error(w, "Not Acceptable: a POST is answered in JSON (application/json) or as an event stream (text/event-stream); send both in Accept", http.StatusNotAcceptable)
		return
	}
	body, err := h.body(w, r)
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		serve.Refuse(w, http.StatusRequestEntityTooLarge, serve.TooLargeRefusal)
		return
	}
	var m serve.Message
	if err == nil {
		if h.door(w, r, s, fast, body) {
			return
		}
		m = serve.ReadMessage(body)
	}
	if h.refuseMessage(w, r, s, m, body) {
		return
	}
	if s != nil {
		if err == nil {
			var done func()
			w, r, done = h.track(w, r, s, m, body)
			defer done()
		}
		h.g.toServer(s, body)
		s.seen.Store(time.Now().UnixNano())
	}
	// The server reads the body again, and meets the same error.
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), serve.ErrReader{Err: err}))
	next.ServeHTTP(requestWriter{w}, r)
}

// body reads a request's body within bodyTimeout. The deadline is lifted
// once it is in, so that what follows (an answer streamed for minutes, the
// server's watch for the client leaving) is not cut by it.
func (h *HTTP) body(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(h.bodyTimeout))
	body, err := serve.ReadBody(r)
	if err == nil { // else the connection is done for: net/http would read out the rest
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, err
}

// door answers body, read whole, when the gateway answers it itself: a
// frame refused before either path sees it, a call that waited for its
// pinned server and was cancelled, a call or listing on the fast path, or
// a session's prompts and resources. It reports whether it answered.
func (h *HTTP) door(w http.ResponseWriter, r *http.Request, s *session, fast bool, body []byte) bool {
	switch {
	case h.refuseFrame(w, body):
	case s == nil:
		return false
	case h.waitStarting(w, r, s, body):
		// cancelled while it waited
	case fast && h.fastAnswer(w, r, s, body):
	case h.offers(w, r, s, body):
		// Answered even while the server holds notifications for the
		// session: it has no prompts or resources to answer with.
	default:
		return false
	}
	return true
}

// refuseMessage answers m, on its way to the server, when the server must
// not see it, and reports whether it did: an answer to a request of the
// gateway's, a message refused or dropped, a session the gateway cannot
// open, a message that needs a session and has none, and a call of what
// the session does not have.
func (h *HTTP) refuseMessage(w http.ResponseWriter, r *http.Request, s *session, m serve.Message, body []byte) bool {
	if s != nil && s.asked.answer(m, h.g.log.Debug) {
		w.WriteHeader(http.StatusAccepted) // an answer to a request of the gateway's
		return true
	}
	switch msg, drop := m.Refusal(); {
	case msg != nil:
		serve.Refuse(w, http.StatusBadRequest, msg)
		return true
	case drop:
		w.WriteHeader(http.StatusAccepted) // as for any response posted
		return true
	}
	return h.refuseForSession(w, r, s, m, body)
}

// refuseForSession answers m when the session it opens, names or lacks
// rules it out, or its call names what the session does not have, and
// reports whether it did.
func (h *HTTP) refuseForSession(w http.ResponseWriter, r *http.Request, s *session, m serve.Message, body []byte) bool {
	named := r.Header.Get(server.HeaderKeySessionID) != ""
	initialize := string(m.Method) == `"initialize"`
	switch {
	case initialize && h.refuseNewSession(w):
		// Whatever else it carries: mcp-go's server opens a session for
		// any initialize, one naming a session id or holding the
		// stateless protocol's _meta key too, and those went past
		// max_sessions and the drain.
	case !named && h.refuseSessionless(w, r, m, body):
	case s == nil && m.Object && named && !initialize && h.refuseUnknownSession(w, r):
		// an initialize opens a session whatever id it names, as before
	default:
		msg := h.g.paramsRefusal(s, body)
		if msg == nil {
			return false
		}
		serve.Refuse(w, http.StatusOK, msg) // an answer, as the server's would be
	}
	return true
}

// track readies a message of session s for the server: a
// notifications/cancelled stops the fast call it names on its way (the
// server hears it too, and answers it), and a request is tracked so that
// the client may cancel it and a shutdown waits for its answer. done ends
// the tracking.
func (h *HTTP) track(w http.ResponseWriter, r *http.Request, s *session, m serve.Message, body []byte) (http.ResponseWriter, *http.Request, func()) {
	s.fast.Cancel(body)
	w, r, untrack := serve.TrackServerCall(&s.fast, w, r, m, h.heartbeat)
	if !m.Request() {
		return w, r, untrack
	}
	h.answering.Add(1)
	return w, r, func() {
		h.answering.Add(-1)
		untrack()
	}
}

// noSessionID answers a request that needs a session and names none.
const noSessionID = "Bad Request: Mcp-Session-Id header required: open a session with an initialize request (POST) first"

// noStreamWithoutSession answers a GET that names no session: the event
// stream a GET opens is a session's.
const noStreamWithoutSession = "Method Not Allowed: a GET opens a session's event stream, named in Mcp-Session-Id: open a session with an initialize request (POST) first"

// refuseFrame answers body, a message posted, with the error that
// refuses it before either path sees it (serve.FrameRefusal), if one does, and
// reports whether it did.
func (h *HTTP) refuseFrame(w http.ResponseWriter, body []byte) bool {
	msg := serve.FrameRefusal(body)
	if msg != nil {
		serve.Refuse(w, http.StatusBadRequest, msg)
	}
	return msg != nil
}

// refuseSessionless answers m, posted with no session id, unless it opens
// a session the gateway can take, and reports whether it did: a body that
// is no JSON object gets a parse error, a new
// session while the gateway drains or is at max_sessions gets 503, and a
// message other than initialize gets 400, as the spec asks (mcp-go's
// server answered 404 "Invalid session ID", which a client takes for a
// session that has ended). A message of the stateless protocol
// (2026-07-28), which the gateway does not offer, goes on to the server,
// which tells its client so.
func (h *HTTP) refuseSessionless(w http.ResponseWriter, r *http.Request, m serve.Message, body []byte) bool {
	switch {
	case mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || bytes.Contains(body, []byte(mcp.MetaKeyProtocolVersion)):
		return false
	case !m.Object:
		// Said first: no session would make it a message.
		serve.Refuse(w, http.StatusBadRequest, serve.NotJSONRefusal)
	case string(m.Method) != `"initialize"`:
		http.Error(w, noSessionID, http.StatusBadRequest)
	default:
		return false
	}
	return true
}

// refuseNewSession answers an initialize with 503 while the gateway
// drains or is at max_sessions, and reports whether it did.
func (h *HTTP) refuseNewSession(w http.ResponseWriter) bool {
	switch {
	case h.g.draining.Load():
		http.Error(w, "Service Unavailable: the gateway is shutting down; connect to another or try again later", http.StatusServiceUnavailable)
	case h.g.open.Load() >= h.maxSessions:
		w.Header().Set("Retry-After", "30")
		http.Error(w, fmt.Sprintf("Service Unavailable: the gateway is at its max_sessions (%d open); try again once one has ended", h.maxSessions), http.StatusServiceUnavailable)
	default:
		return false
	}
	return true
}

// refuseUnknownSession answers a request that names no live session, and
// reports whether it did. mcp-go's server would open a session for a GET
// with no id or an id it never issued, a session that counts against
// max_sessions and stays until swept, and answers a DELETE of any id with
// 200.
func (h *HTTP) refuseUnknownSession(w http.ResponseWriter, r *http.Request) bool {
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" {
		http.Error(w, noSessionID, http.StatusBadRequest)
		return true
	}
	switch terminated, err := h.ids.Validate(id); {
	case err != nil:
		http.Error(w, unknownSession, http.StatusNotFound)
	case terminated:
		http.Error(w, endedSession, http.StatusNotFound)
	default:
		return false
	}
	return true
}

// unknownSession and endedSession answer a request naming a session the
// gateway does not have open: a client that opens another knows it must,
// but not that what its session had attached is gone too (mcp-go said
// "Invalid session ID").
const (
	unknownSession = "Not Found: Invalid session ID: no session of this gateway has it (the gateway restarted, or the session ended long ago); initialize a new session, and attach again what this one had: attachments end with their session"
	endedSession   = "Not Found: Session terminated: its client ended it, it was idle past session_idle_timeout, or the gateway shut it down; initialize a new session, and attach again what this one had: attachments end with their session"
)

// fastAnswer answers body, a request of session s, on the fast path, and
// reports whether it did.
func (h *HTTP) fastAnswer(w http.ResponseWriter, r *http.Request, s *session, body []byte) bool {
	if c, ok := h.g.fastCall(s, body); ok {
		out := &serve.ResponseEvents{W: w}
		accept := serve.AcceptOf(r.Header)
		stream := serve.NewProgressStream(&c.Progress, accept, out, h.g.log, h.heartbeat)
		if stream == nil && serve.MayGoQuiet(accept, h.heartbeat) {
			stream = serve.QuietStream(out, h.g.log, h.heartbeat)
		}
		ctx, cancel := context.WithCancelCause(r.Context())
		quiet := stream.AfterQuiet()
		f := h.g.serveFast(ctx, cancel, s, c, stream, r.Header)
		if quiet != nil {
			quiet.Stop()
		}
		cancelled := serve.CancelledByClient(ctx)
		cancel(nil)
		if cancelled {
			_ = serve.EndUnanswered(stream, out)
			return true
		}
		if streamed, _ := stream.Finish(f); streamed {
			return true // answered as an event stream
		}
		h.answer(w, r, f)
		return true
	}
	if f, ok := h.g.fastList(s, body); ok {
		h.answer(w, r, f)
		return true
	}
	return false
}

// answer writes f as the JSON answer to r, and keeps serving the
// connection in place when it may (keepalive.go).
func (h *HTTP) answer(w http.ResponseWriter, r *http.Request, f serve.Frame) {
	if h.keep(w, r, f) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(f.Size()))
	_ = f.WriteBody(w)
}

// fastSession returns the session of a request the fast path may answer
// (fastTarget). For any other request of a session it winds the session's
// idle clock, as the server, which the request goes to, will.
func (h *HTTP) fastSession(r *http.Request) (*session, bool) {
	s, ok := h.fastTarget(r)
	if s != nil {
		h.busyClock(r, s)
		if !ok {
			s.seen.Store(time.Now().UnixNano())
		}
	}
	return s, ok
}

// fastTarget returns r's session, and whether the fast path may answer r:
// a POST of JSON, in a protocol version the server offers, for a known
// session for which the server holds no notification to send with its
// next answer. The server's idle clock of the session is wound first, if
// due (idleclock.go).
func (h *HTTP) fastTarget(r *http.Request) (*session, bool) {
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" {
		return nil, false
	}
	s := h.g.lookup(id)
	if s == nil || !s.perSession {
		return nil, false
	}
	s.heard.Store(time.Now().UnixNano())
	if h.g.opts.NoFastPath || r.Method != http.MethodPost || !h.fastEligible(r) || s.noticesQueued() {
		return s, false
	}
	h.windIdleClock(r, s)
	return s, true
}

// beating returns w, a GET's, with heartbeats on its event stream, and
// the func that ends them, to be called before the request's handler
// returns.
func (h *HTTP) beating(w http.ResponseWriter) (http.ResponseWriter, func()) {
	if h.heartbeat < 0 {
		return w, func() {}
	}
	hb := serve.NewHeartbeatWriter(w, h.heartbeat)
	return hb, hb.Stop
}

// fastEligible checks what the server would check of a POST before a call:
// a JSON body and a protocol version it offers.
func (h *HTTP) fastEligible(r *http.Request) bool {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	if !strings.EqualFold(strings.TrimSpace(ct), "application/json") {
		return false
	}
	v := r.Header.Get(server.HeaderKeyProtocolVersion)
	return v == "" || slices.Contains(h.versions, v)
}

// healthz says the gateway is up, or draining (503): a load balancer's
// readiness probe then sends no new clients to a gateway shutting down.
func (h *HTTP) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	status := "ok"
	if h.g.draining.Load() {
		status = "draining"
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status":   status,
		"version":  h.g.opts.Version,
		"sessions": len(h.g.manager.Sessions()),
		// Still ok at max_sessions, for the sessions open go on: a
		// balancer that places new sessions can read this.
		"accepting_sessions": !h.g.draining.Load() && h.g.open.Load() < h.maxSessions,
		"goroutines":         runtime.NumGoroutine(),
		"uptime_s":           int64(time.Since(h.g.started).Seconds()),
	})
}
