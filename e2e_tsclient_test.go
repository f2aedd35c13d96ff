package main

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The official TypeScript MCP SDK client drives the gateway over stdio and
// over streamable HTTP: discover, attach, tools/list_changed, call, detach
// (testdata/ts-client/client.mjs). Needs
// `npm ci --prefix testdata/ts-client`; skipped without it unless CI is set.
func TestTypeScriptClient(t *testing.T) {
	needTSModules(t)
	catalog := "testdata/catalogs/fixture.json"

	t.Run("stdio", func(t *testing.T) {
		runTSClient(t, env(true), "stdio", gatewayBin, "serve", "--catalog", catalog)
	})
	t.Run("http", func(t *testing.T) {
		url, _ := startHTTP(t, env(true), "--catalog", catalog)
		runTSClient(t, env(true), "http", url)
	})
}

// needTSModules skips a test that needs testdata/ts-client's npm packages
// when they are missing, unless CI is set.
func needTSModules(t *testing.T) {
	t.Helper()
	needNodeModules(t, "testdata/ts-client")
}

// needNodeModules skips a test that needs the npm packages of the npm
// project in dir when they are missing, unless CI is set.
func needNodeModules(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir + "/node_modules"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("%s/node_modules missing: run npm ci --prefix %s", dir, dir)
		}
		t.Fatalf("CI set but %s/node_modules missing: %v", dir, err)
	}
}

// A server on the TypeScript SDK that answers a long call the 2025-11-25
// way (SEP-1699): it closes the call's stream after its priming event, and
// the gateway polls it with GETs from the last event id, over its own
// connections, until the answer comes; the progress sent meanwhile is
// relayed. A tool the server adds later is announced on its GET stream,
// which the gateway reads itself (testdata/ts-client/server.mjs).
func TestTypeScriptServer(t *testing.T) {
	needTSModules(t)
	port := freePort(t)
	stderr := startHTTPUpstream(t, exec.Command("node", "testdata/ts-client/server.mjs", port), "listening on "+port, 30*time.Second)
	g := pinHTTP(t, "ts", "http://127.0.0.1:"+port+"/mcp", "mcp_ts__poll")
	if res := g.call("mcp_ts__echo", map[string]any{"message": "hi"}); res.IsError || text(res) != "echo: hi" {
		t.Fatalf("echo: %s", text(res))
	}
	g.drainNotes()
	res := g.callMeta("mcp_ts__poll", map[string]any{}, &mcp.Meta{ProgressToken: "p-1"})
	if res.IsError || text(res) != "answered after polling" {
		t.Fatalf("a call the server answers by polling: %s (server: %s)", text(res), stderr.String())
	}
	relayed := g.notesSince("notifications/progress")
	if len(relayed) != 1 || relayed[0].Params.AdditionalFields["progressToken"] != "p-1" {
		t.Errorf("progress relayed while polling: %+v, want one under p-1", relayed)
	}
	if res := g.call("mcp_ts__echo", map[string]any{"message": "after"}); res.IsError || text(res) != "echo: after" {
		t.Errorf("echo after the polled call: %s", text(res))
	}

	// A tool the server adds is announced on its GET stream, which the
	// gateway listens to: the gateway lists it and tells its client.
	g.drainNotes()
	if res := g.call("mcp_ts__grow", map[string]any{}); res.IsError || text(res) != "grew" {
		t.Fatalf("grow: %s", text(res))
	}
	g.waitNote("notifications/tools/list_changed", 10*time.Second)
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(g.toolNames(), "mcp_ts__grown"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the tool the server added was never listed: %v", g.toolNames())
		}
	}
	if res := g.call("mcp_ts__grown", map[string]any{}); res.IsError || text(res) != "grown" {
		t.Errorf("the added tool: %s", text(res))
	}
}

// runTSClient runs client.mjs with args and expects it to print OK.
func runTSClient(t *testing.T, environ []string, args ...string) {
	t.Helper()
	runTSScript(t, "client.mjs", environ, args...)
}

// runTSScript runs testdata/ts-client's script with args and expects it
// to print OK.
func runTSScript(t *testing.T, script string, environ []string, args ...string) {
	t.Helper()
	runNodeOK(t, "testdata/ts-client/"+script, 60*time.Second, environ, args...)
}

// runNodeOK runs the node script with args, for up to d, and expects it
// to print OK.
func runNodeOK(t *testing.T, script string, d time.Duration, environ []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Env = environ
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if out := strings.TrimSpace(stdout.String()); err != nil || out != "OK" {
		t.Fatalf("node %s %s: %v (ctx: %v)\nstdout:\n%s\nstderr:\n%s",
			script, strings.Join(args, " "), err, ctx.Err(), stdout.String(), stderr.String())
	}
	t.Logf("client stderr:\n%s", stderr.String())
}
