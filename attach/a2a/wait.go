package a2a

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/ardgate/ardgate/attach/fault"
)

// Wait waits up to timeout for a task to finish or to need input,
// following the agent's stream when it streams and polling when not.
// onUpdate hears every change on the way.
func (s *Store) Wait(ctx context.Context, id string, timeout time.Duration, onUpdate func(TaskView)) (TaskView, error) {
	t, err := s.get(id)
	if err != nil {
		return TaskView{}, err
	}
	return t.wait(ctx, timeout, onUpdate, "")
}

// wait is Wait on a task; answered, if set, is the status message of a
// question just answered: until the agent moves past it, the task is not
// waiting for input again, only not yet updated.
func (t *task) wait(ctx context.Context, timeout time.Duration, onUpdate func(TaskView), answered string) (TaskView, error) {
	if t.direct || t.final() {
		return t.view(), nil
	}
	conn, err := t.agent.Conn()
	if err != nil {
		return t.view(), fmt.Errorf("task %s is bound to %s: %w", t.id, t.agent.Name(), err)
	}
	// The first look is made whatever the timeout, within the agent's
	// call timeout: a wait of 0 asks for the task as it is now, not as the
	// gateway last saw it. Every look is bounded so: an agent that does
	// not answer one is said not to, where the wait went on, or ended, with
	// the task as last seen, saying nothing.
	w := waiting{t: t, conn: conn, onUpdate: onUpdate, answered: answered, at: t.agent.Timeout()}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := w.refresh(parent); err != nil {
		return t.view(), t.waitError(parent, err)
	}
	if conn.streaming && !w.settled() {
		w.follow(ctx)
	}
	err = w.poll(ctx)
	return t.view(), err
}

// waiting is one wait on a task, through conn.
type waiting struct {
	t        *task
	conn     *Conn
	onUpdate func(TaskView) // nil, or hears every change
	answered string         // the status message of a question just answered
	at       time.Duration  // bounds each look
}

// settled tells whether the wait is over: the task finished, or asks for
// input, and not only the question just answered.
func (w *waiting) settled() bool {
	v := w.t.view()
	if v.Final {
		return true
	}
	if v.State != string(a2a.TaskStateInputRequired) && v.State != string(a2a.TaskStateAuthRequired) {
		return false
	}
	return w.answered == "" || w.t.statusMessageID() != w.answered
}

// heard passes the task's view on when changed.
func (w *waiting) heard(changed bool) {
	if changed && w.onUpdate != nil {
		w.onUpdate(w.t.view())
	}
}

// refresh looks at the task within the agent's timeout, from within
// (the first look's parent, else the wait's).
func (w *waiting) refresh(within context.Context) error {
	t := w.t
	look, cancel := context.WithTimeout(within, w.at)
	defer cancel()
	changed, err := t.look(look, w.conn)
	w.heard(changed)
	switch {
	case err == nil, errors.Is(err, a2a.ErrTaskNotFound): // lost: the view says so
		return nil
	case within.Err() == nil && errors.Is(look.Err(), context.DeadlineExceeded):
		return &AgentError{URN: t.agent.URN(), Err: fmt.Errorf("%w; task %s is shown as last seen, %s", fault.NoAnswer(t.agent.Name(), "the look at task "+t.id, w.at), t.id, t.view().State)}
	}
	return describe(err)
}

// follow reads the agent's stream of the task until it settles, the
// stream ends or fails (polling goes on from there), or ctx ends.
func (w *waiting) follow(ctx context.Context) {
	for ev, err := range w.conn.client.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: a2a.TaskID(w.t.remote)}) {
		if err != nil {
			break // fall back to polling
		}
		w.heard(w.t.applyEvent(ev))
		if w.settled() {
			break
		}
	}
	// The stream tells only of what happened after it was joined,
	// after the first look: what the agent said in between (an
	// artifact) would be missing from a task the stream saw settle.
	// One more look takes the agent's own record; should it fail,
	// the stream's view stands.
	if w.settled() && ctx.Err() == nil {
		_ = w.refresh(ctx)
	}
}

// poll looks at the task every 250 ms until it settles; the error is
// waitError's when the wait ends first.
func (w *waiting) poll(ctx context.Context) error {
	for !w.settled() {
		if !fault.Sleep(ctx, 250*time.Millisecond) {
			return w.t.waitError(ctx, ctx.Err())
		}
		if err := w.refresh(ctx); err != nil {
			return w.t.waitError(ctx, err)
		}
	}
	return nil
}

// waitError says why a wait ended early: its own deadline (not an error
// the model must handle: the task still runs), or the agent.
func (t *task) waitError(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil // the view says the task is still running
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		err = fault.Cancelled(context.Cause(ctx))
	}
	t.agent.Reached(err)
	return &AgentError{URN: t.agent.URN(), Err: fmt.Errorf("task %s on %s: %w", t.id, t.agent.Name(), err)}
}
