package attach

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// sent is one update a Coalescer handed on, and when.
type sent struct {
	v, beats int
	at       time.Time
}

// recorder records what a Coalescer hands on, on a channel.
func recorder() (chan sent, func(v, beats int)) {
	ch := make(chan sent, 1000)
	return ch, func(v, beats int) { ch <- sent{v, beats, time.Now()} }
}

// drain returns the last of what ch holds.
func drain(ch chan sent) (last sent) {
	for len(ch) > 0 {
		last = <-ch
	}
	return last
}

// A run of updates goes out as its first at once and its latest once
// MinUpdate has passed, the others dropped; Stop sends the one held, and
// nothing goes after it.
func TestCoalescerRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	ch, send := recorder()
	c := NewCoalescer(0, send)
	start := time.Now()
	for i := 1; i <= 100; i++ {
		c.Offer(i)
	}
	if first := <-ch; first.v != 1 {
		t.Fatalf("first sent %d; want 1, at once", first.v)
	}
	held := <-ch // the latest, once MinUpdate has passed
	if held.v != 100 || held.at.Sub(start) < MinUpdate {
		t.Fatalf("then %d after %s; want 100 after %s", held.v, held.at.Sub(start), MinUpdate)
	}
	c.Offer(101)
	c.Offer(102) // held: the last went just now
	c.Stop()
	if last := drain(ch); last.v != 102 {
		t.Fatalf("at Stop %d; want 102, the one held", last.v)
	}
	c.Offer(103)
	c.Send(104)
	c.Stop()
	if len(ch) > 0 {
		t.Fatalf("%+v sent after Stop", <-ch)
	}
}

// Send hands an update on at once, however soon after the last, and drops
// the one held, which is older.
func TestCoalescerSendAtOnce(t *testing.T) {
	ch, send := recorder()
	c := NewCoalescer(0, send)
	defer c.Stop()
	c.Offer(1)
	c.Offer(2) // held
	c.Send(3)
	for _, want := range []int{1, 3} {
		if got := <-ch; got.v != want {
			t.Fatalf("sent %d; want %d", got.v, want)
		}
	}
	c.Stop()
	if len(ch) > 0 {
		t.Fatalf("%+v sent at Stop; want none held", <-ch)
	}
}

// With a beat, the latest update goes again each beat with nothing sent,
// counted; Await sets what the beats repeat before any update.
func TestCoalescerBeats(t *testing.T) {
	ch, send := recorder()
	const beat = 20 * time.Millisecond
	c := NewCoalescer(beat, send)
	defer c.Stop()
	c.Await(7)
	for want := 1; want <= 2; want++ {
		if got := <-ch; got.v != 7 || got.beats != want {
			t.Fatalf("beat %+v; want 7 beaten %d times", got, want)
		}
	}
	c.Send(8)
	for want := 0; want <= 2; want++ {
		if got := <-ch; got.v != 8 || got.beats != want {
			t.Fatalf("sent %+v; want 8, beaten %d times", got, want)
		}
	}
}

// Offers from many goroutines at once go out one at a time (got is
// appended to without a lock of its own: the race detector would see two
// sends at once), the last of them last.
func TestCoalescerConcurrent(t *testing.T) {
	var got []int
	c := NewCoalescer(0, func(v, _ int) { got = append(got, v) })
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				c.Offer(g*1000 + i)
			}
		})
	}
	wg.Wait()
	c.Offer(-1)
	c.Stop()
	if len(got) == 0 || got[len(got)-1] != -1 {
		t.Fatalf("sent %v; want the last offered, -1, last", got)
	}
}
