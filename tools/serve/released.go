package serve

import (
	"errors"
	"net/http"
	"sync/atomic"
)

// Released gives next a response writer that lets go of net/http's once
// next has returned. mcp-go's server keeps the writer of every request it
// answers as an event stream, for resumption, until the session ends, and
// with it the request's connection and that connection's buffers; a write
// to it after the request has been answered fails, as it should.
func Released(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hw := &heldWriter{}
		hw.w.Store(&w)
		defer hw.w.Store(nil)
		next.ServeHTTP(hw, r)
	})
}

// errAnswered is a write to a request already answered.
var errAnswered = errors.New("the request was already answered")

// heldWriter is a response writer until its request is answered.
type heldWriter struct {
	w atomic.Pointer[http.ResponseWriter]
}

func (h *heldWriter) Header() http.Header {
	if w := h.w.Load(); w != nil {
		return (*w).Header()
	}
	return http.Header{}
}

func (h *heldWriter) WriteHeader(code int) {
	if w := h.w.Load(); w != nil {
		(*w).WriteHeader(code)
	}
}

func (h *heldWriter) Write(p []byte) (int, error) {
	if w := h.w.Load(); w != nil {
		return (*w).Write(p)
	}
	return 0, errAnswered
}

// Flush passes on to net/http's writer, which can always flush.
func (h *heldWriter) Flush() {
	if w := h.w.Load(); w != nil {
		if f, ok := (*w).(http.Flusher); ok {
			f.Flush()
		}
	}
}

// Unwrap serves http.ResponseController (mcp-go sets write deadlines).
func (h *heldWriter) Unwrap() http.ResponseWriter {
	if w := h.w.Load(); w != nil {
		return *w
	}
	return nil
}
