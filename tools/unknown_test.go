package tools

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/testdata/a2afixture"
)

// A call of a tool the session does not have gets -32602, as mcp-go's
// server answered it ("tool 'x' not found: tool not found"), but saying
// why and what to do: never attached or detached, not a tool of that
// attachment, an agent's, deferred; call_attached_tool says the same as a
// tool error. Over stdio and over HTTP, and a call of a tool the session
// has, its name escaped, is not refused.
func TestUnknownTool(t *testing.T) {
	remote := upstream(t)
	agent := a2afixture.Start(t)
	catalog := []registry.Entry{
		remoteEntry("urn:air:ardgate.test:mcp:remote", remote.URL),
		agentEntry("urn:air:agents.test:agent:helper", agent.URL+"/.well-known/agent-card.json"),
	}
	gateway := func(deferred bool) *Gateway {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		d := &guard.Dialer{AllowLocal: true}
		hc := d.Client()
		t.Cleanup(hc.CloseIdleConnections)
		return New(&attach.Manager{
			Registries: []registry.Registry{registry.NewLocal("test", registry.NewIndex("test", catalog))},
			HTTP:       hc, Dialer: d, AllowTypes: config.DefaultAllowAttachTypes, MaxAttachments: 5, CallTimeout: 10 * time.Second,
			StartTimeout: 10 * time.Second, Log: log, Deferred: deferred,
		}, log, Options{Version: "test"})
	}
	type caller func(name string, args any) (*mcp.CallToolResult, error)
	over := map[string]func(deferred bool) caller{
		"stdio": func(deferred bool) caller {
			c := serveStdio(t, gateway(deferred))
			return func(name string, args any) (*mcp.CallToolResult, error) {
				req := mcp.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = name, args
				return c.CallTool(context.Background(), req)
			}
		},
		"http": func(deferred bool) caller {
			g := gateway(deferred)
			h := g.NewHTTP(HTTPOptions{})
			ts := httptest.NewServer(h)
			t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close(); g.Close() })
			s := (&testGateway{g: g, h: h, url: ts.URL + "/mcp"}).connect(t)
			return func(name string, args any) (*mcp.CallToolResult, error) {
				req := mcp.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = name, args
				return s.c.CallTool(context.Background(), req)
			}
		},
	}
	echo := map[string]any{"message": "hi"}
	for transport, connect := range over {
		t.Run(transport, func(t *testing.T) {
			call := connect(false)
			refused := func(name string, want ...string) {
				t.Helper()
				_, err := call(name, echo)
				if err == nil || !strings.Contains(err.Error(), "-32602") && !strings.Contains(err.Error(), "not found") {
					t.Fatalf("%s: %v, want -32602", name, err)
				}
				for _, w := range append(want, `tool "`+name+`" not found`) {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: %v, want it to say %q", name, err, w)
					}
				}
			}
			failed := func(name string, want string) {
				t.Helper()
				res, err := call(callAttachedTool, map[string]any{"name": name, "arguments": echo})
				if err != nil || !res.IsError || !strings.Contains(firstText(res), want) || !strings.Contains(string(res.RawStructuredContent), `"code":"unknown_tool"`) {
					t.Errorf("%s through %s: %v %s, want unknown_tool saying %q", name, callAttachedTool, err, firstText(res), want)
				}
			}
			ok := func(name string, args any) {
				t.Helper()
				if res, err := call(name, args); err != nil || res.IsError {
					t.Fatalf("%s: %v %s", name, err, firstText(res))
				}
			}
			never := `nothing named "remote" is attached in this session`
			refused("mcp_remote__echo", never, "attach_resource")
			failed("mcp_remote__echo", never)
			refused("nonexistent", "the gateway's own tools are attach_resource, call_attached_tool", "mcp_<name>__<tool>")
			failed("discover_resources", "one of the gateway's own tools: call it directly")

			ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"})
			ok("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"})
			ok("mcp_remote__echo", echo)
			refused("mcp_remote__nope", "is not a tool of remote; its tools: ", "mcp_remote__echo")
			failed("mcp_remote__nope", "mcp_remote__echo")
			refused("mcp_helper__run", "helper is an A2A agent, which has no tools: give it work with spawn_agent")

			ok("detach_resource", map[string]any{"name": "remote"})
			refused("mcp_remote__echo", never)

			deferred := connect(true)
			if res, err := deferred("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"}); err != nil || res.IsError {
				t.Fatalf("attach, deferred: %v %s", err, firstText(res))
			}
			_, err := deferred("mcp_remote__echo", echo)
			if err == nil || !strings.Contains(err.Error(), "attached in deferred tool mode, so it is not in the tool list: call it through call_attached_tool") {
				t.Errorf("a deferred tool called by name: %v", err)
			}
			if res, err := deferred(callAttachedTool, map[string]any{"name": "mcp_remote__echo", "arguments": echo}); err != nil || res.IsError || firstText(res) != "hi" {
				t.Errorf("a deferred tool through %s: %v %s", callAttachedTool, err, firstText(res))
			}
		})
	}
}

// A tool of a pinned server that is down is upstream_down through
// call_attached_tool, with the reason, not unknown_tool: the server is
// configured, only not up.
func TestPinnedDownTool(t *testing.T) {
	closed := httptest.NewServer(nil)
	closed.Close() // its port now refuses
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hc := (&guard.Dialer{AllowLocal: true}).Client()
	g := New(&attach.Manager{
		HTTP: hc, AllowTypes: config.DefaultAllowAttachTypes, MaxAttachments: 5, CallTimeout: 5 * time.Second,
		StartTimeout: 5 * time.Second, Log: log, Pinned: []config.Server{{Name: "dead", URL: closed.URL + "/mcp"}},
	}, log, Options{Version: "test"})
	h := g.NewHTTP(HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close(); g.Close(); hc.CloseIdleConnections() })
	s := (&testGateway{g: g, h: h, url: ts.URL + "/mcp"}).connect(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		res := s.call(callAttachedTool, map[string]any{"name": "mcp_dead__echo", "arguments": map[string]any{}})
		msg := firstText(res)
		if s.code(res) != "upstream_down" {
			t.Fatalf("a pinned server's tool, the server not up: %s %s", s.code(res), msg)
		}
		if strings.Contains(msg, "dead is down and lists no tools: ") {
			// Briefly: the dial's own words, not mcp-go's chain of
			// "failed to send request" around them.
			if !strings.Contains(msg, "lists no tools: the server did not start: cannot reach it: dial tcp 127.0.0.1:") || strings.Contains(msg, "failed to send request") {
				t.Fatalf("why it is down: %s", msg)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never down: %s", msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A pinned server's "tools" in the config are the only ones of its tools
// the session lists and may call; a call of another is refused, saying
// so, on the fast path and through call_attached_tool alike.
func TestPinnedToolsOnly(t *testing.T) {
	m := pinnedFixture(buildFixture(t), 10*time.Second)
	m.Pinned[0].Tools = []string{"echo", "sl*"}
	c := serveStdio(t, New(m, quietLog, Options{Version: "test"}))
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range list.Tools {
		if strings.HasPrefix(tl.Name, "mcp_") {
			got = append(got, tl.Name)
		}
	}
	if !slices.Equal(got, []string{"mcp_fx__echo", "mcp_fx__slow"}) {
		t.Fatalf("listed %v, want the echo and slow of the fixture's tools", got)
	}
	call := func(name string, args map[string]any) (*mcp.CallToolResult, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		return c.CallTool(context.Background(), req)
	}
	if res, err := call("mcp_fx__echo", map[string]any{"message": "let through"}); err != nil || res.IsError {
		t.Fatalf("echo: %v %v", err, res)
	}
	want := `"mcp_fx__big" is not a tool of fx that the gateway lets through (its config's servers[].tools); its tools: mcp_fx__echo, mcp_fx__slow`
	if _, err := call("mcp_fx__big", map[string]any{"bytes": 10}); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a tool not let through, called: %v", err)
	}
	res, err := call(callAttachedTool, map[string]any{"name": "mcp_fx__big", "arguments": map[string]any{"bytes": 10}})
	if err != nil || !res.IsError || !strings.Contains(firstText(res), want) {
		t.Fatalf("a tool not let through, through %s: %v %v", callAttachedTool, err, res)
	}
	// The listing says so.
	if res, err = call("list_attached_resources", map[string]any{}); err != nil || !strings.Contains(string(res.RawStructuredContent), `"tools_count":2,`) ||
		!strings.Contains(string(res.RawStructuredContent), `"only_tools":["echo","sl*"]`) {
		t.Fatalf("listing: %v %s", err, res.RawStructuredContent)
	}
}
