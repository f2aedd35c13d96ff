package main

import (
	"path/filepath"
	"strings"
	"testing"

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
	var l listing
	g.ok("list_attached_resources", map[string]any{}, &l)
	if l.Attachments[0].Kind != "a2a_agent" || l.Attachments[0].Status != "up" {
		t.Fatalf("listing: %+v", l)
	}
}
