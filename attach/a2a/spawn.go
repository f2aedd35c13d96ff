package a2a

import (
	"context"
	"fmt"

	"github.com/a2aproject/a2a-go/a2a"
)

// Spawn sends message, with metadata if any, to an agent without waiting
// and returns the task. An agent that answers with a message, not a
// task, gives a task that is already completed.
func (s *Store) Spawn(ctx context.Context, a Agent, message, contextID string, metadata map[string]any) (TaskView, error) {
	if contextID != "" {
		contextID = s.agentContext(contextID)
	}
	if other := s.contextOf(contextID, a); other != "" {
		return TaskView{}, fmt.Errorf("%w: context_id %s is a conversation with %s, not %s; spawn_agent on %s to go on with it, or leave context_id out to begin a new one",
			ErrOtherContext, contextID, other, a.Name(), other)
	}
	conn, err := a.Reach(ctx)
	if err != nil {
		return TaskView{}, err
	}
	if err := s.room(); err != nil {
		return TaskView{}, err
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: message})
	msg.ContextID, msg.Metadata = contextID, metadata
	var res a2a.SendMessageResult
	if err := ask(ctx, a, "the message", func(ctx context.Context) (err error) {
		res, err = conn.client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
		return err
	}); err != nil {
		return TaskView{}, err
	}
	t := &task{agent: a}
	switch r := res.(type) {
	case *a2a.Task:
		t.remote, t.contextID = string(r.ID), r.ContextID
		t.id = t.remote
		t.apply(r)
	case *a2a.Message:
		t.id, t.contextID, t.direct = "msg-"+r.ID, r.ContextID, true
		t.apply(&a2a.Task{ContextID: r.ContextID,
			History: []*a2a.Message{msg, r}, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}})
	default:
		return TaskView{}, fmt.Errorf("%s: the agent answered neither a task nor a message", a.Name())
	}
	if err := s.add(t); err != nil {
		// Filled by spawns running alongside since room said yes.
		if !t.direct && !t.final() {
			go cancelTask(context.Background(), conn, t.remote)
		}
		return TaskView{}, err
	}
	return t.view(), nil
}
