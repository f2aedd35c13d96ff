package mcpwire

import (
	"testing"
	"time"
)

// A call due while its server waits on the client is held a timeout at a
// time, and gets a timeout from the client's last answer; never past its
// end.
func TestClientWaitHolds(t *testing.T) {
	now := time.Now()
	timeout := time.Second
	end := now.Add(time.Minute)
	answeredAt := func(at time.Time) *ClientWait {
		w := &ClientWait{}
		w.answered.Store(at.UnixNano())
		return w
	}
	asking := &ClientWait{}
	asking.Begin()
	for _, c := range []struct {
		name string
		w    *ClientWait
		end  time.Time
		want time.Time // zero: not held
	}{
		{"a server that cannot ask", nil, end, time.Time{}},
		{"never asked", &ClientWait{}, end, time.Time{}},
		{"asking", asking, end, now.Add(timeout)},
		{"asking, near the end", asking, now.Add(time.Millisecond), now.Add(time.Millisecond)},
		{"asking, at the end", asking, now, time.Time{}},
		{"answered just now", answeredAt(now.Add(-time.Millisecond)), end, now.Add(timeout - time.Millisecond)},
		{"answered a timeout ago", answeredAt(now.Add(-timeout)), end, time.Time{}},
	} {
		if got := c.w.Hold(now, timeout, c.end); !got.Equal(c.want) {
			t.Errorf("%s: held to %v; want %v", c.name, got.Sub(now), c.want.Sub(now))
		}
	}
	w := &ClientWait{}
	w.Begin()
	w.End()
	if w.asking.Load() != 0 || w.Hold(time.Now(), timeout, end).IsZero() {
		t.Errorf("an answer just given: asking %d, not held", w.asking.Load())
	}
}
