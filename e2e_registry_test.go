package main

import (
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/testdata/registryfixture"
)

// The official MCP Registry, served locally from a recorded page: its
// servers are discovered and attached like catalog entries (the npm
// package launches through the stand-in npx).
func TestMCPRegistryDiscoverAndAttach(t *testing.T) {
	h, err := registryfixture.MCPRegistry("testdata/mcpregistry/servers.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(h)
	defer reg.Close()
	cfg := writeJSON(t, filepath.Join(t.TempDir(), "ardgate.json"), map[string]any{
		"registries":       []any{map[string]any{"id": "mcp", "kind": "mcp-registry", "url": reg.URL}},
		"allow_local_urls": true,
		"stdio":            map[string]any{"allow_from": []string{"mcp"}},
	})
	g := startStdio(t, env(true), "--config", cfg)

	var d discovered
	g.ok("discover_resources", map[string]any{"text": "magic frontend components", "page_size": 5}, &d)
	i := slices.IndexFunc(d.Results, func(r struct {
		URN              string
		Score            int
		RegistryID       string `json:"registry_id"`
		Attachable       bool
		WhyNotAttachable string `json:"why_not_attachable"`
	}) bool {
		return r.URN == "urn:air:21st-dev.github.io:mcp:magic-mcp"
	})
	if i < 0 || !d.Results[i].Attachable || d.Results[i].RegistryID != "mcp" {
		t.Fatalf("magic-mcp not discovered as attachable: %+v", d.Results)
	}

	var a attached
	g.ok("attach_resource", map[string]any{"urn": "urn:air:21st-dev.github.io:mcp:magic-mcp"}, &a)
	if !strings.Contains(a.Endpoint, "@21st-dev/magic@0.0.46") {
		t.Fatalf("launched %q, want the registry's npm package", a.Endpoint)
	}
	g.waitNote("notifications/tools/list_changed", 10*time.Second)
	if got := text(g.call("mcp_magic_mcp__echo", map[string]any{"message": "from the registry"})); got != "from the registry" {
		t.Fatalf("echo = %q", got)
	}
	// A URN never discovered in this session is looked up by name.
	var b attached
	g.ok("attach_resource", map[string]any{"urn": "urn:air:circleci-public.github.io:mcp:mcp-server-circleci", "registry_id": "mcp"}, &b)
	if !strings.Contains(b.Endpoint, "@circleci/mcp-server-circleci@0.7.1") {
		t.Fatalf("launched %q", b.Endpoint)
	}
}
