package registry

import (
	"fmt"
	"testing"
	"time"
)

// keptAt is a kept map of strings sized by length, on a clock the test
// moves.
func keptAt(maxEntries, maxBytes int, ttl time.Duration) (*kept[string], *time.Time) {
	now := time.Unix(1_000_000, 0)
	k := newKept(maxEntries, maxBytes, ttl, func(s string) int { return len(s) })
	k.now = func() time.Time { return now }
	return k, &now
}

func TestKeptBoundsBytes(t *testing.T) {
	t.Parallel()
	k, _ := keptAt(100, 1000, time.Hour)
	for i := range 50 {
		k.put(fmt.Sprint(i), string(make([]byte, 240)))
		if k.bytes > 1000 {
			t.Fatalf("after %d values of 240 bytes: %d bytes kept, over the bound of 1000", i+1, k.bytes)
		}
	}
	if k.len() != 4 {
		t.Errorf("%d values kept; want the 4 newest", k.len())
	}
	for _, key := range []string{"46", "47", "48", "49"} {
		if _, ok := k.get(key); !ok {
			t.Errorf("%s, among the newest, is not kept", key)
		}
	}
	k.put("huge", string(make([]byte, 251)))
	if _, ok := k.get("huge"); ok || k.len() != 4 {
		t.Errorf("a value over a quarter of the bytes allowed was kept (%d values)", k.len())
	}
}

func TestKeptBoundsEntries(t *testing.T) {
	t.Parallel()
	k, _ := keptAt(10, 1<<20, time.Hour)
	for i := range 25 {
		k.put(fmt.Sprint(i), "x")
	}
	if k.len() != 10 || len(k.byKey) != 10 {
		t.Errorf("%d values kept; want 10", k.len())
	}
	if _, ok := k.get("24"); !ok {
		t.Error("the newest value is not kept")
	}
	k.put("24", "again") // storing a key again replaces it
	if k.len() != 10 || k.bytes != 9+len("again") {
		t.Errorf("after storing a key again: %d values, %d bytes", k.len(), k.bytes)
	}
}

// Values expire whether read or not: storing evicts the expired, and a
// map that is never read again does not hold them until it is full.
func TestKeptExpiresUnread(t *testing.T) {
	t.Parallel()
	k, now := keptAt(100, 1<<20, time.Minute)
	for i := range 5 {
		k.put(fmt.Sprint(i), string(make([]byte, 1000)))
	}
	*now = now.Add(time.Minute)
	k.put("fresh", "x")
	if k.len() != 1 || k.bytes != 1 {
		t.Errorf("after the TTL, storing one more left %d values, %d bytes; want only it", k.len(), k.bytes)
	}
	*now = now.Add(time.Minute)
	if _, ok := k.get("fresh"); ok {
		t.Error("an expired value was returned")
	}
}
