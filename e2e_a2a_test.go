package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/testdata/a2afixture"
)

// An A2A agent driven from an MCP session over stdio, through the built
// binary: discovered by skill tag, attached, asked, answered.
func TestStdioAgentTasks(t *testing.T) {
	agent := a2afixture.Start(t)
	catalog := writeJSON(t, filepath.Join(t.TempDir(), "agents.json"), map[string]any{"specVersion": "1.0", "entries": []any{
		map[string]any{"identifier": "urn:air:agents.test:agent:helper", "displayName": "Helper agent", "type": "application/a2a-agent-card+json",
			"url": agent.URL + "/.well-known/agent-card.json", "description": "analyses code and answers questions",
			"capabilities": []string{"code-analysis"}},
	}})
	g := startStdio(t, env(false, "ARDGATE_ALLOW_LOCAL_URLS=true"), "--catalog", catalog)

	var d discovered
	g.ok("discover_resources", map[string]any{"text": "agent", "filter": map[string]any{"capabilities": []string{"code-analysis"}}}, &d)
	if len(d.Results) != 1 || d.Results[0].URN != "urn:air:agents.test:agent:helper" {
		t.Fatalf("discover by skill: %+v", d.Results)
	}
	g.ok("attach_resource", map[string]any{"urn": d.Results[0].URN}, nil)

	var task struct {
		TaskID string `json:"task_id"`
		State  string
		Final  bool
	}
	g.ok("spawn_agent", map[string]any{"message": "ask"}, &task)
	g.ok("wait_task", map[string]any{"task_id": task.TaskID}, &task)
	if task.State != "input-required" {
		t.Fatalf("ask: %+v", task)
	}
	res := g.call("message_task", map[string]any{"task_id": task.TaskID, "message": "Grace"})
	if res.IsError || !strings.Contains(text(res), "hello Grace") || !strings.Contains(text(res), `"completed"`) {
		t.Fatalf("message_task: %s", text(res))
	}
	// The other behaviours, with progress while waiting.
	g.ok("spawn_agent", map[string]any{"message": "reply hi"}, &task)
	if task.State != "completed" {
		t.Fatalf("reply: %+v", task)
	}
	g.ok("spawn_agent", map[string]any{"message": "stream 3"}, &task)
	g.drainNotes()
	res = g.callMeta("wait_task", map[string]any{"task_id": task.TaskID, "timeout_seconds": 10}, &mcp.Meta{ProgressToken: "stdio-wait"})
	if res.IsError || !strings.Contains(text(res), "done after 3 steps") {
		t.Fatalf("stream: %s", text(res))
	}
	if len(g.notesSince("notifications/progress")) == 0 {
		t.Fatal("no progress notifications over stdio")
	}
	g.ok("spawn_agent", map[string]any{"message": "wait"}, &task)
	g.ok("wait_task", map[string]any{"task_id": task.TaskID, "timeout_seconds": 0.2}, &task)
	if task.Final {
		t.Fatalf("wait: %+v", task)
	}
	g.ok("cancel_task", map[string]any{"task_id": task.TaskID}, &task)
	if task.State != "canceled" {
		t.Fatalf("cancel: %+v", task)
	}
	g.ok("spawn_agent", map[string]any{"message": "fail"}, &task)
	g.ok("wait_task", map[string]any{"task_id": task.TaskID}, &task)
	if task.State != "failed" {
		t.Fatalf("fail: %+v", task)
	}
	var l listing
	g.ok("list_attached_resources", map[string]any{}, &l)
	if l.Attachments[0].Kind != "a2a_agent" || l.Attachments[0].Status != "up" {
		t.Fatalf("listing: %+v", l)
	}
}

// A card (inline, so no fetch is involved) whose endpoint is loopback:
// with allow_local_urls off, the guard refuses at dial time, naming the
// rule, and the agent is never reached.
func TestStdioAgentForbiddenEndpoint(t *testing.T) {
	agent := a2afixture.Start(t)
	card := a2afixture.NewCard(agent.URL + "/a2a")
	catalog := writeJSON(t, filepath.Join(t.TempDir(), "agents.json"), map[string]any{"specVersion": "1.0", "entries": []any{
		map[string]any{"identifier": "urn:air:agents.test:agent:inline", "displayName": "Inline agent", "type": "application/a2a-agent-card+json", "data": card},
	}})
	g := startStdio(t, env(false), "--catalog", catalog)
	res := g.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:inline"})
	if res.IsError {
		if !strings.Contains(text(res), "refused by ssrf") {
			t.Fatalf("attach: %s", text(res))
		}
		return
	}
	msg := g.fails("spawn_agent", map[string]any{"message": "reply x"}, "refused")
	if !strings.Contains(msg, "refused by ssrf") {
		t.Fatalf("spawn to a loopback endpoint: %s", msg)
	}
}
