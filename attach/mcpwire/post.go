package mcpwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/net/http/httpguts"

	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// Poster sends a proxied call to a streamable HTTP server itself, as one
// POST, instead of through mcp-go's transport, which decodes a response
// three times over with encoding/json (a json.Decoder's scan, then
// Unmarshal's check and decode: 11.7 ms of the gateway's 12 ms on a 1 MiB
// result, CPU profile). The response is read once with jsonrpc.ScanObject and
// its result passed on as the server wrote it.
//
// The session stays mcp-go's: it opened it, keeps its event stream, and
// makes every other request. The Poster sends what mcp-go's transport
// would send with a call (the session id, the negotiated protocol version,
// the configured headers) and reads both kinds of answer: a JSON body, or
// an event stream carrying notifications, requests from the server, and
// the response.
type Poster struct {
	url    string
	client *http.Client // sends the configured headers to url's origin only
	// pool, for a plain-http server, holds the connections its calls are
	// sent on by the Poster itself (http1.go); nil sends them through
	// client. host, target and headerLines are the request's parts.
	pool        *connPool
	host        string
	target      string
	headerLines string
	Version     string                        // the protocol version the session negotiated; set before the first call
	session     func() string                 // the session id mcp-go's transport holds
	notify      func(mcp.JSONRPCNotification) // the server's notifications during a call
	// serve answers the server's requests (attach's upstream.answerRequest).
	serve func(context.Context, transport.JSONRPCRequest) *transport.JSONRPCResponse
	// Trace, when not nil, gives the trace context of a call's request
	// as header fields.
	Trace     func(ctx context.Context) http.Header
	answering answering          // the answers to the server's requests on their way
	closed    context.Context    // done once the upstream is closed
	cancel    context.CancelFunc // closes closed
	release   sync.Once          // gives pool back
}

// NewPoster makes the Poster of a streamable HTTP server at serverURL, with
// the configured headers, its
// calls sent through hc or, for a plain-http server, on connections from
// cs. session returns the session id mcp-go's transport holds; notify
// hears the server's notifications during calls.
func NewPoster(serverURL string, headers map[string]string, hc *http.Client, cs *Conns, session func() string, notify func(mcp.JSONRPCNotification),
	serve func(context.Context, transport.JSONRPCRequest) *transport.JSONRPCResponse) *Poster {
	closed, cancel := context.WithCancel(context.Background())
	// The client sends the configured headers (a token) to the server's
	// origin only: set on each request, a redirect elsewhere carried them
	// along.
	p := &Poster{url: serverURL, client: WithHeaders(hc, serverURL, headers), session: session, notify: notify, serve: serve, closed: closed, cancel: cancel,
		answering: newAnswering()}
	u, err := url.Parse(serverURL)
	if err != nil || !plainHeaders(headers) {
		return p // net/http says what is wrong with them, or sends them its way
	}
	p.host, p.target = u.Host, u.RequestURI()
	var lines strings.Builder
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		lines.WriteString("\r\n" + http.CanonicalHeaderKey(k) + ": " + headers[k])
	}
	p.headerLines = lines.String()
	p.pool = cs.acquire(hc, u)
	return p
}

// plainHeaders accepts configured headers the Poster can write itself:
// valid, and none that net/http writes its own way or that frames the
// request.
func plainHeaders(h map[string]string) bool {
	for k, v := range h {
		switch http.CanonicalHeaderKey(k) {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer", "Connection", "Content-Type", "Accept", "User-Agent",
			server.HeaderKeySessionID, server.HeaderKeyProtocolVersion:
			return false
		}
		if !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
			return false
		}
	}
	return true
}

// Close ends the calls in flight, as mcp-go's do on Close, and gives back
// the Poster's connections.
func (p *Poster) Close() {
	p.cancel()
	if p.pool != nil {
		p.release.Do(p.pool.release)
	}
}

// errSessionGone is a 404 to a call: the server no longer knows the
// session, and every later call would meet the same.
var errSessionGone = errors.New("the server ended the session (HTTP 404)")

// Call POSTs line, the request keyed key, and returns the server's
// response. A call the upstream's close ended says so as mcp-go's
// transports do, with ErrTransportClosed.
func (p *Poster) Call(ctx context.Context, key string, line []byte) (*transport.JSONRPCResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(p.closed, cancel)()
	resp, err := p.exchange(ctx, key, line)
	if err != nil && p.closed.Err() != nil {
		return nil, transport.ErrTransportClosed
	}
	return resp, err
}

func (p *Poster) exchange(ctx context.Context, key string, line []byte) (*transport.JSONRPCResponse, error) {
	resp, err := p.send(ctx, post(line))
	if err != nil {
		return nil, err
	}
	defer resp.body.Close()
	switch {
	case resp.status == http.StatusNotFound:
		return nil, errSessionGone
	case resp.status != http.StatusOK:
		// A JSON-RPC error may come with any status; anything else is the
		// server failing.
		b, _ := io.ReadAll(io.LimitReader(resp.body, 64<<10))
		if r, err := p.response(key, b); err == nil {
			return r, nil
		}
		return nil, fmt.Errorf("the server answered HTTP %d: %s", resp.status, guard.Text(string(b), 200))
	}
	media, _, _ := mime.ParseMediaType(resp.media)
	switch media {
	case "application/json":
		b, err := readBody(io.LimitReader(resp.body, jsonrpc.MaxMessage+1), resp.length)
		if err != nil {
			return nil, fmt.Errorf("reading the response: %w", err)
		}
		if len(b) > jsonrpc.MaxMessage {
			return nil, fmt.Errorf("the server's response: %w", fault.ErrAnswerTooLarge)
		}
		return p.response(key, b)
	case "text/event-stream":
		// Each message is held to the cap, not the stream: the events
		// before the answer (the server's progress, its log) may take
		// more, and were cut at 10 MiB, the call failing as a stream that
		// "ended without answering" and the server marked down.
		var at streamAt
		r, err := p.events(ctx, key, jsonrpc.NewLineReader(eventLines(resp.body), maxLineBuffer), &at)
		return p.resume(ctx, key, &at, r, err)
	}
	return nil, fmt.Errorf("the server answered with content type %q", resp.media)
}

// readBody reads a response body whole into one buffer of its size. One
// that gives its length (which net/http holds it to) is read straight
// into it; one of unknown length (chunked) is read in blocks lent by a
// pool and copied once. io.ReadAll grows a buffer step by step instead,
// allocating three times a 1 MiB result; with the collections that
// followed, the gateway spent 3.45 ms of CPU on such a call, against
// 1.9-2.1 ms now (bench proxy).
func readBody(body io.Reader, length int64) ([]byte, error) {
	if length > 0 && length <= jsonrpc.MaxMessage {
		b := make([]byte, length)
		if _, err := io.ReadFull(body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	var read []*[]byte
	defer func() {
		for _, blk := range read {
			bodyBlocks.Put(blk)
		}
	}()
	size := 0
	for {
		blk := bodyBlocks.Get().(*[]byte)
		read = append(read, blk)
		n, err := io.ReadFull(body, *blk)
		size += n
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	b := make([]byte, 0, size)
	for _, blk := range read {
		b = append(b, (*blk)[:min(len(*blk), size-len(b))]...)
	}
	return b, nil
}

// bodyBlocks lends the blocks that a body of unknown length is read in.
var bodyBlocks = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// request is one request of the Poster's: the POST of a message, or the
// GET that opens the server's own event stream (listen.go).
type request struct {
	method      string // http.MethodPost or http.MethodGet
	body        []byte // the message POSTed
	accept      string
	lastEventID string // the GET's, to resume the stream after that event
}

// post is the POST of a message, which may be answered by an event stream.
func post(line []byte) request {
	return request{method: http.MethodPost, body: line, accept: "application/json, text/event-stream"}
}

// send sends req: over the Poster's own connections when it has them,
// else through its client. A request the server redirects (307, 308: not
// acted on) is sent again through the client, which follows redirects.
func (p *Poster) send(ctx context.Context, req request) (httpReply, error) {
	if p.pool != nil {
		r, err := p.send1(ctx, req)
		if err != nil || r.status < 300 || r.status >= 400 {
			return r, err
		}
		r.body.Close()
	}
	resp, err := p.do(ctx, req)
	if err != nil {
		return httpReply{}, err
	}
	return httpReply{status: resp.StatusCode, media: resp.Header.Get("Content-Type"), length: resp.ContentLength, body: resp.Body}, nil
}

// do sends req through the Poster's client.
func (p *Poster) do(ctx context.Context, req request) (*http.Response, error) {
	var body io.Reader
	if req.method == http.MethodPost {
		body = bytes.NewReader(req.body)
	}
	r, err := http.NewRequestWithContext(ctx, req.method, p.url, body)
	if err != nil {
		return nil, err
	}
	if req.method == http.MethodPost {
		r.Header.Set("Content-Type", "application/json")
	}
	r.Header.Set("Accept", req.accept)
	if id := p.session(); id != "" {
		r.Header.Set(server.HeaderKeySessionID, id)
	}
	if p.Version != "" {
		r.Header.Set(server.HeaderKeyProtocolVersion, p.Version)
	}
	if req.lastEventID != "" {
		r.Header.Set("Last-Event-ID", req.lastEventID)
	}
	for k, v := range p.traceHeader(ctx) {
		r.Header[k] = v
	}
	return p.client.Do(r)
}

// traceHeader is the trace context of ctx as header fields; nil while
// tracing is off.
func (p *Poster) traceHeader(ctx context.Context) http.Header {
	if p.Trace == nil {
		return nil
	}
	return p.Trace(ctx)
}

// eventLines bounds the lines of an event stream: a line holds at most a
// message and its field name.
func eventLines(body io.Reader) io.Reader {
	return jsonrpc.LimitFrames(body, jsonrpc.MaxMessage+len("data: \r\n"))
}

// response reads one JSON-RPC response that must answer key.
func (p *Poster) response(key string, b []byte) (*transport.JSONRPCResponse, error) {
	f, err := jsonrpc.ReadMessage(b)
	if err != nil {
		return nil, fmt.Errorf("the server's response is %w: %w", ErrMalformedAnswer, err)
	}
	if f.Method != nil || !answers(f.ID, key) {
		return nil, fmt.Errorf("the server's response answers another request (id %s)", guard.Text(string(f.ID), 80))
	}
	return ResponseOf(f, true), nil
}

// events reads an SSE response until the event that answers key. On the
// way, the server's notifications go to p.notify and its requests are
// answered: ping as the spec asks, anything else (sampling, roots,
// elicitation, which the gateway does not offer its upstreams) with
// "method not found". at is kept at where the stream is, for opening it
// again (resume.go).
func (p *Poster) events(ctx context.Context, key string, lr *jsonrpc.LineReader, at *streamAt) (*transport.JSONRPCResponse, error) {
	var data []byte
	for {
		line, err := lr.ReadLine()
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0: // the end of an event
			at.end()
			if len(data) == 0 {
				break
			}
			if resp, err := p.event(ctx, key, data); resp != nil || err != nil {
				return resp, err
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			if len(data)+len(v) > jsonrpc.MaxMessage {
				return nil, fmt.Errorf("an event of the server's: %w", fault.ErrAnswerTooLarge)
			}
			data = append(data, v...)
		default:
			at.field(line)
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil, ErrStreamEnded
		case errors.Is(err, jsonrpc.ErrFrameTooLarge):
			return nil, fmt.Errorf("an event of the server's: %w", fault.ErrAnswerTooLarge)
		case err != nil:
			return nil, fmt.Errorf("reading the server's event stream: %w", err)
		}
	}
}

// ErrStreamEnded is an event stream that ended without answering the call.
var ErrStreamEnded = errors.New("the server's event stream ended without answering the call")

// event handles one SSE event and returns the response when it answers
// key, or why it cannot be read when it would (nested too deep, say).
// data is reused for the next event, so what is kept is copied.
func (p *Poster) event(ctx context.Context, key string, data []byte) (*transport.JSONRPCResponse, error) {
	f, err := jsonrpc.ReadMessage(data)
	if err != nil {
		// Not a message; a well-behaved server sends none. One nested too
		// deep ends the call it answers (Pipe.dropMalformed).
		if !errors.Is(err, jsonrpc.ErrTooDeep) {
			return nil, nil
		}
		if id, method := jsonrpc.RouteOf(data); !method && answers(id, key) {
			return nil, fmt.Errorf("the server's response is %w: %w", ErrMalformedAnswer, err)
		}
		return nil, nil
	}
	switch {
	case f.Method == nil:
		if answers(f.ID, key) {
			return ResponseOf(f, false), nil
		}
	case f.ID == nil || string(f.ID) == "null":
		var n mcp.JSONRPCNotification
		if json.Unmarshal(data, &n) == nil && p.notify != nil {
			p.notify(n)
		}
	default:
		p.answer(ctx, f)
	}
	return nil, nil
}

// answer replies to a request the server made during a call, or on the
// stream it is listened to on.
func (p *Poster) answer(ctx context.Context, f Frame) {
	var req transport.JSONRPCRequest
	if req.ID.UnmarshalJSON(f.ID) != nil || json.Unmarshal(f.Method, &req.Method) != nil {
		return
	}
	req.JSONRPC = mcp.JSONRPC_VERSION
	if f.Params != nil {
		req.Params = json.RawMessage(bytes.Clone(f.Params)) // f is the reader's, reused
	}
	// The request and its answer outlive the call it came in, not the
	// upstream.
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	send := func() {
		defer stop()
		defer context.AfterFunc(p.closed, stop)()
		resp := p.serve(ctx, req)
		if resp == nil {
			return // a request the server cancelled
		}
		line, err := json.Marshal(resp)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if resp, err := p.send(ctx, post(line)); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.body, 64<<10))
			resp.body.Close()
		}
	}
	p.answering.run(req.Method, send)
}

// answering runs the answers to a server's requests off the reader of
// its stream or pipe, which goes on reading meanwhile, at most
// maxAnswering at once; past that on the reader itself, so that a server
// flooding requests is slowed to the pace of the answers instead of
// costing a goroutine (and over HTTP a POST) each at once. A request
// relayed to the client (method) runs on a goroutine of its own: its
// answer may wait for a person, and the reader must not, nor the other
// answers; attach bounds how many wait.
type answering chan struct{}

const maxAnswering = 8

func newAnswering() answering { return make(answering, maxAnswering) }

func (a answering) run(method string, answer func()) {
	if Relayable(method) {
		go answer()
		return
	}
	select {
	case a <- struct{}{}:
		go func() {
			defer func() { <-a }()
			answer()
		}()
	default:
		answer()
	}
}

// Relayable reports whether method is one of the requests a server may
// make of the client through the gateway.
func Relayable(method string) bool {
	switch mcp.MCPMethod(method) {
	case mcp.MethodListRoots, mcp.MethodSamplingCreateMessage, mcp.MethodElicitationCreate:
		return true
	}
	return false
}
