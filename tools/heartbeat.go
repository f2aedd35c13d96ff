package tools

import (
	"bytes"
	"mime"
	"net/http"
	"sync"
	"time"
)

// A session's GET stream stays open for the session's life, quiet for
// minutes between notifications. Proxies and load balancers in front of
// the gateway cut connections idle for a while (nginx's proxy_read_timeout
// and many load balancers: 60 s), and the client, its stream gone, misses
// what comes until it opens another. So a stream that carried nothing for
// StreamHeartbeat gets an SSE comment, which every client's event parser
// skips.

// DefaultStreamHeartbeat is how long an event stream stays quiet before
// the gateway writes a comment on it: under the 30 s that the shortest
// common proxy idle timeouts allow.
const DefaultStreamHeartbeat = 25 * time.Second

// heartbeatComment is the comment written: a line that starts with a
// colon, then the blank line that ends it.
var heartbeatComment = []byte(": keep-alive\n\n")

// heartbeatWriter writes heartbeatComment on its response, if it is an
// event stream, whenever nothing was written on it for every. It writes
// only between events (mcp-go may write an event's id line and the rest
// apart), and never after stop.
type heartbeatWriter struct {
	http.ResponseWriter
	every time.Duration

	mu      sync.Mutex
	timer   *time.Timer // set once the response is an event stream
	between bool        // the last write ended an event
	last    time.Time   // of the last write
	stopped bool
}

// newHeartbeatWriter returns w with heartbeats every every; stop must be
// called before the request's handler returns.
func newHeartbeatWriter(w http.ResponseWriter, every time.Duration) *heartbeatWriter {
	return &heartbeatWriter{ResponseWriter: w, every: every, between: true}
}

func (h *heartbeatWriter) WriteHeader(code int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if code == http.StatusOK && h.timer == nil && !h.stopped && isEventStream(h.Header().Get("Content-Type")) {
		h.last = time.Now()
		h.timer = time.AfterFunc(h.every, h.beat)
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *heartbeatWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = time.Now()
	if len(p) > 0 {
		h.between = bytes.HasSuffix(p, []byte("\n\n"))
	}
	return h.ResponseWriter.Write(p)
}

// Flush flushes, as the event stream needs.
func (h *heartbeatWriter) Flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f, ok := h.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer beneath.
func (h *heartbeatWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// beat writes the comment if the stream was quiet for every, and arms
// the next for every after the stream's last write.
func (h *heartbeatWriter) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	switch quiet := time.Since(h.last); {
	case quiet < h.every:
		h.timer.Reset(h.every - quiet)
		return
	case !h.between:
		h.timer.Reset(h.every) // an event half written: its rest is on its way
		return
	}
	if _, err := h.ResponseWriter.Write(heartbeatComment); err != nil {
		return // the client is gone: the handler finds out itself
	}
	if f, ok := h.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	h.last = time.Now()
	h.timer.Reset(h.every)
}

// stop ends the beats; none is written once it returns.
func (h *heartbeatWriter) stop() {
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
