package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// OpenFang's `openfang mcp` frames JSON-RPC with Content-Length headers
// (../shared/seeds/openfang-mcp-a2a.txt, "CLI: openfang mcp" and "Message
// Framing (stdio mode)"), in protocol 2024-11-05. Pinned with framing
// content-length, its agents' tools are listed and called; pinned
// without it, its start fails at once saying what came back and what to
// set; a variant of it that frames one message a line needs no setting.
func TestOpenFangStdio(t *testing.T) {
	cfg := map[string]any{"servers": []any{
		map[string]any{"name": "openfang", "command": openfangBin, "args": []string{"mcp"}, "framing": "content-length"},
		map[string]any{"name": "variant", "command": openfangBin, "args": []string{"mcp", "--newline"}},
		map[string]any{"name": "unframed", "command": openfangBin, "args": []string{"mcp"}},
		map[string]any{"name": "misframed", "command": openfangBin, "args": []string{"mcp", "--newline"}, "framing": "content-length"},
	}, "start_timeout": "5s"} // the unframed one waits it out
	g := startStdio(t, env(false), "--config", writeConfig(t, cfg))
	want := []string{"mcp_openfang__openfang_agent_code_reviewer", "mcp_variant__openfang_agent_researcher"}
	for deadline := time.Now().Add(30 * time.Second); !containsAll(g.toolNames(), want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tools %v, want %v", g.toolNames(), want)
		}
	}
	if got := text(g.call("mcp_openfang__openfang_agent_code_reviewer", map[string]any{"message": "review this"})); got != "code-reviewer: review this" {
		t.Fatalf("the agent's answer: %q", got)
	}
	if got := text(g.call("mcp_variant__openfang_agent_researcher", map[string]any{"message": "look it up"})); got != "researcher: look it up" {
		t.Fatalf("the variant's answer: %q", got)
	}
	why := map[string]string{}
	for deadline := time.Now().Add(30 * time.Second); why["unframed"] == "" || why["misframed"] == ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the misframed servers are not down: %+v", g.list())
		}
		for _, a := range g.list().Attachments {
			if a.Status == "down" {
				why[a.Name] = a.WhyDown
			}
		}
	}
	for name, says := range map[string][]string{
		"unframed":  {"no frame came back", "Content-Length", `set "framing": "content-length"`},
		"misframed": {"Content-Length header", `the peer wrote "{`, `leave "framing" out`},
	} {
		for _, s := range says {
			if !strings.Contains(why[name], s) {
				t.Errorf("%s is down saying %q, which does not say %q", name, why[name], s)
			}
		}
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
