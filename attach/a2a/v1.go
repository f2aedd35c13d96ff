package a2a

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/guard"
)

// v1Client speaks A2A v1.0 JSON-RPC: PascalCase methods, the A2A-Version
// header, ROLE_* and TASK_STATE_* enums, and parts keyed by their kind.
// No Go library for v1.0 is reachable here, so this is the small subset
// the task tools use.
type v1Client struct {
	url  string
	http *http.Client
	seq  atomic.Int64
}

// dialV1 connects to an agent through its v1.0 JSON-RPC interface, at
// endpoint, checked.
func (d *Dialer) dialV1(card *a2a.AgentCard, endpoint string, own bool) *Conn {
	card.URL = endpoint
	return &Conn{card: card, client: &v1Client{url: endpoint, http: d.http(endpoint, own)}, streaming: card.Capabilities.Streaming, protocol: "1.0"}
}

func (c *v1Client) Destroy() error { return nil }

type v1Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// call sends one JSON-RPC request and decodes its result into out.
func (c *v1Client) call(ctx context.Context, method string, params, out any) error {
	resp, id, err := c.post(ctx, method, params, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r v1Response[json.RawMessage]
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil { // capped (Dialer.HTTP)
		if errors.Is(err, fault.ErrAnswerTooLarge) {
			return fmt.Errorf("%s: %w", method, err)
		}
		return fmt.Errorf("%s: malformed response (HTTP %d): %w", method, resp.StatusCode, err)
	}
	if err := r.check(method, id); err != nil {
		return err
	}
	return json.Unmarshal(r.Result, out)
}

// v1Response is a JSON-RPC response, its result a T.
type v1Response[T any] struct {
	ID     json.RawMessage `json:"id"`
	Result T               `json:"result"`
	Error  *v1Error        `json:"error"`
}

// check says what is wrong with the response to request id of method: an
// answer to another request (its id not id), or the agent's error. One
// whose id did not match was taken: a message answered for another
// request became a task of its own. An error of id null is taken as the
// request's: JSON-RPC gives that id when the request's could not be read.
func (r *v1Response[T]) check(method string, id int64) error {
	if got := string(bytes.TrimSpace(r.ID)); got != strconv.FormatInt(id, 10) && (r.Error == nil || got != "null" && got != "") {
		return fmt.Errorf("%s: the agent answered another request: the response's id is %s, the request's %d", method, cmp.Or(guard.Text(got, 40), "missing"), id)
	}
	if r.Error != nil {
		return v1Err(r.Error)
	}
	return nil
}

// post sends a request of method, numbered id.
func (c *v1Client) post(ctx context.Context, method string, params any, accept string) (resp *http.Response, id int64, err error) {
	id = c.seq.Add(1)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, id, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set("A2A-Version", "1.0")
	resp, err = c.http.Do(req)
	return resp, id, err
}

// v1Err maps v1.0 error codes onto a2a-go's sentinels, so that errors read
// the same whichever protocol the agent speaks.
func v1Err(e *v1Error) error {
	switch e.Code {
	case -32001:
		return fmt.Errorf("%w: %s", a2a.ErrTaskNotFound, e.Message)
	case -32002:
		return fmt.Errorf("%w: %s", a2a.ErrTaskNotCancelable, e.Message)
	case -32004:
		return fmt.Errorf("%w: %s", a2a.ErrUnsupportedOperation, e.Message)
	case -32005:
		return fmt.Errorf("%w: %s", a2a.ErrUnsupportedContentType, e.Message)
	case -32603:
		return fmt.Errorf("%w: %s", a2a.ErrInternalError, e.Message)
	}
	return fmt.Errorf("agent error %d: %s", e.Code, e.Message)
}

// Wire shapes of v1.0.
type v1Part struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"` // any JSON value in v1.0
	URL       string          `json:"url,omitempty"`
	Raw       string          `json:"raw,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

type v1Message struct {
	MessageID string         `json:"messageId"`
	ContextID string         `json:"contextId,omitempty"`
	TaskID    string         `json:"taskId,omitempty"`
	Role      string         `json:"role"`
	Parts     []v1Part       `json:"parts"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type v1Status struct {
	State   string     `json:"state"`
	Message *v1Message `json:"message,omitempty"`
}

type v1Artifact struct {
	ArtifactID string   `json:"artifactId"`
	Name       string   `json:"name,omitempty"`
	Parts      []v1Part `json:"parts"`
}

type v1Task struct {
	ID        string       `json:"id"`
	ContextID string       `json:"contextId"`
	Status    v1Status     `json:"status"`
	Artifacts []v1Artifact `json:"artifacts,omitempty"`
	History   []v1Message  `json:"history,omitempty"`
}

// v1Result is a SendMessage result or a stream event: one key is set.
type v1Result struct {
	Task         *v1Task    `json:"task"`
	Message      *v1Message `json:"message"`
	StatusUpdate *struct {
		TaskID    string   `json:"taskId"`
		ContextID string   `json:"contextId"`
		Status    v1Status `json:"status"`
		Final     bool     `json:"final"`
	} `json:"statusUpdate"`
	ArtifactUpdate *struct {
		TaskID    string     `json:"taskId"`
		ContextID string     `json:"contextId"`
		Artifact  v1Artifact `json:"artifact"`
		Append    bool       `json:"append"`
	} `json:"artifactUpdate"`
}

func toV1Message(m *a2a.Message) v1Message {
	out := v1Message{MessageID: m.ID, ContextID: m.ContextID, TaskID: string(m.TaskID), Role: "ROLE_USER", Metadata: m.Metadata}
	if m.Role == a2a.MessageRoleAgent {
		out.Role = "ROLE_AGENT"
	}
	for _, p := range m.Parts {
		switch v := p.(type) {
		case a2a.TextPart:
			out.Parts = append(out.Parts, v1Part{Text: &v.Text})
		case a2a.DataPart:
			data, _ := json.Marshal(v.Data)
			out.Parts = append(out.Parts, v1Part{Data: data})
		}
	}
	return out
}

func fromV1Parts(parts []v1Part) a2a.ContentParts {
	var out a2a.ContentParts
	for _, p := range parts {
		switch {
		case p.Text != nil:
			out = append(out, a2a.TextPart{Text: *p.Text})
		case len(p.Data) > 0 && string(p.Data) != "null":
			out = append(out, dataPart(p.Data))
		case p.URL != "":
			out = append(out, a2a.FilePart{File: a2a.FileURI{FileMeta: a2a.FileMeta{Name: p.Filename, MimeType: p.MediaType}, URI: p.URL}})
		case p.Raw != "":
			out = append(out, a2a.FilePart{File: a2a.FileBytes{FileMeta: a2a.FileMeta{Name: p.Filename, MimeType: p.MediaType}, Bytes: p.Raw}})
		}
	}
	return out
}

// dataPart is a v1.0 data part as a2a-go holds one, an object: a value of
// another kind (an array, a string) is put under "value".
func dataPart(raw json.RawMessage) a2a.DataPart {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) == nil {
		return a2a.DataPart{Data: obj}
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	return a2a.DataPart{Data: map[string]any{"value": v}}
}

func fromV1Message(m *v1Message) *a2a.Message {
	if m == nil {
		return nil
	}
	role := a2a.MessageRoleUser
	if m.Role == "ROLE_AGENT" {
		role = a2a.MessageRoleAgent
	}
	return &a2a.Message{ID: m.MessageID, ContextID: m.ContextID, TaskID: a2a.TaskID(m.TaskID), Role: role, Parts: fromV1Parts(m.Parts)}
}

// fromV1State turns TASK_STATE_INPUT_REQUIRED into input-required; v1.0
// spells canceled "CANCELLED", and its UNSPECIFIED is v0.3's unknown.
func fromV1State(s string) a2a.TaskState {
	switch s {
	case "TASK_STATE_CANCELLED":
		return a2a.TaskStateCanceled
	case "TASK_STATE_UNSPECIFIED":
		return a2a.TaskStateUnknown
	}
	return a2a.TaskState(strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s, "TASK_STATE_")), "_", "-"))
}

func fromV1Status(s v1Status) a2a.TaskStatus {
	return a2a.TaskStatus{State: fromV1State(s.State), Message: fromV1Message(s.Message)}
}

func fromV1Artifact(a v1Artifact) *a2a.Artifact {
	return &a2a.Artifact{ID: a2a.ArtifactID(a.ArtifactID), Name: a.Name, Parts: fromV1Parts(a.Parts)}
}

func fromV1Task(t *v1Task) *a2a.Task {
	out := &a2a.Task{ID: a2a.TaskID(t.ID), ContextID: t.ContextID, Status: fromV1Status(t.Status)}
	for i := range t.History {
		out.History = append(out.History, fromV1Message(&t.History[i]))
	}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, fromV1Artifact(a))
	}
	return out
}

// SendMessage sends without waiting (returnImmediately), as the task
// tools do with v0.3 agents.
func (c *v1Client) SendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	var r v1Result
	err := c.call(ctx, "SendMessage", map[string]any{"message": toV1Message(p.Message), "configuration": map[string]any{"returnImmediately": true}}, &r)
	switch {
	case err != nil:
		return nil, err
	case r.Task != nil:
		return fromV1Task(r.Task), nil
	case r.Message != nil:
		return fromV1Message(r.Message), nil
	}
	return nil, fmt.Errorf("SendMessage: the agent answered neither a task nor a message")
}

// GetTask implements Client.
func (c *v1Client) GetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error) {
	var t v1Task
	if err := c.call(ctx, "GetTask", map[string]any{"id": q.ID}, &t); err != nil {
		return nil, err
	}
	return fromV1Task(&t), nil
}

// CancelTask implements Client.
func (c *v1Client) CancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	var t v1Task
	if err := c.call(ctx, "CancelTask", map[string]any{"id": p.ID}, &t); err != nil {
		return nil, err
	}
	return fromV1Task(&t), nil
}

// ResubscribeToTask follows SubscribeToTask's event stream.
func (c *v1Client) ResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		resp, id, err := c.post(ctx, "SubscribeToTask", map[string]any{"id": p.ID}, "text/event-stream")
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		for r, err := range sseResults[v1Result](resp.Body, "SubscribeToTask", id) {
			if err != nil {
				yield(nil, err)
				return
			}
			var ev a2a.Event
			switch {
			case r.Task != nil:
				ev = fromV1Task(r.Task)
			case r.Message != nil:
				ev = fromV1Message(r.Message)
			case r.StatusUpdate != nil:
				u := r.StatusUpdate
				ev = &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(u.TaskID), ContextID: u.ContextID, Status: fromV1Status(u.Status), Final: u.Final}
			case r.ArtifactUpdate != nil:
				u := r.ArtifactUpdate
				ev = &a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(u.TaskID), ContextID: u.ContextID, Artifact: fromV1Artifact(u.Artifact), Append: u.Append}
			default:
				continue
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}
