package main

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/testdata/openfang"
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
		"unframed":  {"no frame came back", "went as one line of JSON", `set "framing": "content-length"`},
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

// OpenFang's HTTP MCP endpoint (../shared/seeds/openfang-mcp-a2a.txt,
// "HTTP MCP Endpoint") takes POST only and answers in plain JSON, with no
// session; OpenFang's own config calls it "sse". Declared so, it is
// reached as streamable HTTP, and the gateway says so; declared as what
// it is, it works as it did.
func TestOpenFangHTTP(t *testing.T) {
	ts := httptest.NewServer(openfang.MCPHandler())
	t.Cleanup(ts.Close)
	cfg := map[string]any{"allow_local_urls": true, "servers": []any{
		map[string]any{"name": "declared_sse", "url": ts.URL + "/mcp", "transport": "sse"},
		map[string]any{"name": "streamable", "url": ts.URL + "/mcp"},
	}}
	g := startStdio(t, env(false), "--config", writeConfig(t, cfg))
	want := []string{"mcp_declared_sse__openfang_agent_code_reviewer", "mcp_streamable__openfang_agent_researcher"}
	for deadline := time.Now().Add(30 * time.Second); !containsAll(g.toolNames(), want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tools %v, want %v; attachments %+v", g.toolNames(), want, g.list())
		}
	}
	if got := text(g.call("mcp_declared_sse__openfang_agent_code_reviewer", map[string]any{"message": "over http"})); got != "code-reviewer: over http" {
		t.Fatalf("the agent's answer: %q", got)
	}
	if !strings.Contains(g.stderr.String(), "the server is declared sse but answers as streamable HTTP") {
		t.Fatalf("the fallback is not said:\n%s", g.stderr.String())
	}
}
