package tools

import (
	"bytes"
	"context"
	"encoding/json"
)

// Cancelling fast calls.
//
// A client cancels a call with notifications/cancelled, naming its id. The
// MCP server stops the calls it runs itself; the fast path's calls are
// stopped here. Over stdio the reader of the client's frames does it
// (stdioReader.cancel). Over HTTP the notice may come on any connection of
// the session (the TypeScript SDK sends it and leaves the call's request
// open), so each session keeps its fast calls in flight by id.

// track lets a notifications/cancelled for the call with id stop it, as
// the MCP server lets one stop its own calls; untrack forgets the call.
// An id is the client's, unique in the session while its call is in
// flight.
func (s *session) track(id string, cancel context.CancelFunc) {
	s.fastMu.Lock()
	if s.fastCalls == nil {
		s.fastCalls = map[string]context.CancelFunc{}
	}
	s.fastCalls[id] = cancel
	s.fastMu.Unlock()
}

func (s *session) untrack(id string) {
	s.fastMu.Lock()
	delete(s.fastCalls, id)
	s.fastMu.Unlock()
}

// cancelFast stops the fast call that frame, a notifications/cancelled,
// names, if it is in flight.
func (s *session) cancelFast(frame []byte) {
	id, ok := cancelledID(frame)
	if !ok {
		return
	}
	s.fastMu.Lock()
	cancel := s.fastCalls[id]
	s.fastMu.Unlock()
	if cancel != nil {
		cancel()
	}
}

var cancelledMethod = []byte(`"notifications/cancelled"`)

// cancelledID returns the JSON of the request id that frame, a
// notifications/cancelled, names.
func cancelledID(frame []byte) (string, bool) {
	if !bytes.Contains(frame, cancelledMethod) {
		return "", false
	}
	var n struct {
		Method string
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(frame, &n) != nil || n.Method != "notifications/cancelled" || n.Params.RequestID == nil {
		return "", false
	}
	return string(n.Params.RequestID), true
}
