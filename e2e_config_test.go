package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Servers from the config file are attached to every session at start,
// cannot be detached, and do not count against max_attachments.
func TestPinnedServers(t *testing.T) {
	cfg := map[string]any{
		"max_attachments": 1,
		"registries":      []any{map[string]any{"id": "fixture", "kind": "catalog", "path": mustAbs(t, "testdata/catalogs/fixture.json")}},
		"servers": []any{
			map[string]any{"name": "pinned", "command": fixtureBin, "args": []string{"--transport=stdio", "--name=pinned"}},
			map[string]any{"name": "broken", "command": fixtureBin, "args": []string{"--exit-at-start"}},
		},
	}
	path := writeJSON(t, filepath.Join(t.TempDir(), "ardgate.json"), cfg)
	g := startStdio(t, env(true), "--config", path)
	g.waitNote("notifications/tools/list_changed", 10*time.Second)
	if !slices.Contains(g.toolNames(), "mcp_pinned__echo") {
		t.Fatalf("pinned tools not listed: %v", g.toolNames())
	}
	// The broken one fails in the background; wait for it to say so.
	var l listing
	byName := map[string]int{}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		l = g.list()
		for i, a := range l.Attachments {
			byName[a.Name] = i
		}
		if l.Attachments[byName["broken"]].Status != "starting" {
			break
		}
	}
	// Each start is audited, as an attach is.
	for _, line := range []string{
		`INF audit audit=attach session=stdio target=config:servers/pinned status=pinned name=pinned kind=mcp_server registry=config endpoint="stdio: .* --transport=stdio --name=pinned" pid=[1-9]`,
		`WRN audit audit=attach session=stdio target=config:servers/broken status=pinned name=broken .* err=`,
	} {
		if !regexp.MustCompile(line).MatchString(g.stderr.String()) {
			t.Fatalf("no audit line %s in\n%s", line, g.stderr.String())
		}
	}
	p, b := l.Attachments[byName["pinned"]], l.Attachments[byName["broken"]]
	if !p.Pinned || p.Status != "up" || p.URN != "config:servers/pinned" || p.MediaType != "application/mcp-server-card+json" {
		t.Fatalf("pinned: %+v", p)
	}
	if b.Status != "down" || !strings.Contains(b.WhyDown, "exiting at start") {
		t.Fatalf("broken pinned server: %+v", b)
	}
	g.fails("detach_resource", map[string]any{"name": "pinned"}, "pinned")
	// Its name is taken, and detaching it is no way out.
	if msg := g.fails("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture", "name": "pinned"}, "name_taken"); !strings.Contains(msg, "pinned in the gateway's config") || strings.Contains(msg, "detach") {
		t.Fatalf("the name of a pinned server: %q", msg)
	}
	// The cap of 1 applies to the session's own attachments only.
	g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, nil)
	if got := text(g.call("mcp_pinned__echo", map[string]any{"message": "pinned works"})); got != "pinned works" {
		t.Fatalf("pinned echo = %q", got)
	}
	// A pinned server that dies is started again by the next call: it
	// stayed down for the session (attach_resource takes no config: URN).
	pid := g.pidOf("pinned")
	if msg := g.fails("mcp_pinned__crash", map[string]any{}, "upstream_down"); !strings.Contains(msg, "the next call starts it again") || strings.Contains(msg, "attach_resource") {
		t.Fatalf("a pinned server's crash: %q", msg)
	}
	if got := text(g.call("mcp_pinned__echo", map[string]any{"message": "back"})); got != "back" {
		t.Fatalf("the call after the crash: %q", got)
	}
	if again := g.pidOf("pinned"); again == pid {
		t.Fatalf("the pinned server's pid is %d still", pid)
	}
}

// A client's first tools/list, which many clients never take again, has
// the tools of a pinned server that is still starting when it asks.
func TestPinnedToolsInFirstList(t *testing.T) {
	path := writeJSON(t, filepath.Join(t.TempDir(), "ardgate.json"), map[string]any{"servers": []any{
		map[string]any{"name": "slow", "command": fixtureBin, "args": []string{"--transport=stdio", "--start-delay=500ms"}},
	}})
	g := startStdio(t, env(true), "--config", path)
	if names := g.toolNames(); !slices.Contains(names, "mcp_slow__echo") {
		t.Fatalf("first tools/list lacks the pinned server's tools: %v", names)
	}
	if got := text(g.call("mcp_slow__echo", map[string]any{"message": "listed"})); got != "listed" {
		t.Fatalf("echo = %q", got)
	}
}

// pinned_list_wait bounds that wait: past it the first listing goes out
// without the server still starting, whose tools come with
// tools/list_changed.
func TestPinnedListWaitConfig(t *testing.T) {
	path := writeJSON(t, filepath.Join(t.TempDir(), "ardgate.json"), map[string]any{
		"pinned_list_wait": "200ms",
		"servers": []any{
			map[string]any{"name": "late", "command": fixtureBin, "args": []string{"--transport=stdio", "--start-delay=3s"}},
		}})
	g := startStdio(t, env(true), "--config", path)
	if names := g.toolNames(); slices.Contains(names, "mcp_late__echo") {
		t.Fatalf("the first tools/list waited for the late server: %v", names)
	}
	g.waitNote("notifications/tools/list_changed", 30*time.Second)
	if got := text(g.call("mcp_late__echo", map[string]any{"message": "late"})); got != "late" {
		t.Fatalf("echo = %q", got)
	}
}

// A bad config stops the program before it serves, naming the field.
func TestBadConfigExits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(path, []byte(`{"max_attachments": 0, "registries": [{"id": "x", "kind": "ard"}], "colour": 1}`), 0o600)
	out, err := runGateway(t, "serve", "--config", path)
	if err == nil || !strings.Contains(out, `unknown field "colour"`) {
		t.Fatalf("unknown field: err %v, output %q", err, out)
	}
	_ = os.WriteFile(path, []byte(`{"max_attachments": 0, "registries": [{"id": "x", "kind": "ard"}]}`), 0o600)
	out, err = runGateway(t, "serve", "--config", path)
	if err == nil || !strings.Contains(out, "max_attachments") || !strings.Contains(out, "registries[0].url") {
		t.Fatalf("bad values: err %v, output %q", err, out)
	}
}

func TestCatalogCommands(t *testing.T) {
	out, err := runGateway(t, "catalog", "validate", "testdata/catalogs/fixture.json", "registry/builtin/ai-catalog.json")
	if err != nil || !regexp.MustCompile(`^testdata/catalogs/fixture.json: valid, \d+ entries\nregistry/builtin/ai-catalog.json: valid, \d+ entries\n$`).MatchString(out) {
		t.Fatalf("valid catalogs: %v %q", err, out)
	}
	// A valid catalog whose loaders leave entries out says which, as
	// registry serve would log them.
	dir := t.TempDir()
	leaves := writeJSON(t, filepath.Join(dir, "leaves.json"), map[string]any{"specVersion": "1.0", "entries": []any{
		map[string]any{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "type": "application/mcp-server-card+json", "url": "https://acme.com/a.json"},
		map[string]any{"identifier": "urn:air:acme.com:catalog:remote", "displayName": "Remote", "type": "application/ai-catalog+json", "url": "https://acme.com/ai-catalog.json"},
		map[string]any{"identifier": "urn:air:acme.com:catalog:inline", "displayName": "Inline", "type": "application/ai-catalog+json", "data": map[string]any{
			"specVersion": "1.0", "entries": []any{
				map[string]any{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A again", "type": "application/mcp-server-card+json", "url": "https://acme.com/a2.json"},
			}}},
	}})
	out, err = runGateway(t, "catalog", "validate", leaves)
	if err != nil || !strings.Contains(out, "warning: "+leaves+": entries[1] (urn:air:acme.com:catalog:remote): remote nested catalog") ||
		!strings.Contains(out, "urn:air:acme.com:mcp:a is listed more than once") || !strings.Contains(out, leaves+": valid, 3 entries; 1 indexed once nested catalogs are read") {
		t.Fatalf("a catalog whose loaders leave entries out: %v %q", err, out)
	}
	out, err = runGateway(t, "catalog", "validate", "testdata/catalogs/invalid.json")
	if err == nil || strings.Count(out, "\n") < 8 || !strings.Contains(out, "invalid.json: $.entries[1]") {
		t.Fatalf("invalid catalog: %v %q", err, out)
	}
	out, err = runGateway(t, "catalog", "export")
	if err != nil || !json.Valid([]byte(out)) || !strings.Contains(out, "server-everything") {
		t.Fatalf("export: %v %.200s", err, out)
	}
	if out, err = runGateway(t, "version"); err != nil || !strings.HasPrefix(out, "ardgate ") {
		t.Fatalf("version: %v %q", err, out)
	}
}

func runGateway(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(gatewayBin, args...)
	cmd.Env = env(false)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustAbs(t *testing.T, p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// A Claude Desktop or Cursor mcpServers block, pasted as it is, and VS
// Code's servers object, run as pinned servers: names with dashes or
// capitals are normalised, env values reach the command's process (with
// ${env:NAME} read from the gateway's environment), and a secret value
// shows in no listing and no log line.
func TestPastedDesktopConfig(t *testing.T) {
	t.Parallel()
	remote := startFixtureHTTP(t)
	for _, tc := range []struct {
		name string
		key  string
		// types written by each client for a command and a url server
		stdio, http string
	}{
		{"Claude Desktop", "mcpServers", "", ""},
		{"Cursor", "mcpServers", "stdio", "streamableHttp"},
		{"VS Code", "servers", "stdio", "http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			local := map[string]any{"command": fixtureBin, "args": []string{"--transport=stdio"},
				"env": map[string]any{"FIXTURE_TOKEN": "${env:SOURCE_TOKEN}", "FIXTURE_PLAIN": "plain-value"}}
			url := map[string]any{"url": remote}
			if tc.stdio != "" {
				local["type"], url["type"] = tc.stdio, tc.http
			}
			cfg := writeConfig(t, map[string]any{"allow_local_urls": true, tc.key: map[string]any{
				"openfang-agents": local, "Remote": url, "off": map[string]any{"command": fixtureBin, "disabled": true}}})
			g := startStdio(t, env(false, "SOURCE_TOKEN=tok-7f3a9c", "ARDGATE_CONFIG="+cfg))
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				names := g.toolNames()
				if slices.Contains(names, "mcp_openfang_agents__env") && slices.Contains(names, "mcp_remote__echo") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the pasted servers' tools never appeared: %v", names)
				}
			}
			var got struct{ Env []string }
			decode(t, g.call("mcp_openfang_agents__env", map[string]any{}), &got)
			for _, kv := range []string{"FIXTURE_TOKEN=tok-7f3a9c", "FIXTURE_PLAIN=plain-value"} {
				if !slices.Contains(got.Env, kv) {
					t.Errorf("the server's environment lacks %s: %q", kv, got.Env)
				}
			}
			if slices.ContainsFunc(got.Env, func(kv string) bool { return strings.HasPrefix(kv, "SOURCE_TOKEN=") }) {
				t.Errorf("the gateway's own variable leaked into the server: %q", got.Env)
			}
			if res := g.call("mcp_remote__echo", map[string]any{"message": "hi"}); text(res) != "hi" {
				t.Errorf("remote echo: %q", text(res))
			}
			l := g.list()
			if len(l.Attachments) != 2 {
				t.Errorf("want 2 pinned servers (the disabled one left out), got %+v", l.Attachments)
			}
			listed, _ := json.Marshal(l)
			if strings.Contains(string(listed), "tok-7f3a9c") || strings.Contains(g.stderr.String(), "tok-7f3a9c") {
				t.Errorf("the secret value shows in the listing or the log:\n%s\n%s", listed, g.stderr.String())
			}
			if !strings.Contains(g.stderr.String(), `"openfang-agents" is used as "openfang_agents"`) {
				t.Errorf("no warning of the renamed server in\n%s", g.stderr.String())
			}
		})
	}
}
