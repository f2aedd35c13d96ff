package mcpwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// Pipe is the client side of JSON-RPC over a stdio server's
// pipes, one message a line. mcp-go's client runs on it as on its own
// stdio transport; it exists because that transport's reader reads lines
// in 4 KiB pieces, copies each line four times and decodes it twice, which
// was most of what the gateway added to a 1 MiB result. Here each line is
// read into a 64 KiB buffer, checked and split once (jsonrpc.ReadMessage), and a
// result is copied at most once, to hand it to its caller. Calls can also
// be sent without a goroutine waiting on them (send).
//
// What it does not do, mcp-go's did not do either: the process is the
// upstream's (attach starts it), so Close only closes the server's stdin.
type Pipe struct {
	w   io.WriteCloser       // the server's stdin
	out *jsonrpc.FrameWriter // w, one whole line at a time
	r   io.Reader            // its stdout
	log *slog.Logger
	// answering answers the server's requests off the reader (post.go).
	answering answering

	mu        sync.Mutex
	pending   map[string]pendingCall // by request id
	ended     bool                   // no call is taken after the end
	deadlines *time.Timer            // fires at armed, the earliest deadline it knows
	armed     time.Time              // zero when the timer is not set
	onNote    func(mcp.JSONRPCNotification)
	onRequest transport.RequestHandler
	// wait, when not nil, holds calls due while the server waits on the
	// client.
	wait *ClientWait

	started   sync.Once
	done      chan struct{} // closed when the connection ends
	closeOnce sync.Once
	ctx       context.Context // for the server's requests; ends with Close
	cancel    context.CancelFunc
}

var _ transport.BidirectionalInterface = (*Pipe)(nil)

// NewPipe is the transport of a server that reads stdin and writes
// stdout; wait, when not nil, holds its calls while it waits on the
// client.
func NewPipe(stdout io.Reader, stdin io.WriteCloser, log *slog.Logger, wait *ClientWait) *Pipe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pipe{
		w: stdin, out: jsonrpc.NewFrameWriter(stdin), r: stdout, log: log,
		pending: map[string]pendingCall{},
		done:    make(chan struct{}),
		ctx:     ctx, cancel: cancel,
		answering: newAnswering(),
		wait:      wait,
	}
	// A server whose stdin is broken hears no more requests: the calls
	// waiting on it, some perhaps held and never written, end now.
	p.out.OnError = func(error) { p.end() }
	// A server busy on a call may stop reading its stdin; the session's
	// reader, which writes the requests of fast calls, must not wait on
	// it, or every other call of the session would wait too.
	p.out.Backlog = jsonrpc.MaxMessage
	return p
}

// Start begins reading the server's stdout.
func (p *Pipe) Start(context.Context) error {
	p.started.Do(func() { go p.read() })
	return nil
}

// A Waiter hears, once, how a request ended.
type Waiter interface {
	// answered hands over the server's response. Its bytes are the
	// reader's, valid only during the call. The reader has more frames at
	// hand while it holds them back in b: a frame written with b is
	// written when the reader has none left.
	Answered(f Frame, b *jsonrpc.Batch)
	// failed says why no response will come: the connection's end,
	// fault.ErrTimeout, or the cause the request was stopped with.
	Failed(err error)
}

// Limits bound a request sent without waiting (Send): Timeout without an
// answer, which the client's wait may hold off (ClientWait), up to Most
// in all. A zero Timeout sets no bound.
type Limits struct {
	Timeout, Most time.Duration
}

// pendingCall is a request waiting for its response. It is kept in the
// map by value, so that waiting takes no allocation of its own.
type pendingCall struct {
	w        Waiter
	deadline time.Time // zero when none
	timeout  time.Duration
	end      time.Time // the deadline may not move past it
}

// SendRequest writes request and waits for the server's response to it,
// the connection's end, or ctx.
func (p *Pipe) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	line, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("encode %s request: %w", request.Method, err)
	}
	resp, err := p.RoundTrip(ctx, request.ID.String(), nil, line, "\n")
	if resp != nil {
		resp.ID = request.ID // the id it was matched by
	}
	return resp, err
}

// RoundTrip sends the request keyed key, whose frame is what head appends,
// then body, then tail, and waits for its response. A large body is
// written where it lies (jsonrpc.FrameWriter).
func (p *Pipe) RoundTrip(ctx context.Context, key string, head func([]byte) []byte, body []byte, tail string) (*transport.JSONRPCResponse, error) {
	ch := make(replyChan, 1)
	if err := p.Send(key, ch, Limits{}, nil, head, body, tail); err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		return a.resp, a.err
	case <-ctx.Done():
		p.take([]byte(key))
		return nil, ctx.Err()
	}
}

// replyChan is the Waiter of a request that SendRequest waits on.
type replyChan chan reply

type reply struct {
	resp *transport.JSONRPCResponse
	err  error
}

func (ch replyChan) Answered(f Frame, _ *jsonrpc.Batch) { ch <- reply{resp: ResponseOf(f, false)} }
func (ch replyChan) Failed(err error)                   { ch <- reply{err: err} }

// Send registers w under key, keyed as mcp.RequestId.String keys its id,
// within limits when their timeout is not zero, and writes the request
// that line appends, or holds it in b (jsonrpc.FrameWriter). It returns at
// once: w hears the response, the connection's end, fault.ErrTimeout when out
// of time, or the cause given to stop, on the goroutine that saw it. On
// failure w is not called.
//
// It is how a proxied call over stdio waits without a goroutine of its
// own: the response is written to the client from the reader that read it,
// as a relay copying bytes would, with no hand-off in between.
func (p *Pipe) Send(key string, w Waiter, limits Limits, b *jsonrpc.Batch, head func([]byte) []byte, body []byte, tail string) error {
	c := pendingCall{w: w, timeout: limits.Timeout}
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return transport.ErrTransportClosed
	}
	if limits.Timeout > 0 {
		now := time.Now()
		c.deadline = now.Add(limits.Timeout)
		c.end = now.Add(max(limits.Timeout, limits.Most))
		p.arm(c.deadline)
	}
	p.pending[key] = c
	p.mu.Unlock()
	if err := p.writeLine(b, head, body, tail); err != nil {
		if _, ok := p.take([]byte(key)); !ok {
			return nil // the connection ended in between, and said so to w
		}
		return err
	}
	return nil
}

// Backlog is the bytes of requests waiting to be written to the server,
// which has stopped reading its input.
func (p *Pipe) Backlog() int { return p.out.Waiting() }

// Stop ends the request waiting under key with cause, unless it has ended.
func (p *Pipe) Stop(key string, cause error) {
	if c, ok := p.take([]byte(key)); ok {
		c.w.Failed(cause)
	}
}

// Extend moves the deadline of the request waiting under key to d, if
// that is later. The timer is not moved: when it fires, it is set again
// for the earliest deadline then (expire).
func (p *Pipe) Extend(key string, d time.Time) {
	p.mu.Lock()
	if c, ok := p.pending[key]; ok && !c.deadline.IsZero() && d.After(c.deadline) {
		c.deadline = d
		p.pending[key] = c
	}
	p.mu.Unlock()
}

// arm sets the deadline timer for d, unless it fires sooner already. One
// timer serves every call: a timer per call, set and stopped, was 5% of
// the gateway's CPU on a small call, and a call's deadline is nearly
// always later than those of the calls before it, so the timer is seldom
// moved. p.mu is held.
func (p *Pipe) arm(d time.Time) {
	if !p.armed.IsZero() && !d.Before(p.armed) {
		return
	}
	p.armed = d
	if p.deadlines == nil {
		p.deadlines = time.AfterFunc(time.Until(d), p.expire)
		return
	}
	p.deadlines.Reset(time.Until(d))
}

// expire ends the calls whose deadline has passed with fault.ErrTimeout, but
// for those the client held (ClientWait), and sets the timer for the
// earliest deadline left.
func (p *Pipe) expire() {
	p.mu.Lock()
	now := time.Now()
	p.armed = time.Time{}
	var due []pendingCall
	var next time.Time
	for key, c := range p.pending {
		if c.deadline.IsZero() {
			continue
		}
		if !c.deadline.After(now) {
			if c.deadline = p.wait.Hold(now, c.timeout, c.end); c.deadline.IsZero() {
				delete(p.pending, key)
				due = append(due, c)
				continue
			}
			p.pending[key] = c
		}
		if next.IsZero() || c.deadline.Before(next) {
			next = c.deadline
		}
	}
	if !next.IsZero() && !p.ended {
		p.arm(next)
	}
	p.mu.Unlock()
	for _, c := range due {
		c.w.Failed(fault.ErrTimeout)
	}
}

// take removes the call waiting under key and returns it; ok is false
// when it has already ended: whoever takes a call ends it. The key is
// bytes so that a response's id is looked up without a copy.
func (p *Pipe) take(key []byte) (c pendingCall, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok = p.pending[string(key)]
	delete(p.pending, string(key))
	return c, ok
}

// SendNotification writes a notification.
func (p *Pipe) SendNotification(_ context.Context, n mcp.JSONRPCNotification) error {
	line, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode %s notification: %w", n.Method, err)
	}
	return p.writeLine(nil, nil, line, "\n")
}

// writeLine writes the message that line appends, and its newline, in one
// write (the server may read it the moment it lands), or holds it in b.
func (p *Pipe) writeLine(b *jsonrpc.Batch, head func([]byte) []byte, body []byte, tail string) error {
	select {
	case <-p.done:
		return transport.ErrTransportClosed
	default:
	}
	err := p.out.Frame(b, head, body, tail)
	if errors.Is(err, jsonrpc.ErrBacklog) {
		p.log.Warn("the server has stopped reading its input: a request to it was refused", "err", err)
	}
	if err != nil {
		return fmt.Errorf("write to the server's stdin: %w", err)
	}
	return nil
}

// SetNotificationHandler sets what hears the server's notifications.
func (p *Pipe) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	p.mu.Lock()
	p.onNote = h
	p.mu.Unlock()
}

// SetRequestHandler sets what answers the server's requests (ping,
// roots, sampling, elicitation: mcp-go's client decides).
func (p *Pipe) SetRequestHandler(h transport.RequestHandler) {
	p.mu.Lock()
	p.onRequest = h
	p.mu.Unlock()
}

// GetSessionId is empty: a pipe has no session id.
func (p *Pipe) GetSessionId() string { return "" }

// Close ends the connection: calls waiting get ErrTransportClosed and the
// server's stdin is closed, which tells a well-behaved server to exit.
func (p *Pipe) Close() error {
	p.end()
	return p.w.Close()
}

// end fails every call still waiting, once.
func (p *Pipe) end() {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.ended = true
		waiting := p.pending
		p.pending = map[string]pendingCall{}
		if p.deadlines != nil {
			p.deadlines.Stop()
		}
		p.mu.Unlock()
		close(p.done)
		p.cancel()
		for _, c := range waiting {
			c.w.Failed(transport.ErrTransportClosed)
		}
	})
}

// maxLineBuffer is the reader's buffer; a longer line is gathered apart
// (jsonrpc.LineReader), up to the frame cap that p.r enforces. It is a
// pipe's capacity on Linux, so a read empties a full pipe.
const maxLineBuffer = 64 << 10

// read reads the server's stdout. The answers to fast calls are written to
// their clients from here (send); while more lines are at hand they are
// held back, so that a run of answers reaches a client in one write.
func (p *Pipe) read() {
	defer p.end()
	lr := jsonrpc.NewLineReader(p.r, maxLineBuffer)
	lr.Max = jsonrpc.MaxMessage
	var held jsonrpc.Batch
	for {
		line, err := lr.ReadLine()
		if long, ok := err.(*jsonrpc.LongLine); ok { // as ReadLine returns it, unwrapped
			p.dropLong(long)
			line, err = nil, nil
		}
		if len(bytes.TrimSpace(line)) > 0 {
			p.dispatch(bytes.TrimRight(line, "\r\n"), &held)
		}
		if err != nil || !lr.LineBuffered() {
			held.Flush()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.log.Debug("reading the server's stdout ended", "err", err)
			}
			return
		}
	}
}

// dropLong ends what a line over the message cap was about: the call it
// answers fails, saying so, and a request of the server's is refused; the
// server stays up.
func (p *Pipe) dropLong(long *jsonrpc.LongLine) {
	p.log.Warn("the server wrote a message over the cap: dropped", "bytes", long.Size, "id", string(long.ID), "request", long.Method)
	p.refuse(long.ID, long.Method, fault.ErrAnswerTooLarge, fmt.Sprintf("the request is larger than the gateway's %d MiB cap", jsonrpc.MaxMessage>>20))
}

// dropMalformed drops a line that is not JSON-RPC, err saying why. One
// nested deeper than the gateway reads ends what it was about, when it
// routes: the call it answers fails at once, instead of when out of time
// (an attach waited for its start_timeout), and a request of the
// server's is refused; the server stays up. Another, cut short say, is
// skipped: the server may go on to answer properly.
func (p *Pipe) dropMalformed(line []byte, err error) {
	p.log.Debug("the server wrote a line that is not JSON-RPC", "err", err, "bytes", len(line))
	if errors.Is(err, jsonrpc.ErrTooDeep) {
		id, method := jsonrpc.RouteOf(line)
		p.refuse(id, method, fmt.Errorf("the server's response is %w: %w", ErrMalformedAnswer, err), "the request is not JSON-RPC the gateway reads: "+err.Error())
	}
}

// refuse ends what a message of the server's, dropped, was about: the call
// its id answers fails with answerErr, or its request is refused with
// requestWhy. Without an id, a notification or nothing that routes, it
// was about nothing.
func (p *Pipe) refuse(rawID []byte, request bool, answerErr error, requestWhy string) {
	if rawID == nil {
		return
	}
	if request {
		var id mcp.RequestId
		if id.UnmarshalJSON(rawID) == nil {
			p.reply(transport.NewJSONRPCErrorResponse(id, mcp.INVALID_REQUEST, requestWhy, nil))
		}
		return
	}
	if c, ok := p.takeID(rawID); ok {
		c.w.Failed(answerErr)
	}
}

// Frame is one JSON-RPC message from the server, read at its top level
// only (jsonrpc.ReadMessage): the result goes on to the client as the
// server wrote it.
type Frame = jsonrpc.Message

// dispatch routes one line: a response to its caller, a notification to
// the handler, a request to the request handler on a goroutine of its own.
// A line that is not JSON-RPC is skipped, as mcp-go's transport does, but
// for one nested too deep (dropMalformed). Only answers are held in b:
// what else the server sends may take a while to handle, so the answers
// held go first.
func (p *Pipe) dispatch(line []byte, b *jsonrpc.Batch) {
	f, err := jsonrpc.ReadMessage(line)
	if err != nil {
		p.dropMalformed(line, err)
		return
	}
	if f.Method != nil {
		b.Flush()
	}
	switch {
	case f.Method == nil && f.ID != nil:
		p.respond(f, b)
	case f.Method != nil && (f.ID == nil || string(f.ID) == "null"):
		var n mcp.JSONRPCNotification
		if err := json.Unmarshal(line, &n); err != nil {
			p.log.Debug("the server wrote a malformed notification", "err", err)
			return
		}
		p.mu.Lock()
		h := p.onNote
		p.mu.Unlock()
		if h != nil {
			h(n)
		}
	case f.Method != nil:
		var req transport.JSONRPCRequest
		if err := json.Unmarshal(line, &req); err != nil {
			p.log.Debug("the server wrote a malformed request", "err", err)
			return
		}
		if f.Params != nil {
			// As it came: decoded, an object's members would be sorted
			// (an elicitation's form fields reordered), and its numbers
			// made float64. line is the reader's, reused.
			req.Params = json.RawMessage(bytes.Clone(f.Params))
		}
		p.answering.run(req.Method, func() { p.serve(req) })
	}
}

func (p *Pipe) respond(f Frame, b *jsonrpc.Batch) {
	if c, ok := p.takeID(f.ID); ok {
		c.w.Answered(f, b)
	} // else nobody asked, or the caller gave up
}

// takeID is take for the call a response's id, raw JSON, answers.
func (p *Pipe) takeID(raw []byte) (c pendingCall, ok bool) {
	var buf [64]byte
	key, ok := appendIDKey(buf[:0], raw)
	if !ok {
		return c, false
	}
	return p.take(key)
}

// ResponseOf is the response f carries; the result is copied unless the
// caller owns the bytes under f.
func ResponseOf(f Frame, owned bool) *transport.JSONRPCResponse {
	resp := &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION}
	if f.Error != nil && string(f.Error) != "null" {
		resp.Error = new(mcp.JSONRPCErrorDetails)
		if err := json.Unmarshal(f.Error, resp.Error); err != nil {
			*resp.Error = mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, "the server sent a malformed error: "+err.Error(), nil)
		}
		return resp
	}
	resp.Result = f.Result
	if !owned {
		resp.Result = bytes.Clone(f.Result)
	}
	return resp
}

// answers tells whether raw, a response's id, is the id keyed key.
func answers(raw []byte, key string) bool {
	var buf [64]byte
	k, ok := appendIDKey(buf[:0], raw)
	return ok && string(k) == key
}

// appendIDKey appends the key mcp.RequestId.String gives the id, read
// without decoding for the ids the gateway sends: plain strings and
// integers.
func appendIDKey(b, raw []byte) ([]byte, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return append(append(b, "string:"...), raw[1:n-1]...), true
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return append(append(b, "int64:"...), raw...), true
	}
	var id mcp.RequestId
	if id.UnmarshalJSON(raw) != nil {
		return b, false
	}
	return append(b, id.String()...), true
}

// serve answers one request from the server.
func (p *Pipe) serve(req transport.JSONRPCRequest) {
	p.mu.Lock()
	h := p.onRequest
	p.mu.Unlock()
	var resp *transport.JSONRPCResponse
	if h == nil {
		resp = transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "No request handler configured", nil)
	} else {
		var err error
		if resp, err = h(p.ctx, req); err != nil {
			resp = transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil)
		}
	}
	if resp != nil {
		p.reply(resp)
	}
}

// reply writes a response to a request of the server's.
func (p *Pipe) reply(resp *transport.JSONRPCResponse) {
	line, err := json.Marshal(resp)
	if err != nil {
		p.log.Debug("a response to the server could not be encoded", "err", err)
		return
	}
	if err := p.writeLine(nil, nil, line, "\n"); err != nil {
		p.log.Debug("a response to the server was not written", "err", err)
	}
}
