package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// EventStore keeps the recent SSE events of each HTTP session so that a
// client whose stream broke can resume it (Last-Event-ID), within bounds.
//
// It also closes a race in mcp-go's POST handling: without a store, a
// notification sent just before a tool result (tools/list_changed after
// attach_resource) can be dropped when the response path wins the lock;
// with one, the transport records it on the stream instead
// (https://github.com/mark3labs/mcp-go/pull/969).
type EventStore struct {
	seq      atomic.Uint64
	sessions sync.Map // session id → *eventLog
	// Bounds per session, and on the bytes of all sessions together: the
	// oldest events go first, and a session always keeps its newest (the
	// race above needs it). Over the gateway-wide bound, the session
	// storing an event gives up its own oldest: no lock spans sessions.
	maxEvents int
	maxBytes  int
	maxTotal  int
	total     atomic.Int64 // bytes held across sessions
	// maxAge bounds how long an event's message is kept: a client resumes
	// a broken stream within seconds (the TypeScript SDK gives up after
	// about 5), while an idle session would otherwise keep its last
	// answers, tool lists included, until it ends. An older event keeps
	// its place, without its message: a stream can still be resumed
	// after it, as a client whose listening stream was idle for long
	// does, unless a message it would replay is gone. The messages go when
	// the session stores another, or at the latest maxAge/2 later, by a
	// sweep that is a timer only while some are kept. Zero keeps them.
	maxAge   time.Duration
	sweeping atomic.Bool      // a sweep is due
	clock    func() time.Time // nil: time.Now
}

type eventLog struct {
	mu     sync.Mutex
	events []storedEvent
	bytes  int
	// expired is how many events, from the first, have lost their
	// messages: expiry goes in order of storing, and need not look at
	// them again.
	expired int
}

type storedEvent struct {
	id     uint64
	at     int64 // when it was stored, in unix nanoseconds
	stream string
	msg    json.RawMessage // nil once expired
}

// NewEventStore returns a store that keeps at most maxEvents events and
// maxBytes bytes a session, maxTotal bytes in all, each for maxAge.
func NewEventStore(maxEvents, maxBytes, maxTotal int, maxAge time.Duration) *EventStore {
	return &EventStore{maxEvents: maxEvents, maxBytes: maxBytes, maxTotal: maxTotal, maxAge: maxAge}
}

func (s *EventStore) now() int64 {
	if s.clock != nil {
		return s.clock().UnixNano()
	}
	return time.Now().UnixNano()
}

// cutoff is when the oldest event kept was stored, at the earliest.
func (s *EventStore) cutoff(now int64) int64 {
	if s.maxAge <= 0 {
		return math.MinInt64
	}
	return now - s.maxAge.Nanoseconds()
}

var _ server.EventStore = (*EventStore)(nil)

// StoreEvent implements server.EventStore. The answer to a request the
// client cancelled is not kept (ServerCall), and is sent with no id.
func (s *EventStore) StoreEvent(ctx context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	if ServerCallOf(ctx).drops(message) {
		return "", nil
	}
	v, _ := s.sessions.LoadOrStore(sessionID, &eventLog{})
	log := v.(*eventLog)
	id := s.seq.Add(1)
	msg := append(json.RawMessage(nil), message...) // the caller may reuse its buffer
	now := s.now()
	cutoff := s.cutoff(now)
	log.mu.Lock()
	log.events = append(log.events, storedEvent{id: id, at: now, stream: streamID, msg: msg})
	log.bytes += len(msg)
	total := s.total.Add(int64(len(msg)))
	total -= int64(s.expireBefore(log, cutoff))
	drop, freed := 0, 0
	for len(log.events)-drop > 1 && (len(log.events)-drop > s.maxEvents || log.bytes-freed > s.maxBytes ||
		total-int64(freed) > int64(s.maxTotal)) {
		freed += len(log.events[drop].msg)
		drop++
	}
	s.drop(log, drop, freed)
	log.mu.Unlock()
	s.armSweep()
	return strconv.FormatUint(id, 10), nil
}

// drop forgets the first n events of log, of freed bytes in all; log.mu
// is held.
func (s *EventStore) drop(log *eventLog, n, freed int) {
	if n == 0 {
		return
	}
	// Into a new array, or none: a slice of the old one, even empty,
	// would keep it and every message it holds.
	log.events = append([]storedEvent(nil), log.events[n:]...)
	log.expired = max(log.expired-n, 0)
	log.bytes -= freed
	s.total.Add(-int64(freed))
}

// armSweep makes a sweep due, if none is.
func (s *EventStore) armSweep() {
	if s.maxAge > 0 && s.sweeping.CompareAndSwap(false, true) {
		time.AfterFunc(s.maxAge/2, s.sweep)
	}
}

// sweep forgets the messages older than maxAge in every session, and
// makes another sweep due while any are kept.
func (s *EventStore) sweep() {
	s.sweeping.Store(false) // first: an event stored meanwhile arms the next
	if s.expire(s.cutoff(s.now())) > 0 {
		s.armSweep()
	}
}

// expire forgets the messages stored before cutoff, a session's newest
// too, and returns how many messages are kept.
func (s *EventStore) expire(cutoff int64) (kept int) {
	s.sessions.Range(func(_, v any) bool {
		log := v.(*eventLog)
		log.mu.Lock()
		s.expireBefore(log, cutoff)
		kept += len(log.events) - log.expired
		log.mu.Unlock()
		return true
	})
	return kept
}

// expireBefore forgets the messages of log's events stored before cutoff
// and returns their bytes; the events keep their places. log.mu is held.
func (s *EventStore) expireBefore(log *eventLog, cutoff int64) (freed int) {
	i := log.expired
	for ; i < len(log.events) && log.events[i].at < cutoff; i++ {
		freed += len(log.events[i].msg)
		log.events[i].msg = nil
	}
	log.expired = i
	if freed > 0 {
		log.bytes -= freed
		s.total.Add(-int64(freed))
	}
	return freed
}

// ReplayEventsAfter implements server.EventStore.
func (s *EventStore) ReplayEventsAfter(_ context.Context, sessionID, lastEventID string, send func(string, json.RawMessage) error) (string, error) {
	unknown := fmt.Errorf("%w: %s", server.ErrUnknownEventID, lastEventID)
	after, err := strconv.ParseUint(lastEventID, 10, 64)
	v, ok := s.sessions.Load(sessionID)
	if err != nil || !ok {
		return "", unknown
	}
	log := v.(*eventLog)
	log.mu.Lock()
	i := -1
	for j, ev := range log.events {
		if ev.id == after {
			i = j
			break
		}
	}
	if i < 0 {
		log.mu.Unlock()
		return "", unknown // never issued, or already evicted
	}
	stream := log.events[i].stream
	var tail []storedEvent
	for _, ev := range log.events[i+1:] {
		if ev.stream != stream {
			continue
		}
		if ev.msg == nil {
			log.mu.Unlock()
			return "", unknown // a message to replay has expired
		}
		tail = append(tail, ev)
	}
	log.mu.Unlock()
	for _, ev := range tail {
		if err := send(strconv.FormatUint(ev.id, 10), ev.msg); err != nil {
			return "", err
		}
	}
	return stream, nil
}

// PurgeSession implements server.EventStore.
func (s *EventStore) PurgeSession(_ context.Context, sessionID string) error {
	if v, ok := s.sessions.LoadAndDelete(sessionID); ok {
		log := v.(*eventLog)
		log.mu.Lock()
		s.total.Add(-int64(log.bytes))
		log.bytes, log.events, log.expired = 0, nil, 0 // a store racing the purge counts only what it adds
		log.mu.Unlock()
	}
	return nil
}
