package openfang

import (
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
)

// Task states, as OpenFang's A2aTaskStatus serialises them (section "Task
// Lifecycle", "Task States"; serde's camelCase).
const (
	StateSubmitted     = "submitted"
	StateWorking       = "working"
	StateInputRequired = "inputRequired"
	StateCompleted     = "completed"
	StateCancelled     = "cancelled"
	StateFailed        = "failed"
)

// Part is an A2aPart; only text parts are made here ("Message Format").
type Part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Message is an A2aMessage: role "user" or "agent".
type Message struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Artifact is an A2aArtifact ("Artifacts").
type Artifact struct {
	Name  string `json:"name"`
	Parts []Part `json:"parts"`
}

// Task is an A2aTask, as the guide's "Response (completed task)" shows it.
type Task struct {
	ID        string     `json:"id"`
	SessionID string     `json:"sessionId,omitempty"`
	Status    string     `json:"status"`
	Messages  []Message  `json:"messages"`
	Artifacts []Artifact `json:"artifacts"`
}

// Final tells whether the task has ended.
func (t Task) Final() bool {
	return t.Status == StateCompleted || t.Status == StateCancelled || t.Status == StateFailed
}

// Question is what an "ask" task asks.
const Question = "what is your name?"

// Store is the guide's A2aTaskStore ("A2aTaskStore"): in memory, its
// agent's behaviour picked by the first word of a message's text:
//
//   - "hold": stays working until the test calls Finish (Held tells its id);
//   - "ask": asks Question (inputRequired); a message sent with the task's
//     id answers it, and the task completes with "hello <answer>";
//   - "fail": fails, its agent message "Error: the agent failed as asked";
//   - anything else: completes at once with "reviewed: <text>".
type Store struct {
	// Held receives the id of every "hold" task; buffered, an id not sent
	// when it is full.
	Held chan string

	mu      sync.Mutex
	tasks   map[string]*Task
	changed map[string]chan struct{} // closed at the task's next change
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{Held: make(chan string, 64), tasks: map[string]*Task{}, changed: map[string]chan struct{}{}}
}

func text(m Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func agentSays(s string) Message {
	return Message{Role: "agent", Parts: []Part{{Type: "text", Text: s}}}
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Send takes a message: to the task id when it asks for input, else to a
// new task (the guide's flow, "Task Submission Flow"). A message to a task
// that asks nothing is refused.
func (s *Store) Send(id, sessionID string, m Message) (Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tasks[id]; ok {
		if t.Status != StateInputRequired {
			return Task{}, fmt.Errorf("task %s is %s, not waiting for input", id, t.Status)
		}
		t.Messages = append(t.Messages, m)
		t.Messages = append(t.Messages, agentSays("hello "+text(m)))
		t.Status = StateCompleted
		s.notify(t.ID)
		return s.copyOf(t), nil
	}
	t := &Task{ID: newID(), SessionID: sessionID, Status: StateWorking, Messages: []Message{m}, Artifacts: []Artifact{}}
	word, _, _ := strings.Cut(strings.TrimSpace(text(m)), " ")
	switch strings.ToLower(word) {
	case "hold":
		select {
		case s.Held <- t.ID:
		default: // no test is listening: the task is held all the same
		}
	case "ask":
		t.Status = StateInputRequired
		t.Messages = append(t.Messages, agentSays(Question))
	case "fail":
		t.Status = StateFailed
		t.Messages = append(t.Messages, agentSays("Error: the agent failed as asked"))
	default:
		t.Status = StateCompleted
		t.Messages = append(t.Messages, agentSays("reviewed: "+text(m)))
	}
	s.tasks[t.ID] = t
	return s.copyOf(t), nil
}

// Get returns a task; false when there is none.
func (s *Store) Get(id string) (Task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return Task{}, false
	}
	return s.copyOf(t), true
}

// Watch returns a task and a channel closed at its next change.
func (s *Store) Watch(id string) (Task, <-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return Task{}, nil, false
	}
	ch, ok := s.changed[id]
	if !ok {
		ch = make(chan struct{})
		s.changed[id] = ch
	}
	return s.copyOf(t), ch, true
}

// Cancel sets a running task's status to cancelled ("POST
// /a2a/tasks/{id}/cancel"); an ended one is left as it is.
func (s *Store) Cancel(id string) (Task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return Task{}, false
	}
	if !t.Final() {
		t.Status = StateCancelled
		s.notify(id)
	}
	return s.copyOf(t), true
}

// Finish completes a held task with the agent's answer, also as an
// artifact named "result".
func (s *Store) Finish(id, answer string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || t.Final() {
		return
	}
	t.Messages = append(t.Messages, agentSays(answer))
	t.Artifacts = append(t.Artifacts, Artifact{Name: "result", Parts: []Part{{Type: "text", Text: answer}}})
	t.Status = StateCompleted
	s.notify(id)
}

func (s *Store) notify(id string) {
	if ch, ok := s.changed[id]; ok {
		close(ch)
		delete(s.changed, id)
	}
}

func (s *Store) copyOf(t *Task) Task {
	c := *t
	c.Messages = append([]Message(nil), t.Messages...)
	c.Artifacts = append([]Artifact{}, t.Artifacts...)
	return c
}
