package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/server"
)

// eventStore keeps the recent SSE events of each HTTP session so that a
// client whose stream broke can resume it (Last-Event-ID), within bounds.
//
// It also closes a race in mcp-go's POST handling: without a store, a
// notification sent just before a tool result (tools/list_changed after
// attach_resource) can be dropped when the response path wins the lock;
// with one, the transport records it on the stream instead.
type eventStore struct {
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
}

type eventLog struct {
	mu     sync.Mutex
	events []storedEvent
	bytes  int
}

type storedEvent struct {
	id     uint64
	stream string
	msg    json.RawMessage
}

func newEventStore(maxEvents, maxBytes, maxTotal int) *eventStore {
	return &eventStore{maxEvents: maxEvents, maxBytes: maxBytes, maxTotal: maxTotal}
}

var _ server.EventStore = (*eventStore)(nil)

// StoreEvent implements server.EventStore.
func (s *eventStore) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	v, _ := s.sessions.LoadOrStore(sessionID, &eventLog{})
	log := v.(*eventLog)
	id := s.seq.Add(1)
	msg := append(json.RawMessage(nil), message...) // the caller may reuse its buffer
	log.mu.Lock()
	defer log.mu.Unlock()
	log.events = append(log.events, storedEvent{id: id, stream: streamID, msg: msg})
	log.bytes += len(msg)
	total := s.total.Add(int64(len(msg)))
	drop, freed := 0, 0
	for len(log.events)-drop > 1 && (len(log.events)-drop > s.maxEvents || log.bytes > s.maxBytes || total-int64(freed) > int64(s.maxTotal)) {
		n := len(log.events[drop].msg)
		log.bytes -= n
		freed += n
		drop++
	}
	if drop > 0 {
		log.events = append(log.events[:0:0], log.events[drop:]...)
		s.total.Add(-int64(freed))
	}
	return strconv.FormatUint(id, 10), nil
}

// ReplayEventsAfter implements server.EventStore.
func (s *eventStore) ReplayEventsAfter(_ context.Context, sessionID, lastEventID string, send func(string, json.RawMessage) error) (string, error) {
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
		if ev.stream == stream {
			tail = append(tail, ev)
		}
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
func (s *eventStore) PurgeSession(_ context.Context, sessionID string) error {
	if v, ok := s.sessions.LoadAndDelete(sessionID); ok {
		log := v.(*eventLog)
		log.mu.Lock()
		s.total.Add(-int64(log.bytes))
		log.bytes, log.events = 0, nil // a store racing the purge counts only what it adds
		log.mu.Unlock()
	}
	return nil
}
