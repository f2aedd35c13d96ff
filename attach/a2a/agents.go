package a2a

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ardgate/ardgate/attach/fault"
)

// Agent is an attached agent as the task engine sees it. Its owner
// (attach's attachment) keeps its connection and its status: the engine
// asks it for the one and tells it what a request found of the other.
type Agent interface {
	// Name is the agent's name in the session; URN its entry's.
	Name() string
	URN() string
	// Conn is the agent's live connection, or why it has none.
	Conn() (*Conn, error)
	// Reach is Conn, for a spawn: an agent that could not be reached
	// before is tried again when its owner allows.
	Reach(ctx context.Context) (*Conn, error)
	// Reached records how a request to the agent went.
	Reached(err error)
	// Timeout bounds one request to the agent.
	Timeout() time.Duration
	// Detached says whether the agent was detached and, when its URN was
	// attached again since, under what name ("" when it was not).
	Detached() (again string, detached bool)
}

// ask runs one request to agent a, bounded as a proxied call is: an
// agent that never answered held the tool call, and the client, for
// good. Its error says which agent failed and how.
func ask(ctx context.Context, a Agent, what string, do func(context.Context) error) error {
	parent := ctx
	timeout := a.Timeout()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	err := do(ctx)
	a.Reached(err)
	switch {
	case err == nil:
		return nil
	case parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &AgentError{URN: a.URN(), Err: fault.NoAnswer(a.Name(), what, timeout)}
	}
	return &AgentError{URN: a.URN(), Err: fmt.Errorf("%s: %w", a.Name(), describe(err))}
}

// agentRequestsAtOnce bounds the requests that one listing of tasks, one
// session's end, or one round of health checks (attach's CheckAgents)
// sends to agents at once: a session ending with 300 tasks sent 300
// cancellations at once, and kept 256 connections open after.
const agentRequestsAtOnce = 8

// atAgents runs do for each of tasks that is still running at its agent,
// a few at a time (FewAtATime).
func atAgents(ctx context.Context, tasks []*task, do func(*task, *Conn)) {
	type running struct {
		t    *task
		conn *Conn
	}
	var at []running
	for _, t := range tasks {
		if t.direct || t.final() {
			continue
		}
		if conn, err := t.agent.Conn(); err == nil {
			at = append(at, running{t, conn})
		}
	}
	FewAtATime(ctx, at, func(r running) { do(r.t, r.conn) })
}

// FewAtATime runs do for each item, agentRequestsAtOnce at a time, and
// returns when all have ended. Those still waiting their turn when ctx
// ends are skipped: the agents are too slow for them all.
func FewAtATime[T any](ctx context.Context, items []T, do func(T)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, agentRequestsAtOnce)
	for _, item := range items {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				return
			}
			do(item)
		})
	}
	wg.Wait()
}
