package oauth

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

const tsClientDir = "../../testdata/ts-client"

// startTSOAuthServer runs the TypeScript SDK's OAuth example server, in
// strict mode (it checks the resource), and returns its MCP URL.
func startTSOAuthServer(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the real OAuth peer is the TypeScript SDK's example server")
	}
	if _, err := os.Stat(tsClientDir + "/node_modules"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("run npm ci --prefix testdata/ts-client first: %v", err)
		}
		t.Fatalf("CI set but testdata/ts-client/node_modules is missing: %v", err)
	}
	port, authPort := freePort(t), freePort(t)
	cmd := exec.Command("node", tsClientDir+"/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js", "--oauth", "--oauth-strict")
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

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestTypeScriptOAuthPeer runs the whole flow against the TypeScript
// SDK's server: 401, discovery, registration, the authorization URL
// opened as a browser would, the code exchanged, then an MCP call over
// the grant's transport.
func TestTypeScriptOAuthPeer(t *testing.T) {
	serverURL := startTSOAuthServer(t)
	c, _ := testConfig(t)
	f, err := c.Authorize(t.Context(), serverURL, challenge(t, c, serverURL))
	if err != nil {
		t.Fatal(err)
	}
	if f.Server().Resource != serverURL || f.Server().Name != "MCP Demo Server" {
		t.Errorf("discovered %+v", f.Server())
	}
	g, err := f.Callback(t.Context(), browse(t, c, f))
	if err != nil {
		t.Fatal(err)
	}
	mc, err := client.NewStreamableHttpClient(serverURL, transport.WithHTTPBasicClient(&http.Client{Transport: g.Transport(c.HTTP.Transport)}))
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if err := mc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "ardgate-oauth-test", Version: "0"}
	if _, err := mc.Initialize(t.Context(), init); err != nil {
		t.Fatalf("initialize with the token: %v", err)
	}
	tools, err := mc.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list with the token: %v", err)
	}
	if len(tools.Tools) == 0 {
		t.Fatal("tools/list returned no tools")
	}
}
