// Package kagent is a peer written from openribcage's agent discovery
// guide (../../../shared/seeds/openribcage-agent-discovery.txt), for the
// tests: a kagent host whose agents live under a path, /api/a2a/kagent.
//
//   - GET {Host}/{agent}/.well-known/agent.json: the agent's card, as
//     "AgentCard Format" shows it: capabilities a list of strings,
//     endpoints [{type: "a2a", url, methods}, {type: "streaming", ...}],
//     metadata.
//   - GET {Host}/.well-known/agent.json: every card of the namespace,
//     {"agents": [...], "total": n}. The guide's DiscoverFromHost ("Bulk
//     Discovery") takes the namespace's URL and returns its cards, but
//     does not say how they are listed; this is the listing of OpenFang's
//     GET /a2a/agents, at the namespace's well-known path.
//   - POST {Host}/{agent}: JSON-RPC, the methods the card's a2a endpoint
//     lists: tasks/send, tasks/sendSubscribe (Server-Sent Events),
//     tasks/status and tasks/cancel (tasks/get is taken as tasks/status).
//     Tasks are in the shape of A2A's original tasks/* methods: status
//     {state, message}, states "input-required" and "canceled".
//
// Tasks behave as openfang.Store says. It imports the standard library
// and testdata/openfang.
package kagent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ardgate/ardgate/testdata/openfang"
)

// Path is where the namespace's agents are served.
const Path = "/api/a2a/kagent"

// Agent is the agent the host serves, and its capabilities.
const Agent = "k8s-agent"

// Capabilities are the agent's, as the guide's card lists them.
var Capabilities = []string{"kubernetes-management", "cluster-monitoring", "resource-scaling"}

// Host is a kagent host.
type Host struct {
	*openfang.Store
	// URL is the namespace's URL: the origin and Path.
	URL string

	// Looked receives the id of each task tasks/status asks for; buffered,
	// a look not taken when it is full.
	Looked chan string

	mu      sync.Mutex
	methods []string
	down    bool
	looks   int // tasks/status answered before they fail; < 0: all
}

// Start serves a kagent host until the test ends.
func Start(tb testing.TB) *Host {
	tb.Helper()
	h := &Host{Store: openfang.NewStore(), Looked: make(chan string, 64), looks: -1}
	ts := httptest.NewServer(h)
	h.URL = ts.URL + Path
	tb.Cleanup(ts.Close)
	return h
}

// Methods lists the JSON-RPC methods called, in order.
func (h *Host) Methods() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.methods...)
}

// SetDown makes every request fail with a 503 (down) or be served.
func (h *Host) SetDown(down bool) {
	h.mu.Lock()
	h.down = down
	h.mu.Unlock()
}

// AnswerLooks makes tasks/status answer n more requests, then fail with
// an internal error; n < 0 answers all. A client that follows a task's
// stream needs no more looks than it takes before it joins.
func (h *Host) AnswerLooks(n int) {
	h.mu.Lock()
	h.looks = n
	h.mu.Unlock()
}

// look counts a tasks/status request; false when it is to fail.
func (h *Host) look(id string) bool {
	select {
	case h.Looked <- id:
	default:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.looks == 0 {
		return false
	}
	if h.looks > 0 {
		h.looks--
	}
	return true
}

// Card is the agent's card ("AgentCard Format").
func (h *Host) Card() map[string]any {
	url := h.URL + "/" + Agent
	return map[string]any{
		"name":         Agent,
		"description":  "Kubernetes cluster management agent",
		"version":      "1.0.0",
		"capabilities": Capabilities,
		"endpoints": []map[string]any{
			{"type": "a2a", "url": url, "methods": []string{"tasks/send", "tasks/sendSubscribe", "tasks/status", "tasks/cancel"},
				"description": "A2A protocol endpoint for Kubernetes operations"},
			{"type": "streaming", "url": url + "/stream", "methods": []string{"tasks/sendSubscribe"},
				"description": "Server-Sent Events streaming endpoint"},
		},
		"metadata": map[string]any{"framework": "kagent", "language": "go", "deployment": "kubernetes"},
	}
}

func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	down := h.down
	h.mu.Unlock()
	rest, ok := strings.CutPrefix(r.URL.Path, Path+"/")
	switch {
	case down:
		http.Error(w, "down", http.StatusServiceUnavailable)
	case !ok:
		http.NotFound(w, r)
	case r.Method == http.MethodGet && rest == ".well-known/agent.json":
		openfang.WriteJSON(w, map[string]any{"agents": []any{h.Card()}, "total": 1})
	case r.Method == http.MethodGet && rest == Agent+"/.well-known/agent.json":
		openfang.WriteJSON(w, h.Card())
	case r.Method == http.MethodPost && rest == Agent:
		h.rpc(w, r)
	default:
		http.NotFound(w, r)
	}
}

// status is A2A's original TaskStatus.
type status struct {
	State   string            `json:"state"`
	Message *openfang.Message `json:"message,omitempty"`
}

// task is A2A's original Task.
type task struct {
	ID        string              `json:"id"`
	SessionID string              `json:"sessionId,omitempty"`
	Status    status              `json:"status"`
	Artifacts []openfang.Artifact `json:"artifacts,omitempty"`
	History   []openfang.Message  `json:"history,omitempty"`
}

// state spells OpenFang's states as A2A's original spec does.
func state(s string) string {
	switch s {
	case openfang.StateInputRequired:
		return "input-required"
	case openfang.StateCancelled:
		return "canceled"
	}
	return s
}

func render(t openfang.Task) task {
	out := task{ID: t.ID, SessionID: t.SessionID, Status: status{State: state(t.Status)}, Artifacts: t.Artifacts, History: t.Messages}
	if n := len(t.Messages); n > 0 && t.Messages[n-1].Role == "agent" {
		out.Status.Message = &t.Messages[n-1]
	}
	return out
}

func (h *Host) rpc(w http.ResponseWriter, r *http.Request) {
	var req openfang.RPCRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		openfang.WriteJSON(w, openfang.RPCFailure(nil, -32700, "parse error: "+err.Error()))
		return
	}
	h.mu.Lock()
	h.methods = append(h.methods, req.Method)
	h.mu.Unlock()
	var p openfang.SendParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		openfang.WriteJSON(w, openfang.RPCFailure(req.ID, -32602, "invalid params: "+err.Error()))
		return
	}
	var t openfang.Task
	var err error
	switch req.Method {
	case "tasks/send":
		t, err = h.Send(p.ID, p.SessionID, p.Message)
	case "tasks/sendSubscribe":
		h.subscribe(w, r, req.ID, p)
		return
	case "tasks/status", "tasks/get":
		if !h.look(p.ID) {
			openfang.WriteJSON(w, openfang.RPCFailure(req.ID, -32603, "tasks/status is failing as asked"))
			return
		}
		t, err = found(h.Get(p.ID))
	case "tasks/cancel":
		t, err = found(h.Cancel(p.ID))
	default:
		openfang.WriteJSON(w, openfang.RPCFailure(req.ID, -32601, "method not found: "+req.Method))
		return
	}
	if err != nil {
		openfang.WriteJSON(w, openfang.RPCFailure(req.ID, -32001, err.Error()))
		return
	}
	openfang.WriteJSON(w, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": render(t)})
}

func found(t openfang.Task, ok bool) (openfang.Task, error) {
	if !ok {
		return t, fmt.Errorf("task not found")
	}
	return t, nil
}

// subscribe sends the message and streams the task's events: a status
// update at each change, an artifact update for each new artifact, the
// last status update final.
func (h *Host) subscribe(w http.ResponseWriter, r *http.Request, id json.RawMessage, p openfang.SendParams) {
	t, err := h.Send(p.ID, p.SessionID, p.Message)
	if err != nil {
		openfang.WriteJSON(w, openfang.RPCFailure(id, -32001, err.Error()))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	event := func(result any) {
		data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		fmt.Fprintf(w, "data: %s\n\n", data)
		if flusher != nil {
			flusher.Flush()
		}
	}
	sent := 0
	for {
		cur, changed, _ := h.Watch(t.ID)
		for _, a := range cur.Artifacts[sent:] {
			event(map[string]any{"id": cur.ID, "artifact": a})
		}
		sent = len(cur.Artifacts)
		rt := render(cur)
		final := cur.Final() || cur.Status == openfang.StateInputRequired
		event(map[string]any{"id": cur.ID, "sessionId": cur.SessionID, "status": rt.Status, "final": final})
		if final {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}
