package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

func TestEventStoreReplayAndBounds(t *testing.T) {
	ctx := context.Background()
	s := NewEventStore(4, 1<<20, 1<<30, 0)
	var ids []string
	for i := range 6 {
		stream := "a"
		if i%2 == 1 {
			stream = "b"
		}
		id, err := s.StoreEvent(ctx, "s1", stream, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Events 0 and 1 were evicted (4 kept); replay after event 2 (stream a)
	// gives event 4 only: the same stream, in order.
	var got []string
	stream, err := s.ReplayEventsAfter(ctx, "s1", ids[2], func(id string, msg json.RawMessage) error {
		got = append(got, string(msg))
		return nil
	})
	if err != nil || stream != "a" || !slices.Equal(got, []string{`{"n":4}`}) {
		t.Fatalf("replay = %v %q %v", got, stream, err)
	}
	for _, bad := range []string{ids[0], "nope", "999999"} {
		if _, err := s.ReplayEventsAfter(ctx, "s1", bad, nil); !errors.Is(err, server.ErrUnknownEventID) {
			t.Errorf("replay after %q: %v, want ErrUnknownEventID", bad, err)
		}
	}
	if _, err := s.ReplayEventsAfter(ctx, "other", ids[5], nil); !errors.Is(err, server.ErrUnknownEventID) {
		t.Error("events of one session replayed into another")
	}
	_ = s.PurgeSession(ctx, "s1")
	if _, err := s.ReplayEventsAfter(ctx, "s1", ids[5], nil); !errors.Is(err, server.ErrUnknownEventID) {
		t.Error("purged session still replays")
	}
}

func TestEventStoreByteBound(t *testing.T) {
	ctx := context.Background()
	s := NewEventStore(100, 1000, 1<<30, 0)
	big := json.RawMessage(fmt.Sprintf(`"%0600d"`, 0))
	first, _ := s.StoreEvent(ctx, "s", "a", big)
	last, _ := s.StoreEvent(ctx, "s", "a", big)
	if _, err := s.ReplayEventsAfter(ctx, "s", first, func(string, json.RawMessage) error { return nil }); !errors.Is(err, server.ErrUnknownEventID) {
		t.Error("byte bound not enforced: first event still stored")
	}
	// The newest event is kept even when it alone is over the bound.
	if _, err := s.ReplayEventsAfter(ctx, "s", last, func(string, json.RawMessage) error { return nil }); err != nil {
		t.Errorf("newest event lost: %v", err)
	}
}

// Across sessions the bytes held stay near the gateway-wide bound: a
// session storing over it gives up its own oldest events, keeping its
// newest; a purged session gives its bytes back.
func TestEventStoreTotalBound(t *testing.T) {
	ctx := context.Background()
	s := NewEventStore(100, 1<<20, 3000, 0)
	ev := json.RawMessage(fmt.Sprintf(`"%0998d"`, 0)) // 1000 bytes
	ids := map[string][]string{}
	for round := range 3 {
		for _, sess := range []string{"a", "b", "c", "d"} {
			id, _ := s.StoreEvent(ctx, sess, "st", ev)
			ids[sess] = append(ids[sess], id)
			if held := s.total.Load(); held > 4000 {
				t.Fatalf("round %d, session %s: %d bytes held, bound 3000 plus one newest event a session", round, sess, held)
			}
		}
	}
	// Each session kept its newest: a resume from it is recognised.
	for sess, got := range ids {
		newest := got[len(got)-1]
		if _, err := s.ReplayEventsAfter(ctx, sess, newest, func(string, json.RawMessage) error { return nil }); err != nil {
			t.Errorf("session %s lost its newest event: %v", sess, err)
		}
	}
	for _, sess := range []string{"a", "b", "c", "d"} {
		_ = s.PurgeSession(ctx, sess)
	}
	if held := s.total.Load(); held != 0 {
		t.Fatalf("%d bytes counted after every session was purged", held)
	}
}

// Messages older than maxAge go, an idle session's too: a session's own
// when it stores another, every session's at a sweep, which is due again
// only while some are kept. Their events keep their places, so a stream
// can still be resumed after them, as a client does whose listening
// stream was idle for long, unless a message it would replay is gone.
func TestEventStoreMaxAge(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	// An hour: the sweep's real timer fires long after the test.
	s := NewEventStore(100, 1<<20, 1<<30, time.Hour)
	s.clock = func() time.Time { return now }
	replay := func(session, id string) ([]string, error) {
		var got []string
		_, err := s.ReplayEventsAfter(ctx, session, id, func(_ string, m json.RawMessage) error {
			got = append(got, string(m))
			return nil
		})
		return got, err
	}
	old, _ := s.StoreEvent(ctx, "a", "st", json.RawMessage(`"old"`))
	idle, _ := s.StoreEvent(ctx, "b", "st", json.RawMessage(`"idle"`))
	first, _ := s.StoreEvent(ctx, "c", "x", json.RawMessage(`"c1"`))
	second, _ := s.StoreEvent(ctx, "c", "x", json.RawMessage(`"c2"`))
	if !s.sweeping.Load() {
		t.Fatal("no sweep due with messages kept")
	}
	now = now.Add(61 * time.Minute)
	_, _ = s.StoreEvent(ctx, "a", "st", json.RawMessage(`"fresh"`))
	if got, err := replay("a", old); err != nil || !slices.Equal(got, []string{`"fresh"`}) {
		t.Errorf("after an expired event, the stream's next: %v, %v", got, err)
	}
	if _, err := replay("b", idle); err != nil {
		t.Errorf("b's message is not due before a sweep: %v", err)
	}
	s.sweep()
	if held := s.total.Load(); held != int64(len(`"fresh"`)) || !s.sweeping.Load() {
		t.Errorf("after a sweep: %d bytes held, sweep due %v; want %d, true", held, s.sweeping.Load(), len(`"fresh"`))
	}
	if got, err := replay("b", idle); err != nil || len(got) != 0 {
		t.Errorf("resuming an idle stream after its expired last event: %v, %v", got, err)
	}
	if got, err := replay("c", second); err != nil || len(got) != 0 {
		t.Errorf("resuming after the last event: %v, %v", got, err)
	}
	if _, err := replay("c", first); !errors.Is(err, server.ErrUnknownEventID) {
		t.Errorf("resuming where an expired message would be replayed: %v, want ErrUnknownEventID", err)
	}
	now = now.Add(61 * time.Minute)
	s.sweep()
	if s.total.Load() != 0 || s.sweeping.Load() {
		t.Errorf("after the last went: %d bytes held, sweep due %v", s.total.Load(), s.sweeping.Load())
	}
	s.sessions.Range(func(_, v any) bool {
		for _, ev := range v.(*eventLog).events {
			if ev.msg != nil {
				t.Errorf("event %d keeps its message", ev.id)
			}
		}
		return true
	})
}
