package a2a

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
)

// Cancel asks the task's agent to cancel it; asked is false when the task
// had already ended, and nothing was asked.
func (s *Store) Cancel(ctx context.Context, id string) (v TaskView, asked bool, err error) {
	t, err := s.get(id)
	if err != nil {
		return TaskView{}, false, err
	}
	if t.direct || t.final() {
		return t.view(), false, nil
	}
	conn, err := t.agent.Conn()
	if err != nil {
		return t.view(), false, fmt.Errorf("task %s is bound to %s: %w", id, t.agent.Name(), err)
	}
	var cur *a2a.Task
	if err := ask(ctx, t.agent, "the cancellation", func(ctx context.Context) (err error) {
		cur, err = conn.client.CancelTask(ctx, &a2a.TaskIDParams{ID: a2a.TaskID(t.remote)})
		return err
	}); err != nil && !t.forgotten(err) { // lost: the view says so
		return t.view(), true, err
	}
	t.apply(cur)
	return t.view(), true, nil
}

// cancelsWithin bounds the cancellations of a session's end or a detach:
// an agent that answers none holds the session's end that long.
const cancelsWithin = 5 * time.Second

// CancelUnfinished cancels, best effort and a few at a time, every task of
// the session still running at agent a (at every agent when a is nil):
// the session is ending, or a is being detached, after which nothing
// could cancel them. It returns how many the agent said it cancelled. A
// detached agent's tasks that it did not are lost: nothing can tell of
// them any more, and a store full of them took no new task.
func (s *Store) CancelUnfinished(a Agent) int {
	var n atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), cancelsWithin)
	defer cancel()
	tasks := slices.DeleteFunc(s.all(), func(t *task) bool { return a != nil && t.agent != a })
	atAgents(ctx, tasks, func(t *task, conn *Conn) {
		cur, err := cancelTask(ctx, conn, t.remote)
		if err != nil {
			t.forgotten(err)
			return
		}
		if t.apply(cur); t.final() { // list_tasks shows what became of it
			n.Add(1)
		}
	})
	if a != nil {
		for _, t := range s.all() {
			if t.agent == a && !t.final() {
				t.lose("its agent " + a.Name() + " was detached before it ended; what it last said is kept")
			}
		}
	}
	return int(n.Load())
}

// cancelTask asks an agent to cancel a task, best effort, briefly, and
// returns the task as the agent then tells it.
func cancelTask(ctx context.Context, conn *Conn, id string) (*a2a.Task, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return conn.client.CancelTask(ctx, &a2a.TaskIDParams{ID: a2a.TaskID(id)})
}
