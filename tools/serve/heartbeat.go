package serve

import (
	"bytes"
	"mime"
	"net/http"
	"sync"
	"time"
)

// An event stream may stay quiet for minutes: a session's GET stream
// between notifications, the answer to a call its server works on without
// a word. Proxies and load balancers in front of the gateway cut
// connections idle for a while (nginx's proxy_read_timeout and many load
// balancers: 60 s), and the client, its stream gone, misses what comes
// until it opens another, or loses the call's answer for good. So a
// stream that carried nothing for StreamHeartbeat gets an SSE comment,
// which every client's event parser skips; and the answer to a request
// (a proxied call, wait_task, attach_resource) still to come after that
// long becomes an event stream, when the client takes one, so that it can
// carry them.

// DefaultStreamHeartbeat is how long an event stream stays quiet before
// the gateway writes a comment on it: under the 30 s that the shortest
// common proxy idle timeouts allow.
const DefaultStreamHeartbeat = 25 * time.Second

// heartbeatComment is the comment written: a line that starts with a
// colon, then the blank line that ends it.
var heartbeatComment = []byte(": keep-alive\n\n")

// pace tells when an event stream is due a comment: once it was quiet
// for every, and only between events (mcp-go may write an event's id line
// and the rest apart). Its owner's lock guards it.
type pace struct {
	every   time.Duration
	last    time.Time // of the last write
	between bool      // the last write ended an event
}

// newPace returns the pace of a stream begun now.
func newPace(every time.Duration) pace {
	return pace{every: every, last: time.Now(), between: true}
}

// wrote records a write of p.
func (p *pace) wrote(b []byte) {
	p.last = time.Now()
	if len(b) > 0 {
		p.between = bytes.HasSuffix(b, []byte("\n\n"))
	}
}

// wait is how long to wait before a comment is due, 0 when it is now.
func (p *pace) wait() time.Duration {
	switch quiet := time.Since(p.last); {
	case quiet < p.every:
		return p.every - quiet
	case !p.between:
		return p.every // an event half written: its rest is on its way
	}
	return 0
}

// beat writes a comment on w when one is due, and arms t for the next.
func (p *pace) beat(w http.ResponseWriter, t *time.Timer) {
	if wait := p.wait(); wait > 0 {
		t.Reset(wait)
		return
	}
	if comment(w) != nil {
		return // the client is gone: the handler finds out itself
	}
	p.wrote(heartbeatComment)
	t.Reset(p.every)
}

// comment writes heartbeatComment on w and flushes it.
func comment(w http.ResponseWriter) error {
	if _, err := w.Write(heartbeatComment); err != nil {
		return err
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// HeartbeatWriter writes heartbeatComment on its response, if it is an
// event stream, at the pace of its writes, and never after stop.
type HeartbeatWriter struct {
	http.ResponseWriter

	mu      sync.Mutex
	pace    pace
	timer   *time.Timer // set once the response is an event stream
	stopped bool
}

// NewHeartbeatWriter returns w with heartbeats every every; stop must be
// called before the request's handler returns.
func NewHeartbeatWriter(w http.ResponseWriter, every time.Duration) *HeartbeatWriter {
	return &HeartbeatWriter{ResponseWriter: w, pace: newPace(every)}
}

func (h *HeartbeatWriter) WriteHeader(code int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if code == http.StatusOK && h.timer == nil && !h.stopped && isEventStream(h.Header().Get("Content-Type")) {
		h.pace.last = time.Now()
		h.timer = time.AfterFunc(h.pace.every, h.beat)
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *HeartbeatWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pace.wrote(p)
	return h.ResponseWriter.Write(p)
}

// Flush flushes, as the event stream needs.
func (h *HeartbeatWriter) Flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f, ok := h.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer beneath.
func (h *HeartbeatWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// beat writes the comment when it is due, and arms the next.
func (h *HeartbeatWriter) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopped {
		h.pace.beat(h.ResponseWriter, h.timer)
	}
}

// Stop ends the beats; none is written once it returns.
func (h *HeartbeatWriter) Stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.timer != nil {
		h.timer.Stop()
	}
}

// isEventStream tells whether a Content-Type is text/event-stream.
func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}
