package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// Kept-alive HTTP/1.1 connections served in place.
//
// net/http's server costs a call about 20 µs of CPU and as much latency
// (BENCHMARKS.md): for each request it starts a goroutine that watches
// for the client going away, and sets and clears read deadlines to stop
// it. Once a connection has carried a call on the fast path, the gateway
// takes it over (Hijack) and serves the proxied calls that follow on it in
// a goroutine of its own, reading each request with net/http's own parser and
// checking what net/http's server and the gateway's guard check. Any other
// request on it (another method or path, a request a check refuses, one
// that does not parse) is handed back, with the bytes read of it, to a
// net/http server of the gateway's own: every answer but a proxied call's
// stays net/http's.

// maxHead bounds a request's head, as net/http's server bounds it
// (DefaultMaxHeaderBytes and its 4 KiB of slack).
const maxHead = http.DefaultMaxHeaderBytes + 4096

// WatchAfter is how long a call runs before its connection is watched for
// the client going away, which cancels the call. Watching costs about what
// net/http's server spends on each request; most calls end sooner.
const WatchAfter = 20 * time.Millisecond

// errHeadTooLarge ends the reading of a head over maxHead; net/http's
// server, handed the connection, answers it.
var errHeadTooLarge = errors.New("request head too large")

// keptConns are the connections the gateway serves itself.
type keptConns[C any] struct {
	mu      sync.Mutex
	conns   map[*keptConn[C]]struct{}
	closing atomic.Bool
	wg      sync.WaitGroup
	back    backServer[C]
	served  atomic.Int64 // calls and listings answered in place, for the tests
	// idle closes a connection idle that long; a sweep, a timer only
	// while connections are kept, looks every idle/2. Zero keeps them.
	idle     time.Duration
	sweeping atomic.Bool
}

// Connection states, for Shutdown: only an idle connection is closed at
// once.
const (
	connIdle int32 = iota
	connActive
	connClosed
)

// keep takes over r's connection after the fast call that answered r, and
// serves it until it ends. false: w was left alone, for the caller to
// write f.
func (h *HTTP[C]) keep(w http.ResponseWriter, r *http.Request, f Frame) bool {
	// A browser's connection stays net/http's: the gateway's own answers
	// carry no CORS headers (Access.Guard).
	if r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.Close || r.TLS != nil || r.Header.Get("Origin") != "" {
		return false
	}
	c := &keptConn[C]{h: h}
	c.state.Store(connActive)
	if !h.kept.add(c) {
		return false
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		h.kept.remove(c)
		return false
	}
	// What net/http read ahead of this request is the next one's start. A
	// connection handed back before comes with what it has not yet read
	// again: taken here, so that the client's connection is read directly
	// and not through one more layer at each hand-back.
	ahead, _ := brw.Reader.Peek(brw.Reader.Buffered())
	pending := bytes.Clone(ahead)
	if rc, ok := conn.(*replayConn); ok {
		pending = append(pending, rc.pending...)
		conn = rc.Conn
	}
	h.kept.mu.Lock()
	c.conn = conn // Shutdown may close it from now on
	h.kept.mu.Unlock()
	// The connection gets a goroutine of its own, so that net/http's
	// goroutine, and the request, response and buffers it holds, go.
	go c.run(brw.Reader, pending, f)
	return true
}

// run answers with f, then serves the connection until it ends.
func (c *keptConn[C]) run(br *bufio.Reader, pending []byte, f Frame) {
	c.start(br, pending)
	defer c.end()
	if !c.write(f) {
		return
	}
	for c.next() {
	}
}

func (k *keptConns[C]) add(c *keptConn[C]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closing.Load() {
		return false
	}
	if k.conns == nil {
		k.conns = map[*keptConn[C]]struct{}{}
	}
	k.conns[c] = struct{}{}
	k.wg.Add(1)
	k.armSweep()
	return true
}

// armSweep makes a sweep of the idle connections due, if none is.
func (k *keptConns[C]) armSweep() {
	if k.idle > 0 && k.sweeping.CompareAndSwap(false, true) {
		time.AfterFunc(k.idle/2, k.sweep)
	}
}

// sweep closes the connections idle longer than k.idle, and makes
// another sweep due while any are kept.
func (k *keptConns[C]) sweep() {
	k.sweeping.Store(false) // first: a connection kept meanwhile arms the next
	cutoff := time.Now().Add(-k.idle).UnixNano()
	k.mu.Lock()
	for c := range k.conns {
		// idleSince is set before the state: once idle is seen, it is
		// that idle spell's.
		if c.state.Load() == connIdle && c.idleSince.Load() < cutoff && c.state.CompareAndSwap(connIdle, connClosed) {
			_ = c.conn.Close()
		}
	}
	left := len(k.conns) > 0
	k.mu.Unlock()
	if left && !k.closing.Load() {
		k.armSweep()
	}
}

func (k *keptConns[C]) remove(c *keptConn[C]) {
	k.mu.Lock()
	delete(k.conns, c)
	k.mu.Unlock()
	k.wg.Done()
}

// shutdown closes the idle connections and, as each ends its call, the
// others; it waits for them until ctx ends, then closes those left. The
// server of the connections handed back is shut down on its own, once
// the sessions have ended and with them their event streams.
func (k *keptConns[C]) shutdown(ctx context.Context) {
	k.mu.Lock()
	k.closing.Store(true)
	for c := range k.conns {
		if c.state.CompareAndSwap(connIdle, connClosed) {
			_ = c.conn.Close()
		}
	}
	k.mu.Unlock()
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		k.mu.Lock()
		for c := range k.conns {
			if c.conn != nil {
				_ = c.conn.Close()
			}
		}
		k.mu.Unlock()
		<-done
	}
}

// keptConn is one connection the gateway serves itself.
type keptConn[C any] struct {
	h         *HTTP[C]
	conn      net.Conn
	in        keptReader
	br        *bufio.Reader
	state     atomic.Int32
	idleSince atomic.Int64    // unix nanoseconds; set before state goes idle
	ctx       context.Context // ended when the client goes away, or cancels the call (then made anew)
	cancel    context.CancelCauseFunc
	watch     watch[C]
	handed    bool // the connection went back to net/http
	events    keptEvents[C]
	writeBy   atomic.Int64 // the write deadline, unix nanoseconds (writing)
}

// writing readies the connection for a write to the client, pushing its
// write deadline on when it comes near: a client that has read nothing of
// the gateway's answers for IdleConnTimeout, its socket's buffers full,
// loses the connection instead of holding the goroutine that writes to it
// for good. The deadline moves at most once per half of that, not at
// every write.
func (c *keptConn[C]) writing() {
	idle := int64(c.h.kept.idle)
	if idle <= 0 {
		return
	}
	now := time.Now().UnixNano()
	if c.writeBy.Load()-now > idle/2 {
		return
	}
	c.writeBy.Store(now + idle)
	_ = c.conn.SetWriteDeadline(time.Unix(0, now+idle))
}

// start reads the connection through br, net/http's reader of it, which
// the connection keeps, reset on the gateway's own reader; pending is what
// was read of the connection and not yet parsed.
func (c *keptConn[C]) start(br *bufio.Reader, pending []byte) {
	c.in = keptReader{conn: c.conn, pending: pending, left: -1}
	br.Reset(&c.in)
	c.br = br
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	c.watch.c = c
	c.events.c = c
	c.watch.done = make(chan struct{}, 1)
	c.watch.timer = time.AfterFunc(time.Hour, c.watch.read)
	c.watch.timer.Stop()
}

func (c *keptConn[C]) end() {
	c.watch.timer.Stop()
	c.cancel(nil)
	if !c.handed {
		_ = c.conn.Close()
	}
	// mcp-go keeps the response writer of a request it answered as an
	// event stream for as long as the session lasts, and through it the
	// hijacked connection and its reader: that reader must not keep this.
	c.br.Reset(nil)
	c.h.kept.remove(c)
}

// next waits for the next request and serves it: false once the
// connection is done with, closed or handed back.
func (c *keptConn[C]) next() bool {
	if c.h.kept.closing.Load() {
		return false
	}
	c.idleSince.Store(time.Now().UnixNano())
	c.state.Store(connIdle)
	// Shutdown may have looked before the connection was idle.
	if c.h.kept.closing.Load() {
		return false
	}
	if _, err := c.br.Peek(1); err != nil {
		return false
	}
	if !c.state.CompareAndSwap(connIdle, connActive) {
		return false // Shutdown closed it
	}
	return c.serve()
}

// serve reads one request and answers it in place, or hands the
// connection back.
func (c *keptConn[C]) serve() bool {
	// Keep what is read from here on, should net/http have to read it.
	buffered, _ := c.br.Peek(c.br.Buffered())
	c.in.kept = append(c.in.kept[:0], buffered...)
	c.in.keep = true
	// A head already read whole needs no deadline; setting and clearing
	// one costs about a microsecond.
	deadline := !bytes.Contains(buffered, []byte("\r\n\r\n"))
	if deadline {
		_ = c.conn.SetReadDeadline(time.Now().Add(c.h.headerTimeout))
	}
	c.in.left = maxHead - int64(len(buffered))
	req, err := http.ReadRequest(c.br)
	c.in.left = -1
	if err != nil {
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			return false // as net/http's server does: closed, no answer
		}
		return c.handBack()
	}
	accept := AcceptOf(req.Header)
	s, ok := c.h.inPlace(req, accept, c.conn.LocalAddr())
	if !ok {
		if deadline {
			_ = c.conn.SetReadDeadline(time.Time{})
		}
		return c.handBack()
	}
	// A body not read with the head has bodyTimeout to come, as on
	// net/http's connections (fast); one that stalled held the
	// connection for good.
	if rest := req.ContentLength - int64(c.br.Buffered()); rest > 0 {
		deadline = true
		_ = c.conn.SetReadDeadline(time.Now().Add(c.h.bodyTimeout))
	} else if deadline {
		_ = c.conn.SetReadDeadline(time.Time{})
		deadline = false
	}
	body, err := ReadBody(req)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return false // closed, no answer
	}
	if deadline {
		_ = c.conn.SetReadDeadline(time.Time{})
	}
	if err != nil || FrameRefusal(body) != nil {
		return c.handBack() // refused by net/http's path, at the door (fast)
	}
	call, progress, ok := c.h.surface.FastCall(s.ref, body, AcceptsEventStream(accept))
	if !ok {
		f, ok := c.h.surface.FastList(s.ref, body)
		if !ok {
			return c.handBack()
		}
		c.taken()
		c.h.kept.served.Add(1)
		return c.write(f)
	}
	c.taken()
	stream := NewProgressStream(progress, &c.events, c.h.srv.Log, c.h.heartbeat)
	quiet := stream == nil && MayGoQuiet(accept, c.h.heartbeat)
	f, stream, gone, cancelled := c.call(s, call, stream, quiet, req.Header)
	if cancelled {
		c.h.kept.served.Add(1)
		return EndUnanswered(stream, &c.events) == nil
	}
	streamed, err := stream.Finish(f) // also when gone: its writer must stop
	if gone {
		return false
	}
	c.h.kept.served.Add(1)
	if streamed {
		return err == nil
	}
	return c.write(f)
}

// taken ends the keeping of what is read for net/http: the gateway
// answers the request itself.
func (c *keptConn[C]) taken() {
	c.in.keep = false
	if cap(c.in.kept) > 64<<10 {
		c.in.kept = nil // a large body's copy is not kept for the next
	}
}

// inPlace checks r, come to local with accept (its Accept), as net/http's
// server, the guard and the fast path would, and returns its session when
// the gateway may answer it itself.
func (h *HTTP[C]) inPlace(r *http.Request, accept string, local net.Addr) (httpSession, bool) {
	if r.Method != http.MethodPost || r.URL.Path != "/mcp" || r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.Close {
		return httpSession{}, false
	}
	if r.TransferEncoding != nil || r.ContentLength < 0 || r.ContentLength > jsonrpc.MaxMessage ||
		r.Header.Get("Expect") != "" || r.Header.Get("Upgrade") != "" {
		return httpSession{}, false
	}
	if !httpguts.ValidHostHeader(r.Host) || r.Host == "" {
		return httpSession{}, false
	}
	for k, vv := range r.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return httpSession{}, false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return httpSession{}, false
			}
		}
	}
	// A browser's request (it names its Origin) goes back, for net/http's
	// answer with the CORS headers it reads.
	if guard.Rebound(r.Host, local) || r.Header.Get("Origin") != "" || !h.access.Authorized(r) || !Answerable(accept) {
		return httpSession{}, false
	}
	// Whatever the fast path would not answer goes back, to wind the
	// session's idle clock there.
	return h.fastTarget(r)
}

// call runs the call, watching for the client going away if it runs
// long; gone tells that it went, cancelled that the client cancelled the
// call (notifications/cancelled), and goes on. Its answer's stream is
// stream, the call's progress, or, for a call that may go quiet (quiet),
// one made once it has been quiet for the heartbeat, which call returns.
func (c *keptConn[C]) call(s httpSession, call C, stream *ProgressStream, quiet bool, header http.Header) (f Frame, _ *ProgressStream, gone, cancelled bool) {
	// A byte already read ahead is the client's next request: it is
	// there, and the connection need not be watched; the beat is a
	// timer's then.
	watched := c.br.Buffered() == 0 && len(c.in.pending) == 0
	var beat *time.Timer
	switch {
	case watched:
		c.watch.arm(stream, quiet)
	case quiet:
		stream = c.quietStream()
		fallthrough
	default:
		beat = stream.AfterQuiet()
	}
	f = c.h.surface.ServeFast(c.ctx, c.cancel, s.ref, call, stream, header)
	if beat != nil {
		beat.Stop()
	}
	if watched && !c.watch.timer.Stop() {
		c.watch.stop()
		stream = c.watch.stream // one made at its beat, after stop's wait
		if c.watch.late != nil {
			c.watch.late.Stop()
		}
	}
	if c.ctx.Err() != nil && !c.watch.gone {
		cancelled = CancelledByClient(c.ctx)
		c.ctx, c.cancel = context.WithCancelCause(context.Background())
	}
	return f, stream, c.watch.gone, cancelled
}

// quietStream is the stream of the answer to a call of c's that went
// quiet (QuietStream).
func (c *keptConn[C]) quietStream() *ProgressStream {
	return QuietStream(&c.events, c.h.srv.Log, c.h.heartbeat)
}

// write writes f as the answer, with the head net/http's server gives
// the fast path's answer: in one write, or for a large result, one
// writev with the result from where it lies.
func (c *keptConn[C]) write(f Frame) bool {
	c.writing()
	bp := answerBufs.Get().(*[]byte)
	b := append((*bp)[:0], "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(f.Size()), 10)
	b = c.appendHeadEnd(b)
	var err error
	if len(f.Result) < jsonrpc.InPlace {
		b = f.AppendTo(b)
		_, err = c.conn.Write(b)
	} else {
		b = f.AppendHead(b)
		bufs := net.Buffers{b, f.Result, []byte("}")}
		_, err = bufs.WriteTo(c.conn)
	}
	if cap(b) <= 64<<10 {
		*bp = b[:0]
		answerBufs.Put(bp)
	}
	return err == nil
}

// appendHeadEnd appends the rest of an answer's head, as net/http's
// server ends it.
func (c *keptConn[C]) appendHeadEnd(b []byte) []byte {
	b = append(b, "\r\nDate: "...)
	b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
	if c.h.kept.closing.Load() {
		b = append(b, "\r\nConnection: close"...)
	}
	return append(b, "\r\n\r\n"...)
}

// keptEvents writes an answer as an event stream on a kept connection,
// in chunks, as net/http's server writes a body of no set length.
type keptEvents[C any] struct {
	c *keptConn[C]
}

func (k *keptEvents[C]) Begin() error {
	k.c.writing()
	b := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked")
	_, err := k.c.conn.Write(k.c.appendHeadEnd(b))
	return err
}

func (k *keptEvents[C]) WriteEvents(p []byte) error {
	k.c.writing()
	size := strconv.AppendInt(nil, int64(len(p)), 16)
	bufs := net.Buffers{append(size, "\r\n"...), p, []byte("\r\n")}
	_, err := bufs.WriteTo(k.c.conn)
	return err
}

func (k *keptEvents[C]) End() error {
	k.c.writing()
	_, err := k.c.conn.Write([]byte("0\r\n\r\n"))
	return err
}

// answerBufs lends the buffers answers are written from.
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1<<10); return &b }}

// handBack gives the connection to net/http's server, which reads the
// request again from its first byte.
func (c *keptConn[C]) handBack() bool {
	c.in.keep, c.in.left = false, -1
	c.handed = true
	_ = c.conn.SetWriteDeadline(time.Time{}) // net/http's server sets its own, or none
	c.h.kept.back.serve(c.h, &replayConn{Conn: c.conn, pending: append(c.in.kept, c.in.pending...)})
	return false
}

// keptReader reads a kept connection: first what net/http had read ahead,
// then the connection. While keep is set it keeps a copy of what it read;
// while left is not negative it reads at most that much more.
type keptReader struct {
	conn    net.Conn
	pending []byte
	kept    []byte
	keep    bool
	left    int64
}

func (r *keptReader) Read(p []byte) (n int, err error) {
	if r.left == 0 {
		return 0, errHeadTooLarge
	}
	if r.left > 0 && int64(len(p)) > r.left {
		p = p[:r.left]
	}
	if len(r.pending) > 0 {
		n = copy(p, r.pending)
		r.pending = r.pending[n:]
	} else {
		n, err = r.conn.Read(p)
	}
	if r.left > 0 {
		r.left -= int64(n)
	}
	if r.keep {
		r.kept = append(r.kept, p[:n]...)
	}
	return n, err
}

// watch reads the connection while a long call runs: an end of stream or
// an error is the client gone, which cancels the call; a byte is the start
// of its next request. Till then it also begins the call's answer as an
// event stream once the call has been quiet till beatAt.
type watch[C any] struct {
	c     *keptConn[C]
	timer *time.Timer
	done  chan struct{}
	b     [1]byte // the byte read, once it is c's pending
	gone  bool

	mu     sync.Mutex // the read deadline, set by read and by stop
	abort  bool
	beatAt time.Time // zero for never
	// stream is the answer's, whose beat is due at beatAt: the call's, or,
	// for a call that may go quiet, one made then (keptConn.quietStream).
	stream *ProgressStream
	late   *time.Timer // the beat's, once the watch has ended before it
}

// arm readies the watch for a call whose answer is stream (nil for none),
// or may become one once quiet.
func (w *watch[C]) arm(stream *ProgressStream, quiet bool) {
	w.mu.Lock()
	w.beatAt, w.stream, w.late = time.Time{}, stream, nil
	if quiet || stream != nil && stream.Beats() {
		w.beatAt = time.Now().Add(w.c.h.heartbeat)
	}
	w.mu.Unlock()
	w.timer.Reset(WatchAfter)
}

// read runs on the timer's goroutine.
func (w *watch[C]) read() {
	for {
		w.mu.Lock()
		if w.abort {
			w.mu.Unlock()
			break
		}
		_ = w.c.conn.SetReadDeadline(w.beatAt)
		w.mu.Unlock()
		n, err := w.c.conn.Read(w.b[:])
		if n == 1 {
			w.c.in.pending = w.b[:1]
			w.mu.Lock()
			if !w.beatAt.IsZero() {
				// The client's next request has begun: the watch ends, and
				// the beat still to come is a timer's.
				if w.stream == nil {
					w.stream = w.c.quietStream()
				}
				w.late = time.AfterFunc(time.Until(w.beatAt), w.stream.Beat)
			}
			w.mu.Unlock()
		}
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			w.mu.Lock()
			aborted := w.abort
			w.beatAt = time.Time{}
			if !aborted && w.stream == nil {
				w.stream = w.c.quietStream()
			}
			beat := w.stream
			w.mu.Unlock()
			if aborted {
				break
			}
			beat.Beat()
			continue
		}
		if err != nil {
			w.gone = true
			w.c.cancel(nil)
		}
		break
	}
	w.done <- struct{}{}
}

// stop ends a read in progress and waits for it.
func (w *watch[C]) stop() {
	w.mu.Lock()
	w.abort = true
	_ = w.c.conn.SetReadDeadline(time.Unix(1, 0))
	w.mu.Unlock()
	<-w.done
	_ = w.c.conn.SetReadDeadline(time.Time{})
	w.mu.Lock()
	w.abort = false
	w.mu.Unlock()
}

// replayConn is the client's connection, whose reads start with what was
// read of it already.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite lets net/http's server close its side first after an error
// answer, so that the client reads the answer before the connection goes.
func (c *replayConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// backServer is the net/http server of the connections handed back,
// started with the first of them.
type backServer[C any] struct {
	once sync.Once
	srv  *http.Server
	ln   connQueue
}

func (b *backServer[C]) serve(h *HTTP[C], conn net.Conn) {
	b.once.Do(func() {
		b.ln.init(conn.LocalAddr())
		b.srv = &http.Server{Handler: h, ReadHeaderTimeout: h.headerTimeout, IdleTimeout: h.connTimeout,
			ErrorLog: slog.NewLogLogger(h.srv.Log.Handler(), slog.LevelWarn)}
		go func() { _ = b.srv.Serve(&b.ln) }()
	})
	if b.srv == nil { // shut down before any was handed back
		_ = conn.Close()
		return
	}
	select {
	case b.ln.conns <- conn:
	case <-b.ln.done:
		_ = conn.Close()
	}
}

func (b *backServer[C]) shutdown(ctx context.Context) {
	b.once.Do(func() {}) // none started, and none will be
	if b.srv != nil {
		_ = b.srv.Shutdown(ctx)
	}
}

// connQueue is a listener whose connections are handed to it.
type connQueue struct {
	conns chan net.Conn
	done  chan struct{}
	close sync.Once
	addr  net.Addr
}

func (q *connQueue) init(addr net.Addr) {
	q.conns, q.done, q.addr = make(chan net.Conn), make(chan struct{}), addr
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.close.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }
