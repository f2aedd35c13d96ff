package tools

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"

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
// Frames are read first by the transport (serve.Stdio): a plain call of a
// proxied tool is answered on the fast path (fastpath.go), everything else
// goes on to the MCP server through a pipe.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := serve.NewStdio(out, cmp.Or(g.opts.StdioBacklog, DefaultStdioBacklog), g.log, cancel)
	r := &stdioReader{Stdio: st, g: g, w: st.W}
	g.stdioOut.Store(r)
	defer g.stdioOut.CompareAndSwap(r, nil)
	return st.Serve(ctx, g.mcp, in, r)
}

// stdioReader is the tool surface of the stdio transport, the session's:
// what it takes of the client's frames, and how it writes to the client.
type stdioReader struct {
	*serve.Stdio
	g *Gateway
	w *jsonrpc.FrameWriter // the client's writer, serve.Stdio's W
}

// Answers takes m when it answers a request of the gateway's to the
// client (serve.StdioSurface).
func (r *stdioReader) Answers(m serve.Message) bool {
	s := r.g.stdio.Load()
	return s != nil && s.asked.answer(m, r.g.log.Debug)
}

// ParamsRefusal is the error answering frame when its params are refused
// (paramsRefusal; serve.StdioSurface).
func (r *stdioReader) ParamsRefusal(frame []byte) []byte {
	return r.g.paramsRefusal(r.g.stdio.Load(), frame)
}

// Take answers line on the fast path, or from the session's offers, or
// once its pinned server has started (wait), and reports whether it took
// it (serve.StdioSurface). A call to a stdio server is started here and
// answered from the reader of that server's pipe, as soon as its response
// is read (StartRaw); any other call runs on a goroutine of its own, as
// the server runs calls.
func (r *stdioReader) Take(ctx context.Context, line []byte, held *jsonrpc.Batch, wait bool) bool {
	s := r.g.stdio.Load()
	c, ok := r.g.fastCall(s, line)
	if !ok {
		if f, ok := r.g.fastList(s, line); ok {
			r.Reply(f, held)
			return true
		}
		return r.offers(ctx, s, line) || wait && r.startingCall(ctx, s, line)
	}
	if !r.Calls.Add() {
		return false // the session is ending; the server answers
	}
	traced, trace := r.g.opts.Tracing.startCall(ctx, nil, c)
	a, refused := r.g.admit(s, c.called(), nil)
	if refused != nil {
		f := r.g.failedFrame(s, c, refused)
		trace.end(f)
		r.Reply(f, held)
		r.Calls.Done()
		return true
	}
	sc := &stdioCall{r: r, ctx: ctx, c: c, a: a, trace: trace}
	r.InFlight.Add(c.ID, sc)
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
	r.InFlight.Remove(sc.c.ID)
	f := r.g.fastResult(sc.ctx, r.g.stdio.Load(), sc.c, sc.a, raw, err)
	sc.trace.end(f)
	if !sc.byClient.Load() {
		r.Reply(f, b)
	}
	r.Calls.Done()
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
