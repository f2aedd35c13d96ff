package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// clientSide answers the requests a server makes of the client, as an
// IDE would: its roots, a sampling, an elicitation. asked hears each.
type clientSide struct {
	asked chan string
	// refuse, when set, is the error every sampling is answered with.
	refuse error
}

func (c clientSide) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	c.asked <- "roots"
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work/project", Name: "project"}}}, nil
}

func (c clientSide) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c.asked <- "sampling"
	if c.refuse != nil {
		return nil, c.refuse
	}
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("the client's model says hi")},
		Model: "test-model", StopReason: "endTurn"}, nil
}

func (c clientSide) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	c.asked <- "elicitation"
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
}

// waitAsked waits for the client to be asked what.
func (c clientSide) waitAsked(t *testing.T, what string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-c.asked:
			if got == what {
				return
			}
		case <-timeout:
			t.Fatalf("the client was never asked for %s", what)
		}
	}
}

var everythingAsks = []string{"mcp_everything__get-roots-list", "mcp_everything__trigger-sampling-request", "mcp_everything__trigger-elicitation-request"}

// The npm reference server, attached behind the gateway, asks the client
// for its roots, a sampling and an elicitation, and the client, which
// declared it can answer them, does: over stdio and over HTTP to the
// client, from the server over stdio (attached from the builtin catalog)
// and over streamable HTTP (pinned, asking on the stream the gateway
// listens to). When the client's roots change the server hears it and
// asks again. A client that declared none is not asked, and the server
// is not told it could.
func TestClientRequestsEverything(t *testing.T) {
	needNPX(t)
	port := freePort(t)
	up := exec.Command("npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31", "streamableHttp")
	up.Env = env(false, "PORT="+port)
	startHTTPUpstream(t, up, "listening on port "+port, 2*time.Minute)
	pinned := filepath.Join(t.TempDir(), "ardgate.json")
	data, _ := json.Marshal(map[string]any{"allow_local_urls": true,
		"servers": []any{map[string]any{"name": "everything", "url": "http://127.0.0.1:" + port + "/mcp"}}})
	if err := os.WriteFile(pinned, data, 0o600); err != nil {
		t.Fatal(err)
	}

	connect := map[string]func(t *testing.T, opts []client.ClientOption, args ...string) *gateway{
		"stdio": func(t *testing.T, opts []client.ClientOption, args ...string) *gateway {
			return startStdioClient(t, env(false), opts, args...)
		},
		"http": func(t *testing.T, opts []client.ClientOption, args ...string) *gateway {
			url, _ := startHTTP(t, env(false), args...)
			tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening())
			if err != nil {
				t.Fatal(err)
			}
			g := &gateway{t: t, stderr: &syncBuffer{}}
			g.connect(tr, append([]client.ClientOption{client.WithProtocolVersion(mcp.ProtocolVersion20251125)}, opts...)...)
			t.Cleanup(func() { _ = g.c.Close() })
			return g
		},
	}
	attach := map[string]struct {
		args []string
		do   func(g *gateway)
	}{
		"stdio upstream": {nil, func(g *gateway) {
			g.ok("attach_resource", map[string]any{"urn": "urn:air:modelcontextprotocol.io:mcp:everything"}, nil)
		}},
		"http upstream": {[]string{"--config", pinned}, func(g *gateway) {
			for deadline := time.Now().Add(30 * time.Second); !slices.Contains(g.toolNames(), "mcp_everything__echo"); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					g.t.Fatalf("the pinned server's tools never appeared: %v", g.toolNames())
				}
			}
		}},
	}
	for _, side := range []string{"stdio", "http"} {
		for _, upstream := range []string{"stdio upstream", "http upstream"} {
			t.Run(side+" client, "+upstream, func(t *testing.T) {
				c := clientSide{asked: make(chan string, 64)}
				g := connect[side](t, []client.ClientOption{client.WithRootsHandler(c), client.WithSamplingHandler(c), client.WithElicitationHandler(c)}, attach[upstream].args...)
				attach[upstream].do(g)
				names := g.toolNames()
				for _, tool := range everythingAsks {
					if !slices.Contains(names, tool) {
						t.Fatalf("%s not listed: the server was not told the client's capabilities: %v", tool, names)
					}
				}
				for _, call := range []struct {
					tool, asked, want string
					args              map[string]any
				}{
					{"get-roots-list", "roots", "URI: file:///work/project", map[string]any{}},
					{"trigger-sampling-request", "sampling", `"text": "the client's model says hi"`, map[string]any{"prompt": "say hi", "maxTokens": 20}},
					{"trigger-elicitation-request", "elicitation", "User declined", map[string]any{}},
				} {
					if res := g.call("mcp_everything__"+call.tool, call.args); res.IsError || !strings.Contains(text(res), call.want) {
						t.Fatalf("%s: %s; want %q", call.tool, text(res), call.want)
					}
					if call.asked != "roots" { // the server asks for roots once, when initialized
						c.waitAsked(t, call.asked)
					}
				}
				// Told the client's roots changed, the server asks again.
				for len(c.asked) > 0 {
					<-c.asked
				}
				if err := g.c.RootListChanges(context.Background()); err != nil {
					t.Fatal(err)
				}
				c.waitAsked(t, "roots")
			})
		}
	}

	// The client's error answer reaches the server, through the door
	// that drops error answers the gateway does not await.
	for _, side := range []string{"stdio", "http"} {
		t.Run(side+" client, an error answer", func(t *testing.T) {
			c := clientSide{asked: make(chan string, 64), refuse: errors.New("the user did not allow sampling")}
			g := connect[side](t, []client.ClientOption{client.WithSamplingHandler(c)})
			attach["stdio upstream"].do(g)
			res := g.call("mcp_everything__trigger-sampling-request", map[string]any{"prompt": "say hi", "maxTokens": 20})
			if !res.IsError || !strings.Contains(text(res), "the user did not allow sampling") {
				t.Fatalf("a sampling the client refused: %s", text(res))
			}
		})
	}

	// Over HTTP the gateway sends its requests on the session's event
	// stream: a client that declared sampling and keeps none open is
	// said to, at once, not waited for.
	t.Run("http client without an event stream", func(t *testing.T) {
		url, _ := startHTTP(t, env(false))
		c := clientSide{asked: make(chan string, 64)}
		g := connectHTTP(t, url, client.WithSamplingHandler(c))
		attach["stdio upstream"].do(g)
		res := g.call("mcp_everything__trigger-sampling-request", map[string]any{"prompt": "say hi", "maxTokens": 20})
		if !res.IsError || !strings.Contains(text(res), "it has no event stream open") {
			t.Fatalf("a sampling the client cannot be sent: %s", text(res))
		}
	})

	t.Run("a client that declared none", func(t *testing.T) {
		g := startStdio(t, env(false))
		g.ok("attach_resource", map[string]any{"urn": "urn:air:modelcontextprotocol.io:mcp:everything"}, nil)
		if names := g.toolNames(); slices.ContainsFunc(everythingAsks, func(n string) bool { return slices.Contains(names, n) }) {
			t.Fatalf("the server was told capabilities the client did not declare: %v", names)
		}
	})
}
