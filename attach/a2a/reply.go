package a2a

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/guard"
)

// Reply continues a task (one that asked for input) in its context, then
// waits like Wait.
func (s *Store) Reply(ctx context.Context, id, message string, timeout time.Duration, onUpdate func(TaskView)) (TaskView, error) {
	t, err := s.get(id)
	if err != nil {
		return TaskView{}, err
	}
	if t.direct {
		return TaskView{}, fmt.Errorf("%w: task %s was a direct reply; start a new one with spawn_agent (context_id %s keeps the conversation)", ErrTaskFinished, id, t.contextID)
	}
	if t.final() { // before the agent: one detached ended its tasks
		return t.view(), t.finished()
	}
	conn, err := t.agent.Conn()
	if err != nil {
		return t.view(), fmt.Errorf("task %s is bound to %s: %w", id, t.agent.Name(), err)
	}
	// The question the message answers, as the caller last saw it, and
	// the messages taken by then, read together: a message taken is
	// counted and its task's answer applied together too.
	question, sent := t.askedAfter()
	t.sending.Lock()
	defer t.sending.Unlock()
	if err := t.turnTaken(question, sent); err != nil {
		return t.view(), err
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: message})
	msg.TaskID, msg.ContextID = a2a.TaskID(t.remote), t.contextID
	res, answered, err := t.send(ctx, conn, msg)
	if err != nil {
		return t.view(), err
	}
	if r, ok := res.(*a2a.Message); ok {
		// The agent answered the message itself, not with a task update
		// ("that is not a number"): that is its answer, and the task is
		// as it was, still asking what it asked. It was dropped, and the
		// wait held its whole timeout. Nor is it counted as taken: a
		// message sent alongside for the same question still goes.
		t.answeredWith(msg, r)
		return t.view(), nil
	}
	r, _ := res.(*a2a.Task)
	t.took(r)
	return t.wait(ctx, timeout, onUpdate, answered)
}

// turnTaken says why a message sent for question, when the task had
// taken sent messages, may not go now that its turn has come: nil when
// it may.
func (t *task) turnTaken(question string, sent int) error {
	if t.final() { // perhaps after a message sent just before
		return t.finished()
	}
	if _, now := t.askedAfter(); now != sent {
		// Sent now, it would answer a question its sender never saw:
		// of "Ann" and "Bea" sent at once to a task asking a name, then
		// an age, one became the name and the other the age.
		return t.answeredMeanwhile(question)
	}
	return nil
}

// send sends msg to the task, within the agent's timeout, and returns the
// agent's answer and the status message the message answered ("" when
// the task asked nothing); its error says why the agent did not take it
// (refused).
func (t *task) send(ctx context.Context, conn *Conn, msg *a2a.Message) (res a2a.SendMessageResult, answered string, err error) {
	asking := t.asking()
	err = ask(ctx, t.agent, "the message", func(ctx context.Context) (err error) {
		if !asking {
			// The task may have asked since the gateway last looked (a
			// spawn_agent answered "submitted", no wait_task since): its
			// question is taken in first, so that it reads before the
			// answer in the task's history, and wait knows what was
			// answered.
			if _, gerr := t.look(ctx, conn); gerr == nil {
				asking = t.asking()
			}
		}
		answered = t.statusMessageID()
		res, err = sendAgain(ctx, conn, msg, asking)
		if err != nil && asking {
			// Refused while the gateway's view said it asked: the task
			// may have ended since (refused tells that from the rest).
			_, _ = t.look(ctx, conn)
		}
		return err
	})
	if err != nil {
		return nil, "", t.refused(err, asking)
	}
	return res, answered, nil
}

// sendAgain sends msg, and again after an internal error while the task
// asks (replyRetries).
func sendAgain(ctx context.Context, conn *Conn, msg *a2a.Message, asking bool) (a2a.SendMessageResult, error) {
	res, err := conn.client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	for _, d := range replyRetries {
		if !asking || !errors.Is(err, a2a.ErrInternalError) || !fault.Sleep(ctx, d) {
			break
		}
		res, err = conn.client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	}
	return res, err
}

// answeredWith records a message sent to the task and the agent's reply
// to it, a message, as the agent's: both join the task's history, after
// the question they answer (keepSaid), the task's state unchanged.
func (t *task) answeredWith(sent, reply *a2a.Message) {
	r := *reply
	r.Role = a2a.MessageRoleAgent
	if r.ID == "" { // the history tells messages apart by their ids
		r.ID = a2a.NewMessageID()
	}
	t.update(func(next *a2a.Task) bool {
		next.History = append(slices.Clone(next.History), sent, &r)
		return true
	})
}

// askedAfter is the task's status message's id ("" when it has none) and
// the count of messages it had taken when it was last seen so.
func (t *task) askedAfter() (question string, sent int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last != nil && t.last.Status.Message != nil {
		question = t.last.Status.Message.ID
	}
	return question, t.sent
}

// took counts a message the agent took into the task, and applies the
// task it answered with, if any, at once.
func (t *task) took(answer *a2a.Task) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent++
	if t.takes(answer) {
		t.applyLocked(answer)
	}
}

// answeredMeanwhile refuses a message sent for question (a status
// message's id), which another message answered while it waited: it
// quotes what the task asks now, if it asks something else.
func (t *task) answeredMeanwhile(question string) error {
	if t.asking() && t.statusMessageID() != question {
		return fmt.Errorf("%w: task %s now asks %q, as another message_task answered the question this message was sent for; this one was not sent: answer the new question with message_task",
			ErrAnsweredMeanwhile, t.id, t.question())
	}
	return fmt.Errorf("%w: another message_task answered the question this message was sent for, and task %s is %s; this one was not sent: wait_task until the task asks again",
		ErrAnsweredMeanwhile, t.id, t.view().State)
}

// question is the text of the task's status message, what it asks when it
// asks, cut to 500 characters.
func (t *task) question() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil || t.last.Status.Message == nil {
		return ""
	}
	var parts []string
	for _, p := range t.last.Status.Message.Parts {
		parts = append(parts, partText(p))
	}
	return guard.Text(strings.Join(parts, " "), 500)
}

// finished says that the task, finished, takes no more messages, and
// how to go on: with its agent, or with the agent attached again since
// it was detached.
func (t *task) finished() error {
	t.mu.Lock()
	lost := t.lost
	t.mu.Unlock()
	again := fmt.Sprintf("start a new one with spawn_agent and context_id %s", t.contextID)
	if as, detached := t.agent.Detached(); detached {
		// Told to spawn_agent on an agent no longer attached, a model
		// was refused again; told to attach one attached again since, it
		// was told it was attached already.
		again = fmt.Sprintf("its agent %s is detached: attach it again to start a new one", t.agent.Name())
		if as != "" {
			again = fmt.Sprintf("its agent was detached and is attached again, as %s: start a new one with spawn_agent on %s and context_id %s", as, as, t.contextID)
		}
	}
	if lost != "" { // not "has finished (submitted)", as a lost task read
		return fmt.Errorf("%w: task %s is over: %s; %s", ErrTaskFinished, t.id, lost, again)
	}
	return fmt.Errorf("%w: task %s has finished (%s); %s", ErrTaskFinished, t.id, t.view().State, again)
}

// refused says why the task's agent did not take a message: the agent's
// own error, or, where the task was not waiting for input, that it was
// not. An agent on a2a-go answers a message to a working task with a bare
// internal error, and one to a finished task with "invalid params".
func (t *task) refused(err error, asking bool) error {
	v := t.view()
	switch {
	case v.Final:
		return fmt.Errorf("%w (the agent said: %v)", t.finished(), err)
	case asking || errors.Is(err, fault.ErrTimeout) || errors.Is(err, fault.ErrUpstreamDown):
		return err
	}
	return fmt.Errorf("%w: %s did not take the message, as task %s is %s; wait_task until it asks for input (input-required) or ends, or cancel_task it (the agent said: %v)",
		ErrTaskBusy, t.agent.Name(), t.id, v.State, err)
}

// replyRetries are the waits before a reply is sent again after an
// internal error: an agent on a2a-go refuses so, taking nothing of it, a
// reply that comes while the turn that asked for it is still being torn
// down (ErrExecutionInProgress, a2aproject/a2a-go#303), a window that has
// been seen to last seconds. About 3 s in all.
var replyRetries = []time.Duration{50 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond, time.Second, 1500 * time.Millisecond}

// statusMessageID identifies the task's current status message ("" when
// it has none).
func (t *task) statusMessageID() string {
	question, _ := t.askedAfter()
	return question
}
