package serve

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// maxProgressQueued bounds the progress waiting to be written to one
// HTTP client. Past it, progress is dropped, as mcp-go's server drops a
// notification when a session's queue is full: the upstream's reader
// that hands it on must not wait on a slow client.
const maxProgressQueued = 16

// ProgressStream is the answer to a fast call over HTTP, once the
// upstream reports progress or the call has been quiet for a while: an
// event stream written to out by a goroutine of its own, with a comment
// on it whenever it is quiet for every (heartbeat.go).
type ProgressStream struct {
	out   EventOut
	log   *slog.Logger
	every time.Duration // 0: no comments

	mu     sync.Mutex
	events chan []byte   // nil until the stream begins
	done   chan struct{} // closed once the writer has stopped
	ended  bool          // the call has ended: no more progress
	err    error         // the writer's error, once done is closed
}

// EventOut is where an answer written as an event stream goes.
type EventOut interface {
	Begin() error               // writes the head of the answer
	WriteEvents(p []byte) error // writes events and sends them
	End() error                 // ends the answer
}

// NewProgressStream returns the stream for a call's answer when the
// client asked for progress (progress), or nil. A client whose Accept
// takes no event stream is answered in JSON: the surface drops the call's
// progress token (HTTPSurface.FastCall), and the upstream is not asked
// for progress no answer could carry. Once begun, the stream carries a
// comment whenever quiet for every.
func NewProgressStream(progress bool, out EventOut, log *slog.Logger, every time.Duration) *ProgressStream {
	if !progress {
		return nil
	}
	return &ProgressStream{out: out, log: log, every: max(every, 0)}
}

// QuietStream is the stream of the answer to a call without progress,
// begun only once the call has been quiet for every (beat): made for that
// call alone, as one for a call with progress is, so that a late progress
// of one call can never reach the next's.
func QuietStream(out EventOut, log *slog.Logger, every time.Duration) *ProgressStream {
	return &ProgressStream{out: out, log: log, every: every}
}

// MayGoQuiet tells whether the answer to a call without progress may
// become an event stream once quiet for every, to carry comments: when
// every is above 0 and the client's Accept names text/event-stream. A
// client that takes anything (*/*, as curl and most HTTP libraries send)
// is not assumed to read events it never asked for.
func MayGoQuiet(accept string, every time.Duration) bool {
	_, named := eventStreamAccepted(accept)
	return every > 0 && named
}

// Notify queues a progress notification as an event of the stream,
// beginning it; once the call has ended, or while the client reads
// nothing, it is dropped.
func (p *ProgressStream) Notify(n mcp.JSONRPCNotification) {
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

// Beat begins the stream with a comment, if nothing began it: the call
// has been quiet for every. The writer writes the comments that follow.
func (p *ProgressStream) Beat() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended || p.events != nil {
		return
	}
	p.begin()
	p.events <- heartbeatComment // the first, in a queue with room
}

// Beats tells whether the stream carries comments while quiet.
func (p *ProgressStream) Beats() bool { return p.every > 0 }

// AfterQuiet arms the stream's beat for when the call has been quiet for
// every, and returns its timer, to be stopped when the call ends; nil
// when the stream has no comments. (A kept connection's watch beats
// instead: keepalive.go.)
func (p *ProgressStream) AfterQuiet() *time.Timer {
	if p == nil || p.every <= 0 {
		return nil
	}
	return time.AfterFunc(p.every, p.Beat)
}

// begin starts the writer, if it has not started; p.mu is held.
func (p *ProgressStream) begin() {
	if p.events == nil {
		p.events = make(chan []byte, maxProgressQueued)
		p.done = make(chan struct{})
		go p.run()
	}
}

// run writes the answer's head, then the events as they come, and a
// comment whenever none came for every, until the call ends.
func (p *ProgressStream) run() {
	defer close(p.done)
	err := p.out.Begin()
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
				err = p.out.WriteEvents(ev)
			}
		case <-quiet:
			if err == nil {
				err = p.out.WriteEvents(heartbeatComment)
			}
		}
		if t != nil {
			t.Reset(p.every)
		}
	}
}

// Finish ends the call with f. Once the upstream has reported progress,
// f goes out as the last event, and Finish returns true and whether the
// answer went out whole; otherwise it returns false, and the caller
// answers with JSON, as for any fast call.
func (p *ProgressStream) Finish(f Frame) (streamed bool, err error) {
	return p.end(&f)
}

// cut ends the call with no answer (the client cancelled it): once the
// upstream has reported progress, the stream ends after the events
// written; it returns as finish does.
func (p *ProgressStream) cut() (streamed bool, err error) {
	return p.end(nil)
}

// end ends the call with f as the last event, or with none when f is
// nil.
func (p *ProgressStream) end(f *Frame) (streamed bool, err error) {
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
		err = p.out.WriteEvents(appendEvent(nil, f.AppendHead(nil), f.Result, []byte("}")))
	}
	if err == nil {
		err = p.out.End()
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

// ResponseEvents writes an event stream through net/http's server.
type ResponseEvents struct {
	W  http.ResponseWriter
	rc *http.ResponseController // made by begin
}

// Begin writes the head of the answer, as an event stream's.
func (r *ResponseEvents) Begin() error {
	beginEvents(r.W)
	r.rc = http.NewResponseController(r.W)
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

// WriteEvents writes events and flushes them to the client.
func (r *ResponseEvents) WriteEvents(p []byte) error {
	if _, err := r.W.Write(p); err != nil {
		return err
	}
	return r.rc.Flush()
}

// End ends the answer: net/http ends the response once the handler
// returns.
func (r *ResponseEvents) End() error { return nil }
