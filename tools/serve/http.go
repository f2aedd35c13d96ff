package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/config"
)

// HTTPSession is a session of the tool surface as the HTTP handler holds
// it: the handler reads what the transport keeps of it (Transport) and
// hands it back to the surface for the rest. The tools package's session
// is one through the Session it embeds.
type HTTPSession interface {
	Transport() *Session
}

// Transport is s itself, so that a session embedding it is an
// HTTPSession.
func (s *Session) Transport() *Session { return s }

// HTTPSurface is what the HTTP handler asks of the tool surface. C is a
// tools/call the fast path takes, as the surface reads it: a type
// parameter, not an interface, so that it goes from FastCall to ServeFast
// by value and the fast path allocates nothing for it.
type HTTPSurface[C any] interface {
	// Sessions are the sessions, as their clocks see them.
	Sessions
	// Session returns the session id names when the handler serves it (a
	// session of streamable HTTP); nil for none.
	Session(id string) HTTPSession
	// FastCall reads body, a request of s, and returns it when it is a
	// call the fast path takes. events tells that its answer may be an
	// event stream: without, the call's progress token is dropped, and
	// the upstream asked for no progress no answer could carry. progress
	// tells that the call asks for progress.
	FastCall(s HTTPSession, body []byte, events bool) (c C, progress, ok bool)
	// ServeFast runs c, posted with header, and returns its answer. A
	// notifications/cancelled for the call calls cancel with ByClient,
	// which must end ctx with that cause; the end of its session calls it
	// with nil. The upstream's progress goes to progress, if the call
	// asks for it.
	ServeFast(ctx context.Context, cancel context.CancelCauseFunc, s HTTPSession, c C, progress *ProgressStream, header http.Header) Frame
	// FastList answers body when it is a listing of s's tools the fast
	// path takes.
	FastList(s HTTPSession, body []byte) (Frame, bool)
	// AwaitStart holds body, a request of s, while it is a call of a
	// pinned server still starting, and reports whether the client
	// cancelled it meanwhile: it is answered then.
	AwaitStart(w http.ResponseWriter, r *http.Request, s HTTPSession, body []byte) bool
	// Offers answers body when it is a request for s's prompts or
	// resources, and reports whether it did.
	Offers(w http.ResponseWriter, r *http.Request, s HTTPSession, body []byte) bool
	// Answers takes m when it answers a request the gateway sent s's
	// client, and reports whether it did.
	Answers(s HTTPSession, m Message) bool
	// ParamsRefusal is the error answering body, a request of s (nil
	// for none) on its way to the MCP server, when the surface refuses
	// its params; nil for none.
	ParamsRefusal(s HTTPSession, body []byte) []byte
	// ToServer readies s for body, on its way to the MCP server.
	ToServer(s HTTPSession, body []byte)
	// Streamed tells the surface that s's client opened an event stream.
	Streamed(s HTTPSession)
	// Load is how many sessions are open, and whether new ones are
	// refused.
	Load() Load
	// Shutdown ends every session, and waits for their ends.
	Shutdown()
	// Mount adds to mux the surface's own pages; guard puts a handler
	// behind the bearer token and the Origin checks.
	Mount(mux *http.ServeMux, guard func(http.Handler) http.Handler)
}

// Load is what the surface tells of its sessions, for new sessions and
// /healthz.
type Load struct {
	Draining bool  // the gateway is shutting down: no new sessions
	Open     int64 // the sessions open, against MaxSessions
	Attached int   // the sessions the attachments' manager holds
}

// HTTPServer is what the handler serves, besides its options.
type HTTPServer struct {
	// MCP is the MCP server the handler passes on to what it does not
	// answer itself.
	MCP *server.MCPServer
	Log *slog.Logger
	// Version is the gateway's, for /healthz; Started is when it started.
	Version string
	Started time.Time
	// NoFastPath sends every message on to the MCP server (the fast
	// path switch).
	NoFastPath bool
	// Context readies the context of each request the MCP server serves.
	Context server.HTTPContextFunc
}

// HTTP serves MCP over streamable HTTP at /mcp, with /healthz and the
// surface's own pages.
type HTTP[C any] struct {
	surface       HTTPSurface[C]
	srv           HTTPServer
	streamable    *server.StreamableHTTPServer
	mux           *http.ServeMux
	access        Access // the bearer token, Origin and Host checks
	clocks        Clocks // the idle clock and the reaper
	headerTimeout time.Duration
	bodyTimeout   time.Duration
	connTimeout   time.Duration // IdleConnTimeout
	heartbeat     time.Duration // StreamHeartbeat
	maxSessions   int64
	versions      []string // the protocol versions offered
	ids           *SessionIDs
	events        *EventStore
	kept          keptConns[C]
	answering     atomic.Int64 // requests the server is answering (Shutdown)
}

// httpSession is the session of a request: the surface's (ref) and the
// transport's part of it. The zero value is none.
type httpSession struct {
	ref HTTPSession
	*Session
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
	// before a comment is written on it (heartbeat.go); zero means
	// DefaultStreamHeartbeat, and a negative value writes none.
	StreamHeartbeat time.Duration
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

// withDefaults is opt with each zero replaced by its default.
func (opt HTTPOptions) withDefaults() HTTPOptions {
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
		opt.StreamHeartbeat = DefaultStreamHeartbeat
	}
	return opt
}

// NewHTTP builds the HTTP handler of surface, served by srv.
//
// Sessions: mcp-go's newest protocol (2026-07-28) is stateless, with no
// session to hang attachments on. The gateway therefore offers only the
// session-oriented versions (2025-11-25 and older); a client on the newest
// version learns this from server/discover and negotiates down, keeping its
// attachments for the life of its Mcp-Session-Id.
func NewHTTP[C any](surface HTTPSurface[C], srv HTTPServer, opt HTTPOptions) *HTTP[C] {
	opt = opt.withDefaults()
	h := &HTTP[C]{surface: surface, srv: srv, access: Access{Token: opt.AuthToken}, mux: http.NewServeMux(), headerTimeout: opt.ReadHeaderTimeout,
		connTimeout: opt.IdleConnTimeout, bodyTimeout: opt.BodyTimeout, maxSessions: int64(opt.MaxSessions),
		heartbeat: opt.StreamHeartbeat}
	h.kept.idle = opt.IdleConnTimeout
	h.versions = SessionVersions()
	h.ids = &SessionIDs{}
	h.events = NewEventStore(256, 16<<20, 256<<20, 2*time.Minute)
	h.streamable = server.NewStreamableHTTPServer(srv.MCP,
		server.WithSessionIdManager(h.ids), // not WithStateful: it keeps every ended id
		server.WithStreamableHTTPProtocolVersions(h.versions...),
		server.WithSessionIdleTTL(opt.IdleTTL),
		server.WithEventStore(h.events),
		server.WithStreamableHTTPLogger(srv.Log),
		server.WithHTTPContextFunc(srv.Context),
	)
	h.clocks = Clocks{Server: h.streamable, IdleTTL: opt.IdleTTL, ReapAfter: opt.ReapAfter, Log: srv.Log, Sessions: surface}
	h.mux.Handle("/mcp", h.access.Guard(h.fast(Released(h.streamable))))
	h.mux.HandleFunc("GET /healthz", h.healthz)
	surface.Mount(h.mux, h.access.Guard)
	return h
}

// SessionIDs are the HTTP sessions' ids, live and ended.
func (h *HTTP[C]) SessionIDs() *SessionIDs { return h.ids }

// Events is the store of events for resumed streams.
func (h *HTTP[C]) Events() *EventStore { return h.events }

// KeptServed counts the calls and listings answered on the connections
// the handler serves itself.
func (h *HTTP[C]) KeptServed() int64 { return h.kept.served.Load() }

// KeptConns are the connections the handler serves itself, at the moment.
func (h *HTTP[C]) KeptConns() []net.Conn {
	h.kept.mu.Lock()
	defer h.kept.mu.Unlock()
	conns := make([]net.Conn, 0, len(h.kept.conns))
	for c := range h.kept.conns {
		conns = append(conns, c.conn)
	}
	return conns
}

func (h *HTTP[C]) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Shutdown ends every HTTP session (and so its attachments) and releases
// open event streams, so that http.Server.Shutdown can finish. The
// connections the gateway serves itself are closed once idle; Shutdown
// waits for them until ctx ends.
func (h *HTTP[C]) Shutdown(ctx context.Context) error {
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
		h.surface.Shutdown()
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

// fast answers a plain call of a proxied tool of a known session on the
// fast path (HTTPSurface.FastCall), then serves the calls that follow on
// its connection itself (keepalive.go), and passes every other request to
// next, the MCP server, with its body as it came. A
// notifications/cancelled among them stops the fast call it names on its
// way, or cancels the answer of a request the server runs (ServerCall).
// A batch or a frame whose members could be read two ways (FrameRefusal),
// a body over the cap, or a request whose id is refused (idRefusal) is
// answered with an error (door.go).
//
// The server keeps each session's idle clock, and only it can: a session
// that the server has not seen for a quarter of the idle TTL takes the
// server's path once, which winds that clock.
func (h *HTTP[C]) fast(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if RefuseVersion(w, r, h.versions) {
			return
		}
		s, ok := h.fastSession(r)
		if s.Session != nil {
			defer h.clocks.Serving(r, s.Session)()
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

// stream serves a GET, which opens a session's event stream, or a DELETE,
// which ends a session, once it names a live one.
func (h *HTTP[C]) stream(next http.Handler, w http.ResponseWriter, r *http.Request, s httpSession) {
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
	if get && !AcceptsEventStream(AcceptOf(r.Header)) {
		// Held open, the stream would hang a client that asked for JSON
		// and waits for a body that never ends.
		http.Error(w, "Not Acceptable: a GET opens the session's event stream (text/event-stream); send it in Accept, or POST a message", http.StatusNotAcceptable)
		return
	}
	if get {
		if s.Session != nil {
			s.Streams.Add(1) // a session listening is not idle
			defer s.Streams.Add(-1)
			h.surface.Streamed(s.ref)
			w = h.resumeAnew(w, r, s.Session)
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
func (h *HTTP[C]) post(next http.Handler, w http.ResponseWriter, r *http.Request, s httpSession, fast bool) {
	if !Answerable(AcceptOf(r.Header)) {
		// Answered as an event stream all the same, which a client that
		// asked for neither cannot read.
		http.Error(w, "Not Acceptable: a POST is answered in JSON (application/json) or as an event stream (text/event-stream); send both in Accept", http.StatusNotAcceptable)
		return
	}
	body, err := h.body(w, r)
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		Refuse(w, http.StatusRequestEntityTooLarge, TooLargeRefusal)
		return
	}
	var m Message
	if err == nil {
		if h.door(w, r, s, fast, body) {
			return
		}
		m = ReadMessage(body)
	}
	if h.refuseMessage(w, r, s, m, body) {
		return
	}
	if s.Session != nil {
		if err == nil {
			var done func()
			w, r, done = h.track(w, r, s, m, body)
			defer done()
		}
		h.surface.ToServer(s.ref, body)
		s.Seen.Store(time.Now().UnixNano())
	}
	// The server reads the body again, and meets the same error.
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), ErrReader{Err: err}))
	next.ServeHTTP(requestWriter{w}, r)
}

// body reads a request's body within bodyTimeout. The deadline is lifted
// once it is in, so that what follows (an answer streamed for minutes, the
// server's watch for the client leaving) is not cut by it.
func (h *HTTP[C]) body(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(h.bodyTimeout))
	body, err := ReadBody(r)
	if err == nil { // else the connection is done for: net/http would read out the rest
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, err
}

// door answers body, read whole, when the gateway answers it itself: a
// frame refused before either path sees it, a call that waited for its
// pinned server and was cancelled, a call or listing on the fast path, or
// a session's prompts and resources. It reports whether it answered.
func (h *HTTP[C]) door(w http.ResponseWriter, r *http.Request, s httpSession, fast bool, body []byte) bool {
	switch {
	case h.refuseFrame(w, body):
	case s.Session == nil:
		return false
	case h.surface.AwaitStart(w, r, s.ref, body):
		// cancelled while it waited
	case fast && h.fastAnswer(w, r, s, body):
	case FastEligible(r, h.versions) && h.surface.Offers(w, r, s.ref, body):
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
func (h *HTTP[C]) refuseMessage(w http.ResponseWriter, r *http.Request, s httpSession, m Message, body []byte) bool {
	if s.Session != nil && h.surface.Answers(s.ref, m) {
		w.WriteHeader(http.StatusAccepted) // an answer to a request of the gateway's
		return true
	}
	switch msg, drop := m.Refusal(); {
	case msg != nil:
		Refuse(w, http.StatusBadRequest, msg)
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
func (h *HTTP[C]) refuseForSession(w http.ResponseWriter, r *http.Request, s httpSession, m Message, body []byte) bool {
	named := r.Header.Get(server.HeaderKeySessionID) != ""
	initialize := string(m.Method) == `"initialize"`
	switch {
	case initialize && h.refuseNewSession(w):
		// Whatever else it carries: mcp-go's server opens a session for
		// any initialize, one naming a session id or holding the
		// stateless protocol's _meta key too, and those went past
		// max_sessions and the drain.
	case !named && h.refuseSessionless(w, r, m, body):
	case s.Session == nil && m.Object && named && !initialize && h.refuseUnknownSession(w, r):
		// an initialize opens a session whatever id it names, as before
	default:
		msg := h.surface.ParamsRefusal(s.ref, body)
		if msg == nil {
			return false
		}
		Refuse(w, http.StatusOK, msg) // an answer, as the server's would be
	}
	return true
}

// track readies a message of session s for the server: a
// notifications/cancelled stops the fast call it names on its way (the
// server hears it too, and answers it), and a request is tracked so that
// the client may cancel it and a shutdown waits for its answer. done ends
// the tracking.
func (h *HTTP[C]) track(w http.ResponseWriter, r *http.Request, s httpSession, m Message, body []byte) (http.ResponseWriter, *http.Request, func()) {
	s.Fast.Cancel(body)
	w, r, untrack := TrackServerCall(&s.Fast, w, r, m, h.heartbeat)
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
// refuses it before either path sees it (FrameRefusal), if one does, and
// reports whether it did.
func (h *HTTP[C]) refuseFrame(w http.ResponseWriter, body []byte) bool {
	msg := FrameRefusal(body)
	if msg != nil {
		Refuse(w, http.StatusBadRequest, msg)
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
func (h *HTTP[C]) refuseSessionless(w http.ResponseWriter, r *http.Request, m Message, body []byte) bool {
	switch {
	case mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || bytes.Contains(body, []byte(mcp.MetaKeyProtocolVersion)):
		return false
	case !m.Object:
		// Said first: no session would make it a message.
		Refuse(w, http.StatusBadRequest, NotJSONRefusal)
	case string(m.Method) != `"initialize"`:
		http.Error(w, noSessionID, http.StatusBadRequest)
	default:
		return false
	}
	return true
}

// refuseNewSession answers an initialize with 503 while the gateway
// drains or is at max_sessions, and reports whether it did.
func (h *HTTP[C]) refuseNewSession(w http.ResponseWriter) bool {
	switch load := h.surface.Load(); {
	case load.Draining:
		http.Error(w, "Service Unavailable: the gateway is shutting down; connect to another or try again later", http.StatusServiceUnavailable)
	case load.Open >= h.maxSessions:
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
func (h *HTTP[C]) refuseUnknownSession(w http.ResponseWriter, r *http.Request) bool {
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" {
		http.Error(w, noSessionID, http.StatusBadRequest)
		return true
	}
	switch terminated, err := h.ids.Validate(id); {
	case err != nil:
		http.Error(w, UnknownSession, http.StatusNotFound)
	case terminated:
		http.Error(w, EndedSession, http.StatusNotFound)
	default:
		return false
	}
	return true
}

// UnknownSession and EndedSession answer a request naming a session the
// gateway does not have open: a client that opens another knows it must,
// but not that what its session had attached is gone too (mcp-go said
// "Invalid session ID").
const (
	UnknownSession = "Not Found: Invalid session ID: no session of this gateway has it (the gateway restarted, or the session ended long ago); initialize a new session, and attach again what this one had: attachments end with their session"
	EndedSession   = "Not Found: Session terminated: its client ended it, it was idle past session_idle_timeout, or the gateway shut it down; initialize a new session, and attach again what this one had: attachments end with their session"
)

// fastAnswer answers body, a request of session s, on the fast path, and
// reports whether it did.
func (h *HTTP[C]) fastAnswer(w http.ResponseWriter, r *http.Request, s httpSession, body []byte) bool {
	accept := AcceptOf(r.Header)
	if c, progress, ok := h.surface.FastCall(s.ref, body, AcceptsEventStream(accept)); ok {
		out := &ResponseEvents{W: w}
		stream := NewProgressStream(progress, out, h.srv.Log, h.heartbeat)
		if stream == nil && MayGoQuiet(accept, h.heartbeat) {
			stream = QuietStream(out, h.srv.Log, h.heartbeat)
		}
		ctx, cancel := context.WithCancelCause(r.Context())
		quiet := stream.AfterQuiet()
		f := h.surface.ServeFast(ctx, cancel, s.ref, c, stream, r.Header)
		if quiet != nil {
			quiet.Stop()
		}
		cancelled := CancelledByClient(ctx)
		cancel(nil)
		if cancelled {
			_ = EndUnanswered(stream, out)
			return true
		}
		if streamed, _ := stream.Finish(f); streamed {
			return true // answered as an event stream
		}
		h.answer(w, r, f)
		return true
	}
	if f, ok := h.surface.FastList(s.ref, body); ok {
		h.answer(w, r, f)
		return true
	}
	return false
}

// answer writes f as the JSON answer to r, and keeps serving the
// connection in place when it may (keepalive.go).
func (h *HTTP[C]) answer(w http.ResponseWriter, r *http.Request, f Frame) {
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
func (h *HTTP[C]) fastSession(r *http.Request) (httpSession, bool) {
	s, ok := h.fastTarget(r)
	if s.Session != nil {
		h.clocks.Busy(r, s.Session)
		if !ok {
			s.Seen.Store(time.Now().UnixNano())
		}
	}
	return s, ok
}

// fastTarget returns r's session, and whether the fast path may answer r:
// a POST of JSON, in a protocol version the server offers, for a known
// session for which the server holds no notification to send with its
// next answer. The server's idle clock of the session is wound first, if
// due (idleclock.go).
func (h *HTTP[C]) fastTarget(r *http.Request) (httpSession, bool) {
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" {
		return httpSession{}, false
	}
	ref := h.surface.Session(id)
	if ref == nil {
		return httpSession{}, false
	}
	s := httpSession{ref, ref.Transport()}
	s.Heard.Store(time.Now().UnixNano())
	if h.srv.NoFastPath || r.Method != http.MethodPost || !FastEligible(r, h.versions) || s.NoticesQueued() {
		return s, false
	}
	h.clocks.Wind(r, s.Session)
	return s, true
}

// beating returns w, a GET's, with heartbeats on its event stream, and
// the func that ends them, to be called before the request's handler
// returns.
func (h *HTTP[C]) beating(w http.ResponseWriter) (http.ResponseWriter, func()) {
	if h.heartbeat < 0 {
		return w, func() {}
	}
	hb := NewHeartbeatWriter(w, h.heartbeat)
	return hb, hb.Stop
}

// healthz says the gateway is up, or draining (503): a load balancer's
// readiness probe then sends no new clients to a gateway shutting down.
func (h *HTTP[C]) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	status := "ok"
	load := h.surface.Load()
	if load.Draining {
		status = "draining"
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status":   status,
		"version":  h.srv.Version,
		"sessions": load.Attached,
		// Still ok at max_sessions, for the sessions open go on: a
		// balancer that places new sessions can read this.
		"accepting_sessions": !load.Draining && load.Open < h.maxSessions,
		"goroutines":         runtime.NumGoroutine(),
		"uptime_s":           int64(time.Since(h.srv.Started).Seconds()),
	})
}
