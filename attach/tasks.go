package attach

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ardgate/ardgate/attach/a2a"
	"github.com/ardgate/ardgate/registry"
)

// The task tools' views and errors are attach/a2a's, named here for the
// tools.
type (
	TaskView    = a2a.TaskView
	TaskMessage = a2a.TaskMessage
	NotShown    = a2a.NotShown
	AgentError  = a2a.AgentError
)

// Errors of the task tools (attach/a2a).
var (
	ErrTaskNotFound      = a2a.ErrTaskNotFound
	ErrTaskLost          = a2a.ErrTaskLost
	ErrNoAgent           = a2a.ErrNoAgent
	ErrStoreFull         = a2a.ErrStoreFull
	ErrTaskFinished      = a2a.ErrTaskFinished
	ErrTaskBusy          = a2a.ErrTaskBusy
	ErrOtherContext      = a2a.ErrOtherContext
	ErrAnsweredMeanwhile = a2a.ErrAnsweredMeanwhile
)

// Spawn sends message to an agent, named as agentFor takes it, without
// waiting, and returns the task (a2a.Store.Spawn).
func (s *Session) Spawn(ctx context.Context, agentName, message, contextID string, metadata map[string]any) (TaskView, error) {
	a, err := s.agentFor(agentName)
	if err != nil {
		return TaskView{}, err
	}
	return s.tasks.Spawn(ctx, taskAgent{s, a}, message, contextID, metadata)
}

// Wait waits up to timeout for a task to finish or to need input
// (a2a.Store.Wait).
func (s *Session) Wait(ctx context.Context, id string, timeout time.Duration, onUpdate func(TaskView)) (TaskView, error) {
	return s.tasks.Wait(ctx, id, timeout, onUpdate)
}

// Reply continues a task that asked for input, then waits like Wait
// (a2a.Store.Reply).
func (s *Session) Reply(ctx context.Context, id, message string, timeout time.Duration, onUpdate func(TaskView)) (TaskView, error) {
	return s.tasks.Reply(ctx, id, message, timeout, onUpdate)
}

// Cancel asks the task's agent to cancel it (a2a.Store.Cancel).
func (s *Session) Cancel(ctx context.Context, id string) (v TaskView, asked bool, err error) {
	return s.tasks.Cancel(ctx, id)
}

// Tasks lists the session's newest tasks (a2a.Store.Tasks).
func (s *Session) Tasks(ctx context.Context, newest int) (views []TaskView, total int) {
	return s.tasks.Tasks(ctx, newest)
}

// cancelUnfinished cancels the session's tasks still running at agent a,
// at every agent when a is nil (a2a.Store.CancelUnfinished).
func (s *Session) cancelUnfinished(a *Attachment) int {
	if a == nil {
		return s.tasks.CancelUnfinished(nil)
	}
	return s.tasks.CancelUnfinished(taskAgent{s, a})
}

// taskAgent is an agent attached to s as its tasks see it (a2a.Agent).
// Two are the same agent when their attachments are.
type taskAgent struct {
	s *Session
	a *Attachment
}

func (t taskAgent) Name() string             { return t.a.Name }
func (t taskAgent) URN() string              { return t.a.URN }
func (t taskAgent) Conn() (*a2a.Conn, error) { return t.a.agentConn() }
func (t taskAgent) Reached(err error)        { t.a.reached(err) }
func (t taskAgent) Timeout() time.Duration   { return t.s.timeout(t.a) }
func (t taskAgent) Reach(ctx context.Context) (*a2a.Conn, error) {
	return t.s.agentReached(ctx, t.a)
}

// Detached says whether the agent was detached, and the name its URN is
// attached under again, if it is.
func (t taskAgent) Detached() (again string, detached bool) {
	if !t.a.removed.Load() {
		return "", false
	}
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if cur := t.s.findLocked(t.a.URN); cur != nil {
		return cur.Name, true
	}
	return "", true
}

// agentFor picks the agent a spawn names (attachment name or URN); with
// no name and exactly one agent attached, that one.
func (s *Session) agentFor(name string) (*Attachment, error) {
	var agents []*Attachment
	key := registry.CanonicalURN(name)
	for _, a := range s.Attachments() {
		switch {
		case a.Kind == KindA2AAgent:
			agents = append(agents, a)
		case name != "" && (a.Name == name || a.URN == key):
			return nil, fmt.Errorf("%w: %s is an MCP server, not an A2A agent: call its tools, named mcp_%s__<tool>", ErrNoAgent, a.Name, a.Name)
		}
	}
	names := func() string {
		var n []string
		for _, a := range agents {
			n = append(n, a.Name)
		}
		if len(n) == 0 {
			return "none are attached; attach an A2A agent with attach_resource first"
		}
		return "attached agents: " + strings.Join(n, ", ")
	}
	if name == "" {
		if len(agents) == 1 {
			return agents[0], nil
		}
		return nil, fmt.Errorf("%w: say which agent (%s)", ErrNoAgent, names())
	}
	for _, a := range agents {
		if a.Name == name || a.URN == key {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%w: %q (%s)", ErrNoAgent, name, names())
}
