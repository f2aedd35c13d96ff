package attach

import (
	"sync"
	"time"
)

// MinUpdate is the least time between two progress notifications a client
// gets on one request while nothing else changes: an agent that streams a
// status every 100 ms had ten a second sent to the client, and an MCP
// server that reports progress in a loop 100,000 in 3 s relayed.
const MinUpdate = 250 * time.Millisecond

// A Coalescer hands on a run of updates, at most one every MinUpdate: an
// update offered MinUpdate or more after the last one sent goes at once;
// of those offered sooner, the latest goes once MinUpdate has passed, and
// the others never. With a beat, the latest goes again each time a beat
// passes with nothing sent. Stop sends the one held, if any: the last
// update is not lost.
//
// Send runs under the Coalescer's lock, so updates go out one at a time
// and in order, and none goes once Stop has returned.
type Coalescer[T any] struct {
	beat time.Duration // 0: no beats
	// send hands v on; beats is 0 for v as offered, k for its k-th
	// repetition on a quiet beat.
	send func(v T, beats int)

	mu     sync.Mutex
	latest T
	held   bool // latest is still to be sent
	beats  int  // since latest was sent
	sent   time.Time
	timer  *time.Timer
	due    time.Time // when the timer is set to fire
	ended  bool
}

// NewCoalescer returns a Coalescer that hands updates to send, repeating
// the latest after each beat with nothing sent (no repetitions when beat is
// 0).
func NewCoalescer[T any](beat time.Duration, send func(v T, beats int)) *Coalescer[T] {
	return &Coalescer[T]{beat: max(beat, 0), send: send}
}

// Offer hands v on now, or holds it until MinUpdate has passed since the
// last update sent, in place of any held before.
func (c *Coalescer[T]) Offer(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.latest, c.beats = v, 0
	if wait := MinUpdate - time.Since(c.sent); wait > 0 {
		if !c.held {
			c.held = true
			c.armIn(wait)
		}
		return
	}
	c.sendLatest()
}

// Send hands v on at once, whenever the last went: a change that must not
// wait (a task's new state). One held is dropped, as v is newer.
func (c *Coalescer[T]) Send(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.latest, c.beats = v, 0
	c.sendLatest()
}

// Await makes v what the beats repeat until an update comes, without
// sending it: the state of an operation before its first news.
func (c *Coalescer[T]) Await(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended || c.beat == 0 {
		return
	}
	c.latest, c.beats = v, 0
	c.armIn(c.beat)
}

// Stop sends the update held, if any, and ends the Coalescer: nothing is
// sent after Stop returns. A nil Coalescer stops at once.
func (c *Coalescer[T]) Stop() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	if c.held {
		c.held = false
		c.send(c.latest, 0)
	}
	c.ended = true
	if c.timer != nil {
		c.timer.Stop()
	}
}

// sendLatest sends latest and sets the next beat; c.mu is held.
func (c *Coalescer[T]) sendLatest() {
	c.held, c.sent = false, time.Now()
	c.send(c.latest, 0)
	if c.beat > 0 {
		c.armIn(c.beat)
	}
}

// armIn sets the timer to fire in d; c.mu is held.
func (c *Coalescer[T]) armIn(d time.Duration) {
	c.due = time.Now().Add(d)
	if c.timer == nil {
		c.timer = time.AfterFunc(d, c.fire)
		return
	}
	c.timer.Reset(d)
}

// fire sends the update held, or repeats the latest on a beat.
func (c *Coalescer[T]) fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended || time.Now().Before(c.due) {
		return // stopped, or set again while this fire was on its way
	}
	if c.held {
		c.sendLatest()
		return
	}
	if c.beat == 0 {
		return
	}
	c.beats++
	c.send(c.latest, c.beats)
	c.armIn(c.beat)
}
