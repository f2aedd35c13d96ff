package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
)

// Cancelling fast calls.
//
// A client cancels a call with notifications/cancelled, naming its id. The
// MCP server stops the calls it runs itself; the fast path's calls are
// stopped here, from one record of the calls in flight per session: over
// stdio the reader of the client's frames keeps it, and stops them all
// when the client goes; over HTTP the session does, as the notice may come
// on any connection of the session (the TypeScript SDK sends it and
// leaves the call's request open).

// inflight is the fast calls in flight of one session, by the JSON of
// their ids (unique in the session while a call is in flight): what a
// notifications/cancelled naming one stops, as the MCP server stops its
// own calls. Its zero value is ready.
type inflight struct {
	mu    sync.Mutex
	calls map[string]stopper
}

// stopper stops a call in flight.
type stopper interface{ stop() }

// stopFunc stops a call by ending its context.
type stopFunc context.CancelFunc

func (f stopFunc) stop() { f() }

func (in *inflight) add(id string, c stopper) {
	in.mu.Lock()
	if in.calls == nil {
		in.calls = map[string]stopper{}
	}
	in.calls[id] = c
	in.mu.Unlock()
}

func (in *inflight) remove(id string) {
	in.mu.Lock()
	delete(in.calls, id)
	in.mu.Unlock()
}

// cancel stops the call that frame, a notifications/cancelled, names, if
// it is in flight.
func (in *inflight) cancel(frame []byte) {
	id, ok := cancelledID(frame)
	if !ok {
		return
	}
	in.mu.Lock()
	c := in.calls[id]
	in.mu.Unlock()
	if c != nil {
		c.stop()
	}
}

// stopAll stops every call in flight: the session is ending.
func (in *inflight) stopAll() {
	in.mu.Lock()
	calls := make([]stopper, 0, len(in.calls))
	for _, c := range in.calls {
		calls = append(calls, c)
	}
	in.mu.Unlock()
	for _, c := range calls {
		c.stop()
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
