// Package tsoauth runs the TypeScript SDK's OAuth example server, a real
// MCP server behind a real authorization server, for ardgate's tests. Its
// authorize endpoint approves at once and redirects back with a code.
//
// It imports only the standard library.
package tsoauth

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Start runs the server from the ts-client directory dir (testdata/ts-client
// as the test's package sees it), in strict mode (it checks the resource),
// and returns its MCP URL. It skips the test when node or the packages are
// missing, unless CI is set.
func Start(t testing.TB, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the real OAuth peer is the TypeScript SDK's example server")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("run npm ci --prefix testdata/ts-client first: %v", err)
		}
		t.Fatalf("CI set but testdata/ts-client/node_modules is missing: %v", err)
	}
	port, authPort := freePort(t), freePort(t)
	cmd := exec.Command("node", filepath.Join(dir, "node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"), "--oauth", "--oauth-strict")
	cmd.Env = append(os.Environ(), "MCP_PORT="+port, "MCP_AUTH_PORT="+authPort)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready, drained := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(out)
		for seen := 0; sc.Scan(); {
			if strings.Contains(sc.Text(), "listening on port") {
				if seen++; seen == 2 {
					close(ready)
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-drained
		_ = cmd.Wait()
	})
	select {
	case <-ready:
	case <-drained:
		t.Fatal("the OAuth example server exited before listening")
	case <-time.After(30 * time.Second):
		t.Fatal("the OAuth example server did not listen within 30s")
	}
	// The server names itself localhost in its metadata.
	return "http://localhost:" + port + "/mcp"
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
