package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The official TypeScript MCP SDK client drives the gateway over stdio and
// over streamable HTTP: discover, attach, tools/list_changed, call, detach
// (testdata/ts-client/client.mjs). Needs
// `npm ci --prefix testdata/ts-client`; skipped without it unless CI is set.
func TestTypeScriptClient(t *testing.T) {
	if _, err := os.Stat("testdata/ts-client/node_modules"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("testdata/ts-client/node_modules missing: run npm ci --prefix testdata/ts-client")
		}
		t.Fatalf("CI set but testdata/ts-client/node_modules missing: %v", err)
	}
	catalog := "testdata/catalogs/fixture.json"

	t.Run("stdio", func(t *testing.T) {
		runTSClient(t, env(true), "stdio", gatewayBin, "serve", "--catalog", catalog)
	})
	t.Run("http", func(t *testing.T) {
		url, _ := startHTTP(t, env(true), "--catalog", catalog)
		runTSClient(t, env(true), "http", url)
	})
}

// runTSClient runs client.mjs with args and expects it to print OK.
func runTSClient(t *testing.T, environ []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"testdata/ts-client/client.mjs"}, args...)...)
	cmd.Env = environ
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if out := strings.TrimSpace(stdout.String()); err != nil || out != "OK" {
		t.Fatalf("node client.mjs %s: %v (ctx: %v)\nstdout:\n%s\nstderr:\n%s",
			strings.Join(args, " "), err, ctx.Err(), stdout.String(), stderr.String())
	}
	t.Logf("client stderr:\n%s", stderr.String())
}
