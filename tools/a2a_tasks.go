package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

// Task waits: the default, and the most one call may wait.
const (
	defaultWait = 30 * time.Second
	maxWait     = 5 * time.Minute
)

const spawnSchema = `{
  "type": "object",
  "properties": {
    "agent": {"type": "string", "description": "Attached agent, by name or URN; may be omitted when exactly one agent is attached."},
    "message": {"type": "string", "description": "What to ask the agent."},
    "context_id": {"type": "string", "description": "Continue an earlier conversation with this agent (context_id of an earlier task)."},
    "metadata": {"type": "object", "description": "Sent with the message as its metadata, for agents that read it (e.g. {\"provider\": \"anthropic\"})."}
  },
  "required": ["message"],
  "additionalProperties": false
}`

const waitSchema = `{
  "type": "object",
  "properties": {
    "task_id": {"type": "string"},
    "timeout_seconds": {"type": "number", "minimum": 0, "maximum": 300, "description": "How long to wait for the task to finish or ask for input (default 30)."}
  },
  "required": ["task_id"],
  "additionalProperties": false
}`

const messageSchema = `{
  "type": "object",
  "properties": {
    "task_id": {"type": "string"},
    "message": {"type": "string", "description": "The answer the task asked for."},
    "timeout_seconds": {"type": "number", "minimum": 0, "maximum": 300}
  },
  "required": ["task_id", "message"],
  "additionalProperties": false
}`

const taskIDSchema = `{
  "type": "object",
  "properties": {"task_id": {"type": "string"}},
  "required": ["task_id"],
  "additionalProperties": false
}`

func (g *Gateway) taskTools() []server.ServerTool {
	return []server.ServerTool{
		newTool("spawn_agent", "Spawn agent task",
			"Send a message to an attached A2A agent and return at once with a task_id; use wait_task to get the result.",
			spawnSchema, hints{openWorld: true}, g.spawn),
		newTool("wait_task", "Wait for task",
			"Wait for an agent task to finish or to ask for input, up to timeout_seconds; returns its state, messages and artifacts. "+
				"A task still running after the wait is not an error: call wait_task again.",
			waitSchema, hints{readOnly: true, idempotent: true, openWorld: true}, g.wait),
		newTool("message_task", "Message task",
			"Answer a task that asked for input (state input-required), in its context, then wait like wait_task.",
			messageSchema, hints{openWorld: true}, g.message),
		newTool("cancel_task", "Cancel task", "Ask the agent to cancel a running task.",
			taskIDSchema, hints{destructive: true, openWorld: true}, g.cancelTask),
		newTool("list_tasks", "List tasks", "List this session's agent tasks, oldest first: the newest limit of them, each with its state as its agent tells it now, "+
			"and its last message; wait_task a task for all its messages and artifacts.",
			listTasksSchema, hints{readOnly: true, idempotent: true, openWorld: true}, g.listTasks),
	}
}

func (g *Gateway) spawn(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Agent     string          `json:"agent"`
		Message   string          `json:"message"`
		ContextID string          `json:"context_id"`
		Metadata  json.RawMessage `json:"metadata"`
	}
	s, fail := g.begin(ctx, req, "spawn_agent", &a)
	if fail != nil {
		return fail, nil
	}
	if strings.TrimSpace(a.Message) == "" {
		return invalid("spawn_agent", errors.New(`"message" is required, and must say something`)), nil
	}
	metadata, err := messageMetadata(a.Metadata)
	if err != nil {
		return invalid("spawn_agent", err), nil
	}
	v, err := s.att.Spawn(ctx, a.Agent, a.Message, a.ContextID, metadata)
	if err != nil {
		return g.agentFailed(ctx, err), nil
	}
	return taskResult(v), nil
}

// maxMetadata bounds the metadata spawn_agent sends with a message.
const maxMetadata = 16 << 10

// messageMetadata reads spawn_agent's metadata: an object, or none.
func messageMetadata(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if len(raw) > maxMetadata {
		return nil, fmt.Errorf(`"metadata" is over %d KiB`, maxMetadata>>10)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errors.New(`"metadata" must be an object`)
	}
	return m, nil
}

// taskResult is a task's view as a result, its inline images and audio
// given after it as content a client shows a model.
func taskResult(v attach.TaskView) *mcp.CallToolResult {
	res := result(v)
	for _, m := range v.Media {
		if m.Audio {
			res.Content = append(res.Content, mcp.NewAudioContent(m.Data, m.MIMEType))
		} else {
			res.Content = append(res.Content, mcp.NewImageContent(m.Data, m.MIMEType))
		}
	}
	return res
}

type waitArgs struct {
	TaskID  string   `json:"task_id"`
	Message string   `json:"message"`
	Timeout *float64 `json:"timeout_seconds"`
}

func (a waitArgs) timeout() time.Duration {
	if a.Timeout == nil {
		return defaultWait
	}
	return time.Duration(*a.Timeout * float64(time.Second))
}

// check says what is wrong with the arguments of tool, or nil; a
// message is wanted by message_task only. The schema's bounds were taken
// in silence: -1 waited not at all, 1e9 five minutes.
func (a waitArgs) check(tool string) error {
	switch {
	case a.TaskID == "":
		return errors.New(`"task_id" is required`)
	case a.Timeout != nil && (*a.Timeout < 0 || *a.Timeout > maxWait.Seconds()):
		return fmt.Errorf(`"timeout_seconds" must be between 0 and %g`, maxWait.Seconds())
	case tool == "message_task" && strings.TrimSpace(a.Message) == "":
		return errors.New(`"message" is required, and must say something`)
	case tool != "message_task" && a.Message != "":
		return errors.New(`unknown argument "message"; use message_task to answer a task`)
	}
	return nil
}

func (g *Gateway) wait(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return g.followTask(ctx, req, "wait_task"), nil
}

func (g *Gateway) message(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return g.followTask(ctx, req, "message_task"), nil
}

// followTask runs tool, wait_task or message_task: it waits for the task,
// after sending the message for message_task, and reports its updates as
// progress.
func (g *Gateway) followTask(ctx context.Context, req mcp.CallToolRequest, tool string) *mcp.CallToolResult {
	var a waitArgs
	s, fail := g.begin(ctx, req, tool, &a)
	if fail != nil {
		return fail
	}
	if err := a.check(tool); err != nil {
		return invalid(tool, err)
	}
	progress := g.reportProgress(ctx, req, 0)
	defer progress.stop()
	ctx, stop := g.untilStopping(ctx)
	defer stop()
	var v attach.TaskView
	var err error
	if tool == "message_task" {
		v, err = s.att.Reply(ctx, a.TaskID, a.Message, a.timeout(), progress.tasks())
	} else {
		v, err = s.att.Wait(ctx, a.TaskID, a.timeout(), progress.tasks())
	}
	switch {
	case err != nil && errors.Is(context.Cause(ctx), errStopping):
		return failure("shutting_down", "the gateway is shutting down: it stopped waiting on task %s (%s when last seen); the session's tasks are cancelled at their agents as it ends", a.TaskID, v.State)
	case err != nil:
		return g.agentFailed(ctx, err)
	}
	return taskResult(v)
}

// agentFailed is failed for the task tools: a failure of the agent's is
// counted, by its URN, as a proxied call's is; a request its client gave
// up on (ctx, the request's, ended) is not the agent's failure.
func (g *Gateway) agentFailed(ctx context.Context, err error) *mcp.CallToolResult {
	out := g.failed(err)
	var ae *attach.AgentError
	if errors.As(err, &ae) && ctx.Err() == nil {
		var f failureBody
		_ = json.Unmarshal(out.RawStructuredContent, &f)
		g.metrics.upstream.WithLabelValues(ae.URN, f.Code).Inc()
	}
	return out
}

// errStopping ends waits on tasks when the gateway starts to drain: a
// wait holds no work of its own, and held the drain, and the exit, for
// its whole timeout.
var errStopping = errors.New("the gateway is shutting down")

// untilStopping is ctx, ended with errStopping when the drain starts.
func (g *Gateway) untilStopping(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(g.stopping, func() { cancel(errStopping) })
	return ctx, func() { unhook(); cancel(nil) }
}

func (g *Gateway) cancelTask(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		TaskID string `json:"task_id"`
	}
	s, fail := g.begin(ctx, req, "cancel_task", &a)
	if fail != nil {
		return fail, nil
	}
	if a.TaskID == "" {
		return invalid("cancel_task", errors.New(`"task_id" is required`)), nil
	}
	v, asked, err := s.att.Cancel(ctx, a.TaskID)
	if err != nil {
		return g.agentFailed(ctx, err), nil
	}
	out := map[string]any{"task_id": v.ID, "state": v.State, "final": v.Final}
	switch {
	case v.Lost != "":
		out["lost"] = v.Lost
	case !asked:
		out["note"] = "the task had already ended: nothing was cancelled"
	}
	return result(out), nil
}

const listTasksSchema = `{
  "type": "object",
  "properties": {
    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "How many of the newest tasks to list (default 100)."}
  },
  "additionalProperties": false
}`

// taskSummary is a task in list_tasks: a task's whole view, messages and
// artifacts, is wait_task's; a thousand of them made one frame of 16 MB.
type taskSummary struct {
	ID          string              `json:"task_id"`
	Agent       string              `json:"agent"`
	ContextID   string              `json:"context_id,omitempty"`
	State       string              `json:"state"`
	Final       bool                `json:"final"`
	LastMessage *attach.TaskMessage `json:"last_message,omitempty"`
	Messages    int                 `json:"messages"`
	Artifacts   int                 `json:"artifacts"`
	Lost        string              `json:"lost,omitempty"`
}

func (g *Gateway) listTasks(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Limit *registry.WholeNumber `json:"limit"`
	}
	s, fail := g.begin(ctx, req, "list_tasks", &a)
	if fail != nil {
		return fail, nil
	}
	limit := 100
	if a.Limit != nil {
		if limit = int(*a.Limit); limit < 1 || limit > 1000 {
			return invalid("list_tasks", errors.New(`"limit" must be between 1 and 1000`)), nil
		}
	}
	shown, total := s.att.Tasks(ctx, limit)
	out := make([]taskSummary, 0, len(shown))
	for _, v := range shown {
		sum := taskSummary{ID: v.ID, Agent: v.Agent, ContextID: v.ContextID, State: v.State, Final: v.Final, Messages: len(v.Messages), Artifacts: len(v.Artifacts), Lost: v.Lost}
		if n := len(v.Messages); n > 0 {
			last := v.Messages[n-1]
			last.Text = guard.Text(last.Text, 300)
			sum.LastMessage = &last
		}
		out = append(out, sum)
	}
	return result(map[string]any{"count": total, "shown": len(out), "tasks": out}), nil
}
