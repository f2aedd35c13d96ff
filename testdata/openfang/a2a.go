package openfang

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A2A is OpenFang's A2A server as the guide's Part 2 describes it
// ("Agent Card", "A2A API Endpoints"), served by an httptest server:
//
//   - GET  /.well-known/agent.json: the card of one agent, url {URL}/a2a,
//     version "0.1.0", no protocolVersion or preferredTransport;
//   - GET  /a2a/agents: {"agents": [card], "total": 1};
//   - POST /a2a/tasks/send: JSON-RPC method tasks/send, params {message,
//     sessionId}, answered with the bare task (not a JSON-RPC envelope,
//     as "Response (completed task)" shows);
//   - GET  /a2a/tasks/{id}, POST /a2a/tasks/{id}/cancel: the task, or 404.
//
// Anything else is a 404, as a v0.3 message/send to /a2a is. Tasks
// behave as Store says.
type A2A struct {
	*Store
	// URL is the server's origin.
	URL string
	// ProtocolVersion, when set, is put in the card: a card that claims
	// A2A v0.3 while its server speaks only tasks/send.
	ProtocolVersion string

	mu       sync.Mutex
	requests []string
}

// NewA2A returns an OpenFang A2A server to be served at origin.
func NewA2A(origin string) *A2A { return &A2A{Store: NewStore(), URL: origin} }

// StartA2A serves an OpenFang A2A server until the test ends.
func StartA2A(tb testing.TB) *A2A {
	tb.Helper()
	a := NewA2A("")
	ts := httptest.NewServer(a)
	a.URL = ts.URL
	tb.Cleanup(ts.Close)
	return a
}

// Requests lists the requests served, "METHOD path" each, in order.
func (a *A2A) Requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.requests...)
}

// Card is the agent's card, as the guide's example card.
func (a *A2A) Card() map[string]any {
	card := map[string]any{
		"name":        "code-reviewer",
		"description": "Reviews code for bugs, security issues, and style",
		"url":         a.URL + "/a2a",
		"version":     "0.1.0",
		"capabilities": map[string]any{
			"streaming": true, "pushNotifications": false, "stateTransitionHistory": true,
		},
		"skills": []map[string]any{{
			"id": "file_read", "name": "file read", "description": "Can use the file_read tool",
			"tags": []string{"tool"}, "examples": []string{},
		}},
		"defaultInputModes":  []string{"text"},
		"defaultOutputModes": []string{"text"},
	}
	if a.ProtocolVersion != "" {
		card["protocolVersion"] = a.ProtocolVersion
	}
	return card
}

// SendParams are tasks/send's params. ID is not in the guide's request:
// it is taken, as A2A's original tasks/send takes it, to answer a task
// that asks for input.
type SendParams struct {
	ID        string  `json:"id,omitempty"`
	Message   Message `json:"message"`
	SessionID string  `json:"sessionId,omitempty"`
}

// RPCRequest is a JSON-RPC 2.0 request, over stdio (mcp.go) or HTTP.
type RPCRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

func (a *A2A) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.requests = append(a.requests, r.Method+" "+r.URL.Path)
	a.mu.Unlock()
	rest, isTask := strings.CutPrefix(r.URL.Path, "/a2a/tasks/")
	id, action, _ := strings.Cut(rest, "/")
	isTask = isTask && id != ""
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/.well-known/agent.json":
		WriteJSON(w, a.Card())
	case r.Method == http.MethodGet && r.URL.Path == "/a2a/agents":
		WriteJSON(w, map[string]any{"agents": []any{a.Card()}, "total": 1})
	case r.Method == http.MethodPost && r.URL.Path == "/a2a/tasks/send":
		a.send(w, r)
	case isTask && r.Method == http.MethodGet && rest == id:
		a.answer(w, r, a.Get, id)
	case isTask && r.Method == http.MethodPost && action == "cancel":
		a.answer(w, r, a.Cancel, id)
	default:
		http.NotFound(w, r)
	}
}

func (a *A2A) answer(w http.ResponseWriter, r *http.Request, do func(string) (Task, bool), id string) {
	t, ok := do(id)
	if !ok {
		http.NotFound(w, r)
		return
	}
	WriteJSON(w, t)
}

func (a *A2A) send(w http.ResponseWriter, r *http.Request) {
	var req RPCRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		WriteJSON(w, RPCFailure(nil, -32700, "parse error: "+err.Error()))
		return
	}
	if req.Method != "tasks/send" {
		WriteJSON(w, RPCFailure(req.ID, -32601, "method not found: "+req.Method))
		return
	}
	var p SendParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		WriteJSON(w, RPCFailure(req.ID, -32602, "invalid params: "+err.Error()))
		return
	}
	t, err := a.Send(p.ID, p.SessionID, p.Message)
	if err != nil {
		WriteJSON(w, RPCFailure(req.ID, -32602, err.Error()))
		return
	}
	WriteJSON(w, t)
}

// RPCFailure is a JSON-RPC error response.
func RPCFailure(id json.RawMessage, code int, msg string) map[string]any {
	if id == nil {
		id = json.RawMessage("null")
	}
	return map[string]any{"jsonrpc": "2.0", "id": id, "error": rpcError{Code: code, Message: msg}}
}

// WriteJSON answers v as JSON.
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
