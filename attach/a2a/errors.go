package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/guard"
)

// Errors of the task tools.
var (
	ErrTaskNotFound = errors.New("no such task in this session")
	ErrTaskLost     = errors.New("the agent no longer knows the task")
	ErrNoAgent      = errors.New("no such agent")
	ErrStoreFull    = errors.New("task store full")
	ErrTaskFinished = errors.New("the task takes no more messages")
	ErrTaskBusy     = errors.New("the task is not waiting for input")
	ErrOtherContext = errors.New("another agent's conversation")
	// ErrAnsweredMeanwhile refuses a message to a task whose question
	// another message answered while it waited its turn.
	ErrAnsweredMeanwhile = errors.New("another message answered the question first")
)

// describe turns A2A protocol errors into sentences. What the
// agent said in them is its own text: cleaned and bounded (agentSaid).
func describe(err error) error {
	said := agentSaid{err}
	switch {
	case errors.Is(err, a2a.ErrTaskNotFound):
		return fmt.Errorf("%w (it may have restarted, or dropped it): %w", ErrTaskLost, said)
	case errors.Is(err, a2a.ErrTaskNotCancelable):
		return fmt.Errorf("the agent says the task cannot be cancelled: %w", said)
	case errors.Is(err, a2a.ErrUnsupportedOperation):
		return fmt.Errorf("the agent does not support this operation: %w", said)
	case errors.Is(err, a2a.ErrUnsupportedContentType):
		return fmt.Errorf("the agent does not accept this content type: %w", said)
	}
	// An agent gone away: a2a-go wraps the dial's error in its request's,
	// URL and all; the dial's says what happened, and stays wrapped, so
	// that the agent is marked down (Agent.Reached) by whoever gets this error:
	// a failed wait_task left it listed up. A dial the guard refused is
	// not a down agent.
	if op, ok := fault.Unreachable(err); ok {
		return fmt.Errorf("%w: the agent cannot be reached (%w); try again once it is back, list_attached_resources shows its state", fault.ErrUpstreamDown, op)
	}
	return said
}

// AgentError is a failure of an attached agent's, naming it: what went
// wrong talking to the agent, not in the call's arguments.
type AgentError struct {
	URN string // the agent's attachment's
	Err error
}

func (e *AgentError) Error() string { return e.Err.Error() }
func (e *AgentError) Unwrap() error { return e.Err }

// maxAgentError bounds the text of an agent's error that a tool result
// carries: a2a-go puts a whole answer it could not read in its error,
// 16 MB of it once.
const maxAgentError = 1000

// agentSaid is an error whose text an agent wrote, cleaned and bounded
// as it is shown; errors.Is sees what it wraps.
type agentSaid struct{ err error }

func (e agentSaid) Error() string { return guard.Text(e.err.Error(), maxAgentError) }
func (e agentSaid) Unwrap() error { return e.err }

// agentErrors passes an A2A agent's own error message on to a2a-go's
// client, which keeps only data.error of a JSON-RPC error (what a2a-go's
// servers send) and drops its message: "quota exceeded: try again in 60
// seconds" from an agent on another SDK read "server error". The message
// is put in data.error where that holds no text; data that is no object,
// which a2a-go could not decode at all, is kept as data.detail.
type agentErrors struct{ next http.RoundTripper }

func (a agentErrors) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); media != "application/json" {
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body) // capped below (Dialer.HTTP)
	resp.Body.Close()
	if err == nil && bytes.Contains(body, []byte(`"error"`)) {
		body = withErrorMessage(body)
	}
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errorReader{err}))
	resp.ContentLength = -1
	return resp, nil
}

// withErrorMessage is body, a JSON-RPC response, with its error's message
// in its error's data.error; body as it was when it is no such response,
// or data.error has text already.
func withErrorMessage(body []byte) []byte {
	var resp map[string]json.RawMessage
	var e struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if json.Unmarshal(body, &resp) != nil || json.Unmarshal(resp["error"], &e) != nil || e.Message == "" {
		return body
	}
	data := map[string]any{}
	if len(e.Data) > 0 && string(e.Data) != "null" && json.Unmarshal(e.Data, &data) != nil {
		data = map[string]any{"detail": e.Data} // not an object
	}
	if said, _ := data["error"].(string); said != "" {
		return body // a2a-go's servers' own, which it reads
	}
	data["error"] = e.Message
	fixed, err := json.Marshal(map[string]any{"code": e.Code, "message": e.Message, "data": data})
	if err != nil {
		return body
	}
	resp["error"] = fixed
	out, err := json.Marshal(resp)
	if err != nil {
		return body
	}
	return out
}

// errorReader fails every read with err; io.EOF when err is nil.
type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}
