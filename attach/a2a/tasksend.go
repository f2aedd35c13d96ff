package a2a

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/ardgate/ardgate/attach/fault"
)

// tasksClient speaks the tasks/send methods of agents older than A2A
// v0.3, in one of two forms:
//
//   - OpenFang's (its guide's "A2A API Endpoints"): POST {url}/tasks/send
//     in JSON-RPC, answered with the bare task; GET {url}/tasks/{id} and
//     POST {url}/tasks/{id}/cancel;
//   - kagent's (methods set, from the card's endpoints[type=a2a]): every
//     method JSON-RPC at url: tasks/send, tasks/status (or tasks/get),
//     tasks/cancel, and tasks/sendSubscribe, whose events come over SSE.
//
// Tasks are {id, sessionId, status, messages or history, artifacts};
// sessionId is the context id, and status a state or {state, message}.
type tasksClient struct {
	url       string
	http      *http.Client
	rpc       bool // kagent's form
	subscribe bool // tasks/sendSubscribe is offered
	status    string
	seq       atomic.Int64

	// streams are the tasks/sendSubscribe streams by task id: those open,
	// which end at Destroy, and the last maxTaskStreams that ended (done,
	// oldest first), for a wait that joins after its task's stream ended.
	mu      sync.Mutex
	streams map[string]*taskStream
	done    []string
	ctx     context.Context
	stop    context.CancelFunc
}

// maxTaskStreams bounds the sendSubscribe streams open at once to one
// agent; past it, messages go by tasks/send and their tasks are polled.
const maxTaskStreams = 32

// dialTasks connects to an agent in the tasks/send dialect.
func (d *Dialer) dialTasks(info *cardInfo, own bool) *Conn {
	endpoint := strings.TrimSuffix(info.card.URL, "/")
	c := &tasksClient{url: endpoint, http: d.http(endpoint, own), rpc: info.methods != nil,
		subscribe: slices.Contains(info.methods, "tasks/sendSubscribe"), status: "tasks/get", streams: map[string]*taskStream{}}
	if slices.Contains(info.methods, "tasks/status") {
		c.status = "tasks/status"
	}
	c.ctx, c.stop = context.WithCancel(context.Background())
	return &Conn{card: info.card, client: c, streaming: c.subscribe, protocol: "tasks"}
}

func (c *tasksClient) Destroy() error {
	c.stop()
	return nil
}

// Wire shapes of the tasks/send dialect.
type tsPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Name     string          `json:"name,omitempty"`
	MimeType string          `json:"mime_type,omitempty"`
}

type tsMessage struct {
	Role     string         `json:"role"`
	Parts    []tsPart       `json:"parts"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

type tsArtifact struct {
	Name  string   `json:"name"`
	Parts []tsPart `json:"parts"`
}

// tsStatus is a task's status: OpenFang's is its state alone, A2A's
// original one an object.
type tsStatus struct {
	State   string     `json:"state"`
	Message *tsMessage `json:"message"`
}

func (s *tsStatus) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &s.State)
	}
	type plain tsStatus
	return json.Unmarshal(b, (*plain)(s))
}

type tsTask struct {
	ID        string       `json:"id"`
	SessionID string       `json:"sessionId"`
	Status    tsStatus     `json:"status"`
	Messages  []tsMessage  `json:"messages"`
	History   []tsMessage  `json:"history"`
	Artifacts []tsArtifact `json:"artifacts"`
}

// said is the task's messages: OpenFang's messages, or the history.
func (t *tsTask) said() []tsMessage {
	if len(t.Messages) > 0 {
		return t.Messages
	}
	return t.History
}

type tsSendParams struct {
	ID        string    `json:"id,omitempty"`
	SessionID string    `json:"sessionId"`
	Message   tsMessage `json:"message"`
}

// fromTasksState maps the dialect's states onto A2A's: OpenFang's
// "inputRequired" and "cancelled", the original "input-required" and
// "canceled".
func fromTasksState(s string) a2a.TaskState {
	switch strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s)) {
	case "submitted":
		return a2a.TaskStateSubmitted
	case "working":
		return a2a.TaskStateWorking
	case "inputrequired":
		return a2a.TaskStateInputRequired
	case "authrequired":
		return a2a.TaskStateAuthRequired
	case "completed":
		return a2a.TaskStateCompleted
	case "cancelled", "canceled":
		return a2a.TaskStateCanceled
	case "failed":
		return a2a.TaskStateFailed
	case "rejected":
		return a2a.TaskStateRejected
	}
	return a2a.TaskStateUnknown
}

func toTasksMessage(m *a2a.Message) tsMessage {
	out := tsMessage{Role: "user", Metadata: m.Metadata}
	for _, p := range m.Parts {
		switch v := p.(type) {
		case a2a.TextPart:
			out.Parts = append(out.Parts, tsPart{Type: "text", Text: v.Text})
		case a2a.DataPart:
			data, _ := json.Marshal(v.Data)
			out.Parts = append(out.Parts, tsPart{Type: "data", Data: data})
		}
	}
	return out
}

func fromTasksParts(parts []tsPart) a2a.ContentParts {
	var out a2a.ContentParts
	for _, p := range parts {
		switch {
		case p.Type == "text" || p.Type == "" && p.Text != "":
			out = append(out, a2a.TextPart{Text: p.Text})
		case len(p.Data) > 0 && string(p.Data) != "null" && p.Type == "data":
			out = append(out, dataPart(p.Data))
		case p.Type == "file":
			var b64 string
			_ = json.Unmarshal(p.Data, &b64)
			out = append(out, a2a.FilePart{File: a2a.FileBytes{FileMeta: a2a.FileMeta{Name: p.Name, MimeType: p.MimeType}, Bytes: b64}})
		}
	}
	return out
}

// fromTasksTask is t as a2a-go holds a task. Its messages carry no ids:
// each is numbered by its place, which the agent only appends to. The
// status message, when the agent sends none, is its last message while
// it asks or has failed: what it asked, or why.
func fromTasksTask(t *tsTask) *a2a.Task {
	out := &a2a.Task{ID: a2a.TaskID(t.ID), ContextID: t.SessionID, Status: a2a.TaskStatus{State: fromTasksState(t.Status.State)}}
	for i, m := range t.said() {
		out.History = append(out.History, fromTasksMessage(t, i, m))
	}
	if m := t.Status.Message; m != nil {
		out.Status.Message = fromTasksMessage(t, -1, *m)
		if n := len(out.History); n > 0 && sameMessage(out.History[n-1], out.Status.Message) {
			out.Status.Message = out.History[n-1]
		}
	} else if n := len(out.History); n > 0 && out.History[n-1].Role == a2a.MessageRoleAgent &&
		(out.Status.State == a2a.TaskStateInputRequired || out.Status.State == a2a.TaskStateFailed || out.Status.State == a2a.TaskStateAuthRequired) {
		out.Status.Message = out.History[n-1]
	}
	for i, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, &a2a.Artifact{ID: a2a.ArtifactID(t.ID + "-artifact-" + strconv.Itoa(i)), Name: a.Name, Parts: fromTasksParts(a.Parts)})
	}
	return out
}

// fromTasksMessage is message i of task t (-1: its status message).
func fromTasksMessage(t *tsTask, i int, m tsMessage) *a2a.Message {
	role := a2a.MessageRoleUser
	if m.Role == "agent" {
		role = a2a.MessageRoleAgent
	}
	id := t.ID + "-" + strconv.Itoa(i)
	if i < 0 {
		id = t.ID + "-status-" + strconv.Itoa(len(t.said()))
	}
	return &a2a.Message{ID: id, ContextID: t.SessionID, TaskID: a2a.TaskID(t.ID), Role: role, Parts: fromTasksParts(m.Parts)}
}

func sameMessage(a, b *a2a.Message) bool {
	x, _ := json.Marshal(a.Parts)
	y, _ := json.Marshal(b.Parts)
	return a.Role == b.Role && bytes.Equal(x, y)
}

// SendMessage sends by tasks/sendSubscribe when the agent offers it and
// a stream is free, else by tasks/send. A new conversation gets a
// session id of its own, which the task's context id then is.
func (c *tasksClient) SendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	params := tsSendParams{ID: string(p.Message.TaskID), SessionID: cmp.Or(p.Message.ContextID, a2a.NewContextID()), Message: toTasksMessage(p.Message)}
	if c.subscribe && c.room() {
		return c.sendSubscribe(ctx, params)
	}
	var t tsTask
	if err := c.call(ctx, "tasks/send", c.at("/tasks/send"), params, &t); err != nil {
		return nil, err
	}
	return fromTasksTask(&t), nil
}

// at is the URL of OpenFang's path under url; url itself in kagent's form.
func (c *tasksClient) at(path string) string {
	if c.rpc {
		return c.url
	}
	return c.url + path
}

// GetTask implements Client.
func (c *tasksClient) GetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error) {
	var t tsTask
	var err error
	if c.rpc {
		err = c.call(ctx, c.status, c.url, map[string]any{"id": q.ID}, &t)
	} else {
		err = c.rest(ctx, http.MethodGet, "/tasks/"+url.PathEscape(string(q.ID)), &t)
	}
	if err != nil {
		return nil, err
	}
	return fromTasksTask(&t), nil
}

// CancelTask implements Client.
func (c *tasksClient) CancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	var t tsTask
	var err error
	if c.rpc {
		err = c.call(ctx, "tasks/cancel", c.url, map[string]any{"id": p.ID}, &t)
	} else {
		err = c.rest(ctx, http.MethodPost, "/tasks/"+url.PathEscape(string(p.ID))+"/cancel", &t)
	}
	if err != nil {
		return nil, err
	}
	return fromTasksTask(&t), nil
}

// call sends one JSON-RPC request of method to endpoint and decodes its
// result into out.
func (c *tasksClient) call(ctx context.Context, method, endpoint string, params, out any) error {
	resp, id, err := c.post(ctx, method, endpoint, params, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return readAnswer(resp, method, id, out)
}

// rest sends a request to OpenFang's path under url.
func (c *tasksClient) rest(ctx context.Context, verb, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, verb, c.url+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return readAnswer(resp, verb+" "+path, 0, out)
}

func (c *tasksClient) post(ctx context.Context, method, endpoint string, params any, accept string) (resp *http.Response, id int64, err error) {
	id = c.seq.Add(1)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, id, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	resp, err = c.http.Do(req)
	return resp, id, err
}

// readAnswer decodes an answer to what (a method, or a REST request):
// a JSON-RPC response to request id (0: no envelope expected), or the
// bare task OpenFang answers with. A 404 is a task not found.
func readAnswer(resp *http.Response, what string, id int64, out any) error {
	data, err := io.ReadAll(resp.Body) // capped (Dialer.HTTP)
	switch {
	case errors.Is(err, fault.ErrAnswerTooLarge):
		return fmt.Errorf("%s: %w", what, err)
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s: HTTP 404", a2a.ErrTaskNotFound, what)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s: HTTP %d", what, resp.StatusCode)
	}
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("%s: malformed response: %w", what, err)
	}
	if env.JSONRPC == "" && env.Result == nil {
		return decodeTask(what, data, out)
	}
	var r v1Response[json.RawMessage]
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("%s: malformed response: %w", what, err)
	}
	if id != 0 {
		if err := r.check(what, id); err != nil {
			return err
		}
	} else if r.Error != nil {
		return v1Err(r.Error)
	}
	return decodeTask(what, r.Result, out)
}

func decodeTask(what string, data []byte, out any) error {
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: malformed task: %w", what, err)
	}
	if t, ok := out.(*tsTask); ok && t.ID == "" {
		return fmt.Errorf("%s: the agent answered a task without an id", what)
	}
	return nil
}

// taskStream is what one tasks/sendSubscribe stream has told of its
// task: the task as it stands, and a channel closed at its next change.
type taskStream struct {
	mu      sync.Mutex
	task    tsTask
	changed chan struct{}
	ended   bool
}

// room tells whether another stream may open.
func (c *tasksClient) room() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	open := 0
	for _, s := range c.streams {
		if !s.over() {
			open++
		}
	}
	return open < maxTaskStreams
}

// sendSubscribe sends by tasks/sendSubscribe and returns the task its
// first event tells of; the stream is read on in the background, until
// the task settles, the stream ends, or Destroy.
func (c *tasksClient) sendSubscribe(ctx context.Context, params tsSendParams) (a2a.SendMessageResult, error) {
	streamCtx, cancel := context.WithCancel(c.ctx)
	stop := context.AfterFunc(ctx, cancel) // until the first event
	resp, id, err := c.post(streamCtx, "tasks/sendSubscribe", c.url, params, "text/event-stream")
	if err != nil {
		cancel()
		return nil, err
	}
	if media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); media != "text/event-stream" {
		defer cancel()
		defer resp.Body.Close()
		var t tsTask
		if err := readAnswer(resp, "tasks/sendSubscribe", id, &t); err != nil {
			return nil, err
		}
		return fromTasksTask(&t), nil
	}
	events := sseResults[tsEvent](resp.Body, "tasks/sendSubscribe", id)
	next, end := iter.Pull2(events)
	first, err, ok := next()
	if !ok || err != nil || first.ID == "" {
		end()
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("tasks/sendSubscribe: the stream told of no task: %w", cmp.Or(err, io.ErrUnexpectedEOF))
	}
	if !stop() {
		end()
		resp.Body.Close()
		cancel()
		return nil, ctx.Err()
	}
	s := &taskStream{task: tsTask{ID: first.ID, SessionID: cmp.Or(first.SessionID, params.SessionID), History: []tsMessage{params.Message}}, changed: make(chan struct{})}
	s.apply(first)
	c.mu.Lock()
	if old := c.streams[first.ID]; old != nil {
		old.end()
	}
	c.streams[first.ID] = s
	c.mu.Unlock()
	snapshot := s.snapshot()
	go func() {
		defer cancel()
		defer resp.Body.Close()
		defer end()
		defer c.drop(first.ID, s)
		for ev, err, ok := next(); ok && err == nil && s.apply(ev); ev, err, ok = next() {
		}
	}()
	return snapshot, nil
}

// drop ends stream s of task id; the oldest ended stream past
// maxTaskStreams is forgotten.
func (c *tasksClient) drop(id string, s *taskStream) {
	s.end()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = append(c.done, id)
	for len(c.done) > maxTaskStreams {
		old := c.done[0]
		c.done = c.done[1:]
		if st := c.streams[old]; st != nil && st.over() {
			delete(c.streams, old)
		}
	}
}

// tsEvent is a sendSubscribe event: a status update (final when the
// stream ends with it) or an artifact update, of task ID.
type tsEvent struct {
	ID        string      `json:"id"`
	SessionID string      `json:"sessionId"`
	Status    *tsStatus   `json:"status"`
	Artifact  *tsArtifact `json:"artifact"`
	Final     bool        `json:"final"`
}

// apply records an event; false once the stream has nothing more to
// tell (a final event).
func (s *taskStream) apply(ev tsEvent) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.Status != nil {
		s.task.Status.State = ev.Status.State
		if m := ev.Status.Message; m != nil {
			if n := len(s.task.History); n == 0 || !sameTasksMessage(s.task.History[n-1], *m) {
				s.task.History = append(s.task.History, *m)
			}
		}
	}
	if ev.Artifact != nil {
		s.task.Artifacts = append(s.task.Artifacts, *ev.Artifact)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return !ev.Final
}

func sameTasksMessage(a, b tsMessage) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func (s *taskStream) snapshot() *a2a.Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.task
	return fromTasksTask(&t)
}

// watch is the task as it stands, a channel closed at its next change,
// and whether the stream has ended.
func (s *taskStream) watch() (*a2a.Task, <-chan struct{}, bool) {
	s.mu.Lock()
	t, ch, ended := s.task, s.changed, s.ended
	s.mu.Unlock()
	return fromTasksTask(&t), ch, ended
}

func (s *taskStream) over() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

func (s *taskStream) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// errNoStream: the task has no sendSubscribe stream open; it is polled.
var errNoStream = errors.New("no tasks/sendSubscribe stream of the task is open")

// ResubscribeToTask follows the task's sendSubscribe stream, if it has
// one open: the task, each time it changes. The dialect has no method to
// join a stream again, so a task without one is polled.
func (c *tasksClient) ResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		c.mu.Lock()
		s := c.streams[string(p.ID)]
		c.mu.Unlock()
		if s == nil {
			yield(nil, errNoStream)
			return
		}
		for {
			t, changed, ended := s.watch()
			if !yield(t, nil) || ended {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
	}
}

// fallback speaks v0.3 until the agent says it knows no such method or
// path (-32601, or a 404), then tasks/send, for good: an agent whose
// card claims v0.3 while it speaks only tasks/send (OpenFang's answers
// message/send at /a2a with a 404).
type fallback struct {
	Client
	tasks Client
	moved atomic.Bool
}

func (f *fallback) fell() bool { return f.moved.Load() }

func (f *fallback) now() Client {
	if f.moved.Load() {
		return f.tasks
	}
	return f.Client
}

// unspoken tells whether err says the agent does not speak v0.3: a2a-go
// reports a 404 as "unexpected HTTP status: 404 Not Found".
func unspoken(err error) bool {
	return errors.Is(err, a2a.ErrMethodNotFound) || err != nil && strings.Contains(err.Error(), "unexpected HTTP status: 404")
}

// SendMessage implements Client.
func (f *fallback) SendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	if f.moved.Load() {
		return f.tasks.SendMessage(ctx, p)
	}
	res, err := f.Client.SendMessage(ctx, p)
	if !unspoken(err) {
		return res, err
	}
	f.moved.Store(true)
	return f.tasks.SendMessage(ctx, p)
}

// GetTask implements Client.
func (f *fallback) GetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error) {
	return f.now().GetTask(ctx, q)
}

// CancelTask implements Client.
func (f *fallback) CancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	return f.now().CancelTask(ctx, p)
}

// ResubscribeToTask implements Client.
func (f *fallback) ResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	return f.now().ResubscribeToTask(ctx, p)
}

// Destroy implements Client.
func (f *fallback) Destroy() error {
	return errors.Join(f.Client.Destroy(), f.tasks.Destroy())
}
