package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
)

// Progress on the fast path.
//
// A call whose _meta carries a progress token takes the fast path too.
// Clients that send a token with every call (Claude Code and the MCP
// Inspector do) would otherwise send all their calls through the MCP
// server. The upstream gets a token of the gateway's (attach.Progress),
// and what it reports reaches the client under the client's own.
//
// Over stdio, each progress notification is one more frame
// (stdioReader.notify). Over HTTP, the answer stays JSON while the
// upstream reports nothing. Its first progress turns the answer into an
// event stream, as mcp-go's server answers: the progress, then the result;
// so does a call quiet for the stream heartbeat, to carry comments
// (heartbeat.go).
// Its events carry no ids, so a stream that breaks cannot be resumed. The
// call upstream is cancelled then, as for a broken JSON answer; mcp-go's
// server cancels it too, but keeps the stream's events, ending with the
// cancelled result, for a resumption.

// A notifier hears the upstream's progress on a fast call.
type notifier interface {
	notify(mcp.JSONRPCNotification)
}

// progress asks for the upstream's progress on the call, for notify,
// when the client asked for it. A call without a token allocates nothing
// here.
func (c callFrame) progress(notify notifier) *attach.Progress {
	if c.Progress == nil {
		return nil
	}
	return &attach.Progress{Token: c.Progress, To: notify.notify}
}

// maxProgressQueued bounds the progress waiting to be written to one
// HTTP client. Past it, progress is dropped, as mcp-go's server drops a
// notification when a session's queue is full: the upstream's reader
// that hands it on must not wait on a slow client.
const maxProgressQueued = 16

// progressStream is the answer to a fast call over HTTP, once the
// upstream reports progress or the call has been quiet for a while: an
// event stream written to out by a goroutine of its own, with a comment
// on it whenever it is quiet for every (heartbeat.go).
type progressStream struct {
	out   eventOut
	log   *slog.Logger
	every time.Duration // 0: no comments

	mu     sync.Mutex
	events chan []byte   // nil until the stream begins
	done   chan struct{} // closed once the writer has stopped
	ended  bool          // the call has ended: no more progress
	err    error         // the writer's error, once done is closed
}

// eventOut is where an answer written as an event stream goes.
type eventOut interface {
	begin() error         // writes the head of the answer
	write(p []byte) error // writes events and sends them
	end() error           // ends the answer
}

// newProgressStream returns the stream for call's answer when the client
// asked for progress, or nil. A client whose Accept takes no event stream
// (accept, the header) is answered in JSON: call's progress token is
// dropped, and the upstream not asked for progress no answer could carry.
// Once begun, the stream carries a comment whenever quiet for every.
func newProgressStream(call *callFrame, accept string, out eventOut, log *slog.Logger, every time.Duration) *progressStream {
	if call.Progress != nil && !acceptsEventStream(accept) {
		call.Progress = nil
	}
	if call.Progress == nil {
		return nil
	}
	return &progressStream{out: out, log: log, every: max(every, 0)}
}

// quietStream is the stream of the answer to a call without progress,
// begun only once the call has been quiet for every (beat): made for that
// call alone, as one for a call with progress is, so that a late progress
// of one call can never reach the next's.
func quietStream(out eventOut, log *slog.Logger, every time.Duration) *progressStream {
	return &progressStream{out: out, log: log, every: every}
}

// mayGoQuiet tells whether the answer to a call without progress may
// become an event stream once quiet for every, to carry comments: when
// every is above 0 and the client's Accept names text/event-stream. A
// client that takes anything (*/*, as curl and most HTTP libraries send)
// is not assumed to read events it never asked for.
func mayGoQuiet(accept string, every time.Duration) bool {
	_, named := eventStreamAccepted(accept)
	return every > 0 && named
}

func (p *progressStream) notify(n mcp.JSONRPCNotification) {
	msg, err := json.Marshal(n)
	if err != nil {
		p.log.Debug("progress not relayed", "err", err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.begin()
	select {
	case p.events <- appendEvent(nil, msg):
	default:
		p.log.Debug("progress not relayed: the client is not reading")
	}
}

// beat begins the stream with a comment, if nothing began it: the call
// has been quiet for every. The writer writes the comments that follow.
func (p *progressStream) beat() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended || p.events != nil {
		return
	}
	p.begin()
	p.events <- heartbeatComment // the first, in a queue with room
}

// afterQuiet arms the stream's beat for when the call has been quiet for
// every, and returns its timer, to be stopped when the call ends; nil
// when the stream has no comments. (A kept connection's watch beats
// instead: keepalive.go.)
func (p *progressStream) afterQuiet() *time.Timer {
	if p == nil || p.every <= 0 {
		return nil
	}
	return time.AfterFunc(p.every, p.beat)
}

// begin starts the writer, if it has not started; p.mu is held.
func (p *progressStream) begin() {
	if p.events == nil {
		p.events = make(chan []byte, maxProgressQueued)
		p.done = make(chan struct{})
		go p.run()
	}
}

// run writes the answer's head, then the events as they come, and a
// comment whenever none came for every, until the call ends.
func (p *progressStream) run() {
	defer close(p.done)
	err := p.out.begin()
	var t *time.Timer
	var quiet <-chan time.Time // nil, that never fires, for no comments
	if p.every > 0 {
		t = time.NewTimer(p.every)
		defer t.Stop()
		quiet = t.C
	}
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				p.err = err
				return
			}
			if err == nil {
				err = p.out.write(ev)
			}
		case <-quiet:
			if err == nil {
				err = p.out.write(heartbeatComment)
			}
		}
		if t != nil {
			t.Reset(p.every)
		}
	}
}

// finish ends the call with f. Once the upstream has reported progress,
// f goes out as the last event, and finish returns true and whether the
// answer went out whole; otherwise it returns false, and the caller
// answers with JSON, as for any fast call.
func (p *progressStream) finish(f frame) (streamed bool, err error) {
	return p.end(&f)
}

// cut ends the call with no answer (the client cancelled it): once the
// upstream has reported progress, the stream ends after the events
// written; it returns as finish does.
func (p *progressStream) cut() (streamed bool, err error) {
	return p.end(nil)
}

// end ends the call with f as the last event, or with none when f is
// nil.
func (p *progressStream) end(f *frame) (streamed bool, err error) {
	if p == nil {
		return false, nil
	}
	p.mu.Lock()
	p.ended = true
	events := p.events
	if events != nil {
		close(events)
	}
	p.mu.Unlock()
	if events == nil {
		return false, nil
	}
	<-p.done
	err = p.err
	if err == nil && f != nil {
		// The result is copied once, into the event, from where it lies.
		err = p.out.write(appendEvent(nil, f.appendHead(nil), f.result, []byte("}")))
	}
	if err == nil {
		err = p.out.end()
	}
	if err != nil {
		p.log.Debug("event stream not written", "err", err)
	}
	return true, err
}

// appendEvent appends one JSON-RPC message, the concatenation of parts,
// as an event, the way mcp-go's server writes one. A line break in an
// upstream's JSON is whitespace, which becomes a space: within an event
// it would end the data line.
func appendEvent(b []byte, parts ...[]byte) []byte {
	b = append(b, "event: message\ndata: "...)
	for _, msg := range parts {
		for {
			i := bytes.IndexAny(msg, "\r\n")
			if i < 0 {
				break
			}
			b = append(append(b, msg[:i]...), ' ')
			msg = msg[i+1:]
		}
		b = append(b, msg...)
	}
	return append(b, "\n\n"...)
}

// responseEvents writes an event stream through net/http's server.
type responseEvents struct {
	w  http.ResponseWriter
	rc *http.ResponseController // made by begin
}

func (r *responseEvents) begin() error {
	beginEvents(r.w)
	r.rc = http.NewResponseController(r.w)
	return r.rc.Flush()
}

// beginEvents writes the head of an answer as an event stream.
func beginEvents(w http.ResponseWriter) {
	eventHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
}

// eventHeaders sets the headers of an event stream.
func eventHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
}

func (r *responseEvents) write(p []byte) error {
	if _, err := r.w.Write(p); err != nil {
		return err
	}
	return r.rc.Flush()
}

func (r *responseEvents) end() error { return nil }

// notify sends a notification of the request ctx belongs to (its progress)
// to the client. Over HTTP it goes on the request's own stream
// (serverCall.notify); mcp-go's server would hand it to whichever of the
// session's streams read first. Over stdio, where there is one stream,
// the server sends it.
func (g *Gateway) notify(ctx context.Context, method string, params map[string]any) error {
	if c := serverCallOf(ctx); c != nil {
		msg, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "method": method, "params": params})
		if err != nil {
			return err
		}
		if c.notify(msg) {
			return nil
		}
	}
	return g.mcp.SendNotificationToClient(ctx, method, params)
}
