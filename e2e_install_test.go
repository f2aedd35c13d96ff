package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The npm packages that .ci/release packs run from npx, as a desktop
// config runs them ("command": "npx", "args": ["-y", "ardgate"]): the
// launcher finds the binary of this machine's platform package, prints
// the version it was built with, and carries a stdio session. Needs npm;
// skipped without it unless CI is set.
func TestNpmPackage(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("npx"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("npx not found")
		}
		t.Fatal("CI set but npx not found")
	}
	out := t.TempDir()
	const version = "0.0.0-test"
	rel := exec.Command("bash", ".ci/release", version, out)
	rel.Env = append(os.Environ(), "TARGETS="+runtime.GOOS+"/"+runtime.GOARCH)
	if b, err := rel.CombinedOutput(); err != nil {
		t.Fatalf(".ci/release: %v\n%s", err, b)
	}
	for _, f := range []string{"SHA256SUMS", "ardgate_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH + ".tar.gz"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the release has no %s: %v", f, err)
		}
	}
	platform, _ := filepath.Glob(filepath.Join(out, "npm", "ardgate-"+runtime.GOOS+"-*.tgz"))
	if len(platform) != 1 {
		t.Fatalf("platform packages for %s: %v, want one", runtime.GOOS, platform)
	}
	// npx installs both tarballs into a cache of the test's own, so that
	// nothing comes from the npm registry.
	args := []string{"-y", "--package=" + platform[0], "--package=" + filepath.Join(out, "npm", "ardgate-"+version+".tgz"), "--", "ardgate"}
	environ := append(env(false), "npm_config_cache="+t.TempDir(), "npm_config_update_notifier=false")

	cmd := exec.Command("npx", append(args, "version")...)
	cmd.Env, cmd.Dir = environ, t.TempDir()
	b, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(b)) != "ardgate "+version {
		t.Fatalf("npx ardgate version: %v: %q, want %q", err, b, "ardgate "+version)
	}

	stderr := &syncBuffer{}
	tr := transport.NewStdioWithOptions("npx", nil, append(args, "serve", "--catalog", "testdata/catalogs/fixture.json"),
		transport.WithCommandFunc(func(_ context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Env, cmd.Stderr = environ, stderr
			return cmd, nil
		}))
	c := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize through the launcher: %v\n%s", err, stderr)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "discover_resources", Arguments: map[string]any{"text": "fixture"}}})
	if err != nil || res.IsError || !strings.Contains(text(res), "urn:air:ardgate.test:mcp:fixture") {
		t.Fatalf("discover_resources through the launcher: %v %v\n%s", err, res, stderr)
	}
}
