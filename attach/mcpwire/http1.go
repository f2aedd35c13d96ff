package mcpwire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/net/http/httpguts"

	"github.com/ardgate/ardgate/config"
)

// The proxied calls to a plain-http upstream (http://, mostly a sidecar or
// a server on the same host) are written and read by the calling goroutine
// itself, over HTTP/1.1 connections the gateway keeps. Through net/http's
// Transport, a request goes to a writer goroutine and its response comes
// back from a reader goroutine, and each hand-off wakes the scheduler: on
// this project's two CPUs, a sequential POST on loopback took 86 µs and
// 60 µs of CPU that way, against 37 µs and 21 µs written and read in place.
// The response is still read by net/http's own parser (http.ReadResponse):
// only the hand-offs are left out.
//
// https upstreams keep net/http, for TLS and HTTP/2. So does an upstream
// whose configured headers net/http treats specially (Host, framing), and
// a call the server redirects, which is sent again through net/http.
// Every connection is dialled the way the guarded client dials.

// Conns keeps the idle connections of the fast path, a pool per host:port
// and dialer shared by every session calling there. Its zero value is
// ready.
type Conns struct {
	mu    sync.Mutex
	pools map[poolKey]*connPool
}

// poolKey names a pool: its address, and the transport whose dialer it
// dials with. A connection the operator's dialer opened (attach's Manager.OwnHTTP)
// is never handed to a call to what a registry named at the same address.
type poolKey struct {
	t    *http.Transport
	addr string
}

// connPool is the idle connections to one host:port. The one used last
// is taken first, as net/http does, so that after a burst of calls the
// connections it opened fall idle and go, instead of each being kept in
// use by turns.
type connPool struct {
	key   poolKey
	addr  string
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	owner *Conns
	refs  int // the posters using it; guarded by owner.mu

	mu     sync.Mutex
	idle   []*h1Conn // the longest idle first
	closed bool
}

const (
	// maxIdlePerHost matches the guarded client's MaxIdleConnsPerHost: as
	// many kept as calls are in flight, or each call past it dials anew.
	maxIdlePerHost = 256
	// idleTimeout matches the guarded client's IdleConnTimeout.
	idleTimeout = 90 * time.Second
	// maxResponseHead bounds a response's status line and headers.
	maxResponseHead = 1 << 20
)

// acquire returns the pool for calls to u, or nil when they go through hc
// instead: u is not plain http, or hc does not dial by a function of its
// own that a pool can use too (a proxy would move the connect elsewhere).
// Each pool acquired is released once.
func (cs *Conns) acquire(hc *http.Client, u *url.URL) *connPool {
	t, ok := hc.Transport.(*http.Transport)
	if u.Scheme != "http" || !ok || t.DialContext == nil || t.Proxy != nil {
		return nil
	}
	key := poolKey{t: t, addr: config.DialAddr(u)}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	p := cs.pools[key]
	if p == nil {
		if cs.pools == nil {
			cs.pools = map[poolKey]*connPool{}
		}
		p = &connPool{key: key, addr: key.addr, dial: t.DialContext, owner: cs}
		cs.pools[key] = p
	}
	p.refs++
	return p
}

// release gives back a pool acquire returned; the last user closes its
// idle connections.
func (p *connPool) release() {
	cs := p.owner
	cs.mu.Lock()
	p.refs--
	last := p.refs == 0
	if last {
		delete(cs.pools, p.key)
	}
	cs.mu.Unlock()
	if last {
		p.shut()
	}
}

// shut closes the idle connections, and those given back later.
func (p *connPool) shut() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.closeIdle()
}

// closeIdle closes the idle connections.
func (p *connPool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c.Close()
	}
}

// get returns the idle connection used last that is still open, or dials
// one; a pool shut has none to give.
func (p *connPool) get(ctx context.Context) (*h1Conn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, net.ErrClosed
		}
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if c.usable() {
			return c, nil
		}
		c.Close()
	}
	conn, err := p.dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	return newH1Conn(conn), nil
}

// put keeps c for the next call, and closes the connections idle longer
// than idleTimeout; c itself is closed when the pool is full or shut.
func (p *connPool) put(c *h1Conn) {
	now := time.Now()
	c.idleSince = now
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= maxIdlePerHost {
		c.Close()
		return
	}
	stale := 0
	for stale < len(p.idle) && now.Sub(p.idle[stale].idleSince) > idleTimeout {
		p.idle[stale].Close()
		stale++
	}
	if stale > 0 {
		n := copy(p.idle, p.idle[stale:])
		clear(p.idle[n:])
		p.idle = p.idle[:n]
	}
	p.idle = append(p.idle, c)
}

// h1Conn is one HTTP/1.1 connection and its reader.
type h1Conn struct {
	net.Conn
	br        *bufio.Reader // reads through head
	head      headLimit
	raw       syscall.RawConn // nil when the connection has no descriptor, and on Windows
	idleSince time.Time

	// What peek reads and finds, and peek itself as a method value made
	// once: a closure made per check would allocate.
	peekFn  func(fd uintptr) bool
	peekBuf [1]byte
	peekErr error
	// poisonFn is poison as a method value, for context.AfterFunc.
	poisonFn func()
}

func newH1Conn(conn net.Conn) *h1Conn {
	c := &h1Conn{Conn: conn, head: headLimit{r: conn, left: -1}}
	c.br = bufio.NewReaderSize(&c.head, 4<<10)
	c.initPeek(conn)
	c.poisonFn = c.poison
	return c
}

// headLimit bounds what a response's head may take of the connection, as
// net/http's Transport does: while left is not negative, a read past it
// fails.
type headLimit struct {
	r    io.Reader
	left int64
	read int64 // since left was set
}

// errHeadTooLarge is a response head past maxResponseHead.
var errHeadTooLarge = fmt.Errorf("the server's response head is larger than %d KiB", maxResponseHead>>10)

func (l *headLimit) Read(p []byte) (int, error) {
	if l.left >= 0 {
		if l.left == 0 {
			return 0, errHeadTooLarge
		}
		p = p[:min(int64(len(p)), l.left)]
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	if l.left >= 0 {
		l.left -= int64(n)
	}
	return n, err
}

// usable reports whether an idle connection can carry a request: not idle
// too long, and neither closed by the server nor sent anything unasked,
// which a look at the socket that does not wait tells. net/http's reader
// goroutine notices a server's close while the connection is idle; this
// is the same check, made when the connection is taken.
func (c *h1Conn) usable() bool {
	if time.Since(c.idleSince) > idleTimeout || c.br.Buffered() > 0 {
		return false
	}
	return c.idleOpen()
}

// poison makes the connection's reads and writes in progress, and all
// later ones, fail at once: a call's context ended.
func (c *h1Conn) poison() { _ = c.SetDeadline(time.Unix(1, 0)) }

// send1 sends req through one of the pool's connections and reads the
// response's head. The reply's body gives the connection back once it was
// read to its end, or closes it.
func (p *Poster) send1(ctx context.Context, req request) (httpReply, error) {
	session := p.session()
	if !httpguts.ValidHeaderFieldValue(session) {
		return httpReply{}, fmt.Errorf("the server's session id %q cannot be sent in a header", session)
	}
	if !httpguts.ValidHeaderFieldValue(req.lastEventID) {
		return httpReply{}, fmt.Errorf("the server's event id %q cannot be sent in a header", req.lastEventID)
	}
	c, err := p.pool.get(ctx)
	if err != nil {
		return httpReply{}, err
	}
	stop := context.AfterFunc(ctx, c.poisonFn)
	fail := func(err error) (httpReply, error) {
		stop()
		c.Close()
		if ctx.Err() != nil {
			return httpReply{}, ctx.Err()
		}
		return httpReply{}, err
	}
	if err := p.writeRequest(c, req, session, p.traceLines(ctx)); err != nil {
		return fail(err)
	}
	resp, keep, err := readResponse(c.br, &c.head)
	if err != nil {
		return fail(err)
	}
	body := &h1Body{ctx: ctx, c: c, pool: p.pool, stop: stop, body: resp.Body, keep: keep}
	return httpReply{status: resp.StatusCode, media: resp.Header.Get("Content-Type"), length: resp.ContentLength, body: body}, nil
}

// writeRequest writes req: head and body in one write, or, for a large
// body, the body from where it lies. trace is header lines of the call's
// trace context.
func (p *Poster) writeRequest(c *h1Conn, req request, session, trace string) error {
	bp := requestBufs.Get().(*[]byte)
	defer requestBufs.Put(bp)
	b := append((*bp)[:0], req.method...)
	b = append(b, ' ')
	b = append(b, p.target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, p.host...)
	b = append(b, "\r\nUser-Agent: Go-http-client/1.1\r\nAccept: "...)
	b = append(b, req.accept...)
	if req.method == http.MethodPost {
		b = append(b, "\r\nContent-Type: application/json"...)
	}
	if session != "" {
		b = append(append(append(append(b, "\r\n"...), server.HeaderKeySessionID...), ": "...), session...)
	}
	if p.Version != "" {
		b = append(append(append(append(b, "\r\n"...), server.HeaderKeyProtocolVersion...), ": "...), p.Version...)
	}
	if req.lastEventID != "" {
		b = append(append(b, "\r\nLast-Event-ID: "...), req.lastEventID...)
	}
	b = append(b, p.headerLines...)
	b = append(b, trace...)
	if req.method == http.MethodPost {
		b = append(b, "\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(req.body)), 10)
	}
	b = append(b, "\r\n\r\n"...)
	var err error
	if len(req.body) < 64<<10 {
		b = append(b, req.body...)
		_, err = c.Write(b)
	} else {
		bufs := net.Buffers{b, req.body}
		_, err = bufs.WriteTo(c)
	}
	*bp = b[:0]
	return err
}

// requestBufs lends the buffers requests are written from.
var requestBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1<<10); return &b }}

// readResponse reads the response to a request with net/http's own parser,
// past any 100 Continue or 103 Early Hints, its head bounded by
// maxResponseHead. keep tells whether the connection may carry another
// request once the body has been read.
func readResponse(br *bufio.Reader, head *headLimit) (resp *http.Response, keep bool, err error) {
	head.left, head.read = maxResponseHead, 0
	defer func() { head.left = -1 }()
	for {
		resp, err = http.ReadResponse(br, bodyRequest)
		switch {
		case err != nil && head.read == 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
			return nil, false, ErrClosedUnanswered
		case err != nil:
			return nil, false, fmt.Errorf("reading the response: %w", err)
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return resp, false, nil // no longer HTTP
		case resp.StatusCode >= 200:
			return resp, !resp.Close, nil
		}
	}
}

// ErrClosedUnanswered is a server that closed the connection before it
// answered a request.
var ErrClosedUnanswered = fmt.Errorf("the server closed the connection without answering: %w", io.ErrUnexpectedEOF)

// bodyRequest is what http.ReadResponse needs to know of the request: not
// a HEAD, so its response has a body.
var bodyRequest = &http.Request{Method: http.MethodPost}

// h1Body is a response body read from its connection.
type h1Body struct {
	ctx   context.Context // the call's: its end is the error of a read it broke
	c     *h1Conn
	pool  *connPool
	stop  func() bool   // ends the call's context.AfterFunc
	body  io.ReadCloser // the response's, as http.ReadResponse reads it
	keep  bool          // the response allows another request on the connection
	ended bool          // read to its end, trailer included
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.ended {
		return 0, io.EOF
	}
	n, err := b.body.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		b.ended = true
	case err != nil && b.ctx.Err() != nil:
		err = b.ctx.Err() // as net/http says it, so that the call is not taken for the server failing
	}
	return n, err
}

// Close gives the connection back when the body was read to its end. A
// body left unread, such as the rest of an event stream after the event
// that answered the call, is read to its end by a goroutine of its own,
// for at most drainWait, so that the connection is kept all the same; a
// server ends the stream of a call once it has answered.
func (b *h1Body) Close() error {
	switch {
	case !b.stop() || !b.keep: // the call's context poisoned the connection, or the server will close it
		b.c.Close()
	case b.ended:
		b.pool.put(b.c)
	default:
		go b.drain()
	}
	return nil
}

// drainWait bounds how long an unread body is drained to keep its
// connection, and drainMax how much of it.
const (
	drainWait = 5 * time.Second
	drainMax  = 256 << 10
)

func (b *h1Body) drain() {
	_ = b.c.SetReadDeadline(time.Now().Add(drainWait))
	_, err := io.Copy(io.Discard, io.LimitReader(b, drainMax))
	if err != nil || !b.ended || b.c.SetReadDeadline(time.Time{}) != nil {
		b.c.Close()
		return
	}
	b.pool.put(b.c)
}

// httpReply is a response as the Poster reads it, from either client.
type httpReply struct {
	status int
	media  string // the Content-Type header
	length int64  // -1 when not given
	body   io.ReadCloser
}

// traceLines returns the trace context of ctx (Trace) as header lines,
// each after a CRLF, for a request the poster writes itself. A value
// net/http would refuse to send is left out: tracestate comes from the
// client.
func (p *Poster) traceLines(ctx context.Context) string {
	var b strings.Builder
	for k, vs := range p.traceHeader(ctx) {
		for _, v := range vs {
			if httpguts.ValidHeaderFieldValue(v) {
				b.WriteString("\r\n" + k + ": " + v)
			}
		}
	}
	return b.String()
}
