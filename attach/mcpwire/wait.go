package mcpwire

import (
	"sync/atomic"
	"time"
)

// ClientWait is a server's requests to the client on their way: while
// one is, the server's calls are held (Pipe's, and attach's call clock).
// Begin and End bracket each request.
type ClientWait struct {
	asking   atomic.Int32
	answered atomic.Int64 // when the last was answered, in Unix ns; 0 for never
}

func (w *ClientWait) Begin() { w.asking.Add(1) }

func (w *ClientWait) End() {
	w.answered.Store(time.Now().UnixNano()) // before: a call held sees it
	w.asking.Add(-1)
}

// Hold is when a call with timeout and end that runs out of time now
// runs out instead, the client having held its server; zero when it did
// not. A nil w holds nothing.
func (w *ClientWait) Hold(now time.Time, timeout time.Duration, end time.Time) time.Time {
	if w == nil || !now.Before(end) {
		return time.Time{}
	}
	// asking before answered: End stores answered before it lowers
	// asking, so an answer that ends the asking is seen.
	asking := w.asking.Load() > 0
	d := time.Unix(0, w.answered.Load()).Add(timeout)
	if asking {
		d = now.Add(timeout)
	}
	switch {
	case !d.After(now):
		return time.Time{}
	case d.After(end):
		return end
	}
	return d
}
