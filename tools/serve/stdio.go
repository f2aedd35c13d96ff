package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// utf8BOM is the byte order mark some writers put before text.
var utf8BOM = []byte("\xef\xbb\xbf")

// clientFrame is line, read from the client with err, as a frame: with no
// byte order mark before it, ended by a newline even when the stream ended
// first, and nil when it holds nothing but white space. Without this a
// blank line got a parse error, and a last frame without its newline was
// never answered.
func clientFrame(line []byte, err error) []byte {
	line = bytes.TrimPrefix(line, utf8BOM)
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	if err != nil && line[len(line)-1] != '\n' {
		line = append(line[:len(line):len(line)], '\n')
	}
	return line
}

// CallGroup waits for calls in flight; once closed it admits no more.
type CallGroup struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Add admits one call more, unless the group is shut.
func (c *CallGroup) Add() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// Done ends a call Add admitted.
func (c *CallGroup) Done() { c.wg.Done() }

// Shut admits no more calls.
func (c *CallGroup) Shut() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// Wait waits for the calls admitted to end.
func (c *CallGroup) Wait() { c.wg.Wait() }

// StdioSurface is what the stdio transport asks of the tool surface.
type StdioSurface interface {
	// Take answers line, a frame past the door, itself when it can (a
	// call or listing on the fast path, a session's prompts and
	// resources, a call that waits for its pinned server when wait is
	// set), and reports whether it did. What it writes to the client or
	// an upstream may be held in held.
	Take(ctx context.Context, line []byte, held *jsonrpc.Batch, wait bool) bool
	// Answers takes m when it answers a request the gateway sent the
	// client, and reports whether it did.
	Answers(m Message) bool
	// ParamsRefusal is the error answering frame, on its way to the MCP
	// server, when the surface refuses its params; nil for none.
	ParamsRefusal(frame []byte) []byte
}

// Stdio serves one client over stdin and stdout: it reads the client's
// frames, answers at the door what it refuses, offers each other frame
// to the surface, and sends what the surface does not take on to mcp-go's
// stdio server through a pipe. Both write whole frames through one
// writer, W.
type Stdio struct {
	// W writes frames to the client.
	W *jsonrpc.FrameWriter
	// Calls are the calls the surface answers itself, which the session
	// waits for before it ends.
	Calls CallGroup
	// InFlight are the calls in flight the client may cancel. Over stdio
	// the session is the reader's own.
	InFlight Inflight

	log     *slog.Logger
	surface StdioSurface
	end     context.CancelFunc // ends the session
	server  *io.PipeWriter
	// held is what the reader holds back while it has more frames at
	// hand: the requests of fast calls, which then reach each upstream in
	// one write, and refusals. Only the reader's goroutine uses it.
	held jsonrpc.Batch
	// unanswered are the server's calls that the client cancelled.
	unanswered unanswered
	// opened: an initialize has gone to the server; before, requests but
	// ping are refused (beforeInitialize).
	opened atomic.Bool
}

// NewStdio returns the transport writing to out, which calls end once the
// client's end of out is closed.
//
// No writer waits on a client that stops reading while its answers fit
// backlog; past it, writers wait and the reader reads no more requests
// (run). mcp-go serves each request on a goroutine of its own: without
// this, each held an answer, and a client that wrote and never read grew
// memory without bound.
func NewStdio(out io.Writer, backlog int, log *slog.Logger, end context.CancelFunc) *Stdio {
	w := jsonrpc.NewFrameWriter(out) // the server writes a frame per Write
	w.Backlog, w.Wait = backlog, true
	// A client that closed its end of out has gone, even if it keeps in
	// open: the session ends, and with it its upstreams.
	w.OnError = func(err error) {
		log.Warn("the client's end of stdout is closed: ending the session", "err", err)
		end()
	}
	return &Stdio{W: w, log: log, end: end}
}

// Serve serves the client's frames from in until in ends or ctx is done,
// taking those surface answers and sending the rest to mcpServer's
// stdio server.
func (s *Stdio) Serve(ctx context.Context, mcpServer *server.MCPServer, in io.Reader, surface StdioSurface) error {
	srv := server.NewStdioServer(mcpServer)
	// mcp-go runs a stdio session's tools/call on 5 workers by default: a
	// sixth call would wait for one of them to end, so a few gateway tools
	// that wait (attach_resource, wait_task, a slow call_attached_tool)
	// would hold up every other. Over HTTP each request has a goroutine;
	// here, mcp-go's largest pool and queue.
	server.WithWorkerPoolSize(100)(srv)
	server.WithQueueSize(10000)(srv)
	srv.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelError))
	s.surface = surface
	toServer, fromReader := io.Pipe()
	s.server = fromReader
	// An over-size frame is read through and dropped, so it is refused
	// and the session goes on, instead of growing memory without bound.
	lines := jsonrpc.NewLineReader(in, 64<<10)
	lines.Max = jsonrpc.MaxMessage
	go s.run(ctx, lines)
	err := srv.Listen(ctx, toServer, dropAnswers{w: s.W, u: &s.unanswered})
	s.end() // the client is gone: its fast calls in flight end too
	_ = toServer.Close()
	s.Calls.Shut()
	s.InFlight.StopAll()
	s.Calls.Wait()
	// A call is done once its answer is written or held; what an
	// upstream's reader still holds goes out now, and the backlog, before
	// the caller closes out.
	_ = s.W.Flush()
	_ = s.W.Written()
	return err
}

// run reads the client's frames. A frame is valid until the next read:
// the fast path and the server's pipe (whose Write returns once the
// server has copied it all) are done with it by then. What the fast path
// held goes out before the reader waits, on the client or on the server.
func (s *Stdio) run(ctx context.Context, in *jsonrpc.LineReader) {
	defer s.held.Flush()
	for {
		if !s.room(ctx) {
			return // the session ends
		}
		line, err := in.ReadLine()
		if long, ok := err.(*jsonrpc.LongLine); ok { // as ReadLine returns it, unwrapped
			s.refuseLong(long)
			line, err = nil, nil
		}
		if !s.take(ctx, clientFrame(line, err), &s.held) {
			return // the server stopped listening
		}
		if err != nil || !in.LineBuffered() {
			s.held.Flush()
		}
		if err != nil {
			_ = s.server.CloseWithError(err) // io.EOF ends the server's Listen
			return
		}
	}
}

// room waits, before the next frame is read, while the client has left
// a backlog of answers unread; what is held goes out first. It reports
// false when the session ended meanwhile.
func (s *Stdio) room(ctx context.Context) bool {
	if s.W.Waiting() < s.W.Backlog {
		return true
	}
	s.held.Flush()
	return s.W.Room(ctx)
}

// take serves line, a frame of the client's: with a refusal at the door
// (refuseFrame, atDoor), on the fast path, or on to the MCP server. What
// it writes to the client or an upstream may be held in held. It reports
// false when the server stopped listening.
func (s *Stdio) take(ctx context.Context, line []byte, held *jsonrpc.Batch) bool {
	if len(line) == 0 || s.refuseFrame(line, held) {
		return true // nothing read, or refused
	}
	return s.Route(ctx, line, held, true)
}

// refuseFrame answers line with the error that refuses it before either
// path sees it, if one does, and reports whether it did: a batch or a
// frame whose members could be read two ways (FrameRefusal), or a
// request before initialize (beforeInitialize).
func (s *Stdio) refuseFrame(line []byte, held *jsonrpc.Batch) bool {
	msg := FrameRefusal(line)
	if msg == nil && !s.opened.Load() {
		msg = beforeInitialize(line)
	}
	if msg != nil {
		s.refuse(held, msg)
	}
	return msg != nil
}

// Route serves line, a frame past the door, as take does: a request of
// the stateless protocol is refused, what the surface takes is its own,
// and the rest goes on to the server unless refused at the door. wait: a
// call of a tool of a pinned server still starting may wait for it; after
// that wait, the surface routes the call again with none. It reports
// false when the server stopped listening.
func (s *Stdio) Route(ctx context.Context, line []byte, held *jsonrpc.Batch, wait bool) bool {
	if bytes.Contains(line, metaKeyProtocolVersion) && s.refuseStateless(line, held) {
		return true // a request of the stateless protocol, on no path
	}
	if s.surface.Take(ctx, line, held, wait) {
		return true
	}
	// Looked for only now: a call's frame may be large, and a notice is
	// never a call. A cancellation of a fast call is applied here and
	// still passed on to the server.
	if id, stopped := s.InFlight.Cancel(line); id != "" && !stopped {
		s.unanswered.Add(id) // before the server hears the notice
	}
	if s.atDoor(line, held) {
		return true // refused with an error, or dropped
	}
	s.opening(line)
	s.unanswered.Forget(line) // a new request reusing the id
	held.Flush()
	_, err := s.server.Write(line)
	return err == nil
}

// Notify writes a notice of an upstream's to the client: progress on a
// fast call, a log message. It is written on the goroutine that read it,
// before the call's result, which that goroutine reads after it.
func (s *Stdio) Notify(n mcp.JSONRPCNotification) {
	line, err := json.Marshal(n)
	if err == nil {
		_, err = s.W.Write(append(line, '\n'))
	}
	if err != nil {
		s.log.Debug("notice not relayed", "method", n.Method, "err", err)
	}
}

// Reply writes one frame to the client, or holds it in b.
func (s *Stdio) Reply(f Frame, b *jsonrpc.Batch) {
	if err := f.WriteLine(s.W, b); err != nil {
		s.log.Debug("fast call result not written", "err", err)
	}
}

// refuseLong answers a frame over the cap, read through and dropped,
// under its id wherever it lay. A notification is dropped unanswered,
// as JSON-RPC has it; what is neither gets an error with id null, as a
// frame that does not parse does.
func (s *Stdio) refuseLong(long *jsonrpc.LongLine) {
	s.log.Warn("the client sent a message over the cap: refused", "bytes", long.Size, "id", string(long.ID))
	if long.Method && long.ID == nil {
		return
	}
	s.refuse(&s.held, Message{Message: jsonrpc.Message{ID: long.ID}}.Refused(tooLarge))
}

// refuse answers a message read from the client over stdio, the answer
// held in held.
func (s *Stdio) refuse(held *jsonrpc.Batch, msg []byte) {
	if err := s.W.Frame(held, nil, msg, "\n"); err != nil {
		s.log.Debug("a refusal was not written", "err", err)
	}
}

// atDoor answers frame, read from the client, if the door refuses it,
// and reports whether the frame is done with (answered, or dropped).
func (s *Stdio) atDoor(frame []byte, held *jsonrpc.Batch) bool {
	m := ReadMessage(frame)
	if s.surface.Answers(m) {
		return true // an answer to a request of the gateway's
	}
	msg, drop := m.Refusal()
	if msg == nil && !drop {
		msg = s.surface.ParamsRefusal(frame)
	}
	if msg != nil {
		s.refuse(held, msg)
	}
	return msg != nil || drop
}

// refuseStateless answers frame, read from a stdio client, when it is a
// request of the stateless protocol (its params' _meta names a version of
// it), with the error that names the versions served, as over HTTP, and
// reports whether it did. mcp-go's stdio server served it, on no session:
// an mcp-go client that chose that protocol never got the pinned servers,
// started at initialize, nor a tools/list sooner than in 10 s.
func (s *Stdio) refuseStateless(frame []byte, held *jsonrpc.Batch) bool {
	msg := statelessRefusal(ReadMessage(frame))
	if msg != nil {
		s.refuse(held, msg)
	}
	return msg != nil
}

// opening notes that frame, on its way to the server, opens the session:
// an initialize request.
func (s *Stdio) opening(frame []byte) {
	if s.opened.Load() {
		return
	}
	if m := ReadMessage(frame); m.Request() && JSONString(m.Method) == string(mcp.MethodInitialize) {
		s.opened.Store(true)
	}
}
