package oauth

import (
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/testdata/tsoauth"
)

// startTSOAuthServer runs the TypeScript SDK's OAuth example server and
// returns its MCP URL.
func startTSOAuthServer(t *testing.T) string { return tsoauth.Start(t, "../../testdata/ts-client") }

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
