package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP clients of agent frameworks drive the gateway over stdio and
// over streamable HTTP, as their users have them (testdata/clients,
// client.mjs): each lists the tools, discovers and attaches npm
// server-everything, calls its echo through call_attached_tool with a
// tool object it listed at the start, as an agent whose tools are fixed
// for its run would, then lists again and calls the echo by name. No
// model: the library's client and tool objects are called directly.
// Needs `npm ci --prefix testdata/clients`; skipped without it unless CI
// is set.
func TestClientLibraries(t *testing.T) {
	needNPX(t)
	needNodeModules(t, "testdata/clients")
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			target := []string{"stdio", gatewayBin, "serve"}
			if mode == "http" {
				url, _ := startHTTP(t, env(false))
				target = []string{"http", url}
			}
			for _, library := range []string{"ai-sdk", "langchain", "openai-agents", "mastra"} {
				t.Run(library, func(t *testing.T) {
					runNodeOK(t, "testdata/clients/client.mjs", 3*time.Minute, env(false), append([]string{library}, target...)...)
				})
			}
		})
	}
}

// The Go SDK's client (github.com/modelcontextprotocol/go-sdk) over stdio
// and streamable HTTP: it lists the tools, discovers and attaches npm
// server-everything, hears tools/list_changed, lists the echo and calls
// it by name.
func TestGoSDKClient(t *testing.T) {
	needNPX(t)
	connect := map[string]func(t *testing.T) gosdk.Transport{
		"stdio": func(t *testing.T) gosdk.Transport {
			cmd := exec.Command(gatewayBin, "serve")
			cmd.Env = env(false)
			return &gosdk.CommandTransport{Command: cmd}
		},
		"http": func(t *testing.T) gosdk.Transport {
			url, _ := startHTTP(t, env(false))
			return &gosdk.StreamableClientTransport{Endpoint: url}
		},
	}
	for mode, transport := range connect {
		t.Run(mode, func(t *testing.T) {
			changed := make(chan struct{}, 16)
			c := gosdk.NewClient(&gosdk.Implementation{Name: "ardgate-e2e-go-sdk", Version: "1"}, &gosdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *gosdk.ToolListChangedRequest) { changed <- struct{}{} },
			})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			s, err := c.Connect(ctx, transport(t), nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer s.Close()
			if names := goSDKTools(ctx, t, s); !slices.Contains(names, "discover_resources") || slices.Contains(names, "mcp_everything__echo") {
				t.Fatalf("tools at the start: %v", names)
			}
			const urn = "urn:air:modelcontextprotocol.io:mcp:everything"
			if found := goSDKCall(ctx, t, s, "discover_resources", map[string]any{"text": "echo test tools"}); !strings.Contains(found, urn) {
				t.Fatalf("discover_resources: %.500s", found)
			}
			if attached := goSDKCall(ctx, t, s, "attach_resource", map[string]any{"urn": urn}); !strings.Contains(attached, `"status":"attached"`) {
				t.Fatalf("attach_resource: %.500s", attached)
			}
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no tools/list_changed after the attach")
			}
			if names := goSDKTools(ctx, t, s); !slices.Contains(names, "mcp_everything__echo") {
				t.Fatalf("tools after the attach: %v", names)
			}
			if echo := goSDKCall(ctx, t, s, "mcp_everything__echo", map[string]any{"message": "from the go sdk"}); echo != "Echo: from the go sdk" {
				t.Fatalf("echo: %q", echo)
			}
		})
	}
}

// goSDKTools lists the names of session s's tools.
func goSDKTools(ctx context.Context, t *testing.T, s *gosdk.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// goSDKCall calls a tool that must succeed and returns its text.
func goSDKCall(ctx context.Context, t *testing.T, s *gosdk.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := s.CallTool(ctx, &gosdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*gosdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	if res.IsError {
		b, _ := json.Marshal(res)
		t.Fatalf("%s failed: %s", name, b)
	}
	return strings.Join(parts, "\n")
}
