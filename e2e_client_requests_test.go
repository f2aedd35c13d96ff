package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
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
	// slow is how long a person takes to answer an elicitation.
	slow time.Duration
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
	time.Sleep(c.slow)
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
	everything := startEverythingHTTP(t)
	pinnedEverything := pinnedConfig(t, "everything", everything)

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
		"http upstream": {[]string{"--config", pinnedEverything}, func(g *gateway) {
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

	// A person takes longer to answer than call_timeout: the call waits
	// on, its server waiting on the client, and gets call_timeout again
	// once answered.
	slowConfigs := map[string]map[string]any{
		"stdio upstream": {"call_timeout": "1s"},
		"http upstream":  pinned("everything", everything),
	}
	slowConfigs["http upstream"]["call_timeout"] = "1s"
	for _, upstream := range []string{"stdio upstream", "http upstream"} {
		t.Run("a person slower than call_timeout, "+upstream, func(t *testing.T) {
			c := clientSide{asked: make(chan string, 64), slow: 2500 * time.Millisecond}
			g := startStdioClient(t, env(false), []client.ClientOption{client.WithElicitationHandler(c)}, "--config", writeConfig(t, slowConfigs[upstream]))
			attach[upstream].do(g)
			if res := g.call("mcp_everything__trigger-elicitation-request", map[string]any{}); res.IsError || !strings.Contains(text(res), "User declined") {
				t.Fatalf("an elicitation answered after 2.5 s, call_timeout 1 s: %s", text(res))
			}
		})
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
	// stream: a client that declared sampling and opens none is said to,
	// not waited for past pinned_list_wait.
	t.Run("http client without an event stream", func(t *testing.T) {
		// It is waited for up to pinned_list_wait: the client may open
		// it just after initializing.
		short := writeConfig(t, map[string]any{"pinned_list_wait": "1s"})
		url, _ := startHTTP(t, env(false), "--config", short)
		c := clientSide{asked: make(chan string, 64)}
		g := connectHTTP(t, url, client.WithSamplingHandler(c))
		attach["stdio upstream"].do(g)
		res := g.call("mcp_everything__trigger-sampling-request", map[string]any{"prompt": "say hi", "maxTokens": 20})
		if !res.IsError || !strings.Contains(text(res), "it has no event stream open") {
			t.Fatalf("a sampling the client cannot be sent: %s", text(res))
		}
	})

	// An answer to a request the gateway no longer awaits (its bound
	// passed, or its server gave up) is taken and dropped: mcp-go's
	// server answered it 400 and logged an error.
	t.Run("http client, a late answer", func(t *testing.T) {
		url, stderr := startHTTP(t, env(false))
		g := connectHTTP(t, url)
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":"ardgate-relay-77","result":{"roots":[]}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", g.c.GetSessionId())
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || strings.Contains(stderr.String(), "ERR") {
			t.Fatalf("a late answer: %s; log:\n%s", resp.Status, stderr.String())
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

// A client's side of the relay, frame by frame: the gateway asks nothing
// before the client says it is initialized (a pinned server asks for
// roots as soon as it is); the client's error code reaches the server as
// it gave it; error answers to nothing of the gateway's are dropped, not
// answered; a request the client leaves unanswered past the bound is
// cancelled at the client, and its late answer dropped.
func TestClientRequestsRaw(t *testing.T) {
	needNPX(t)
	cfg := writeConfig(t, map[string]any{"call_timeout": "3s", "max_call_time": "6s",
		"servers": []any{map[string]any{"name": "everything", "command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-everything@2026.8.31"}}}})
	g := startRawClient(t, env(false), `{"roots":{"listChanged":true},"sampling":{}}`, "--config", cfg)
	// The pinned server starts now and asks for roots at once; the client
	// has not said it is initialized.
	time.Sleep(3 * time.Second)
	g.send(request(2, "ping", nil))
	if m := g.response(); m["id"] != float64(2) { // a request has an id too
		t.Fatalf("before notifications/initialized the gateway wrote %v", m)
	}
	g.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ask := g.response()
	if ask["method"] != "roots/list" || !strings.HasPrefix(fmt.Sprint(ask["id"]), "ardgate-relay-") {
		t.Fatalf("the pinned server's request: %v", ask)
	}
	answer := func(id any, body string) {
		b, _ := json.Marshal(id)
		g.send(`{"jsonrpc":"2.0","id":` + string(b) + `,` + body + `}`)
	}
	roots := `"result":{"roots":[{"uri":"file:///work/raw","name":"raw"}]}`
	answer(ask["id"], roots)
	g.send(request(3, "tools/call", map[string]any{"name": "mcp_everything__get-roots-list", "arguments": map[string]any{}}))
	res := g.response()
	for ; res["method"] == "roots/list"; res = g.response() { // the server may ask again
		answer(res["id"], roots)
	}
	if res["id"] != float64(3) || !strings.Contains(fmt.Sprint(res["result"]), "file:///work/raw") {
		t.Fatalf("get-roots-list: %v", res)
	}

	// An error answer keeps its code and message.
	call := func(id int) {
		g.send(request(id, "tools/call", map[string]any{"name": "mcp_everything__trigger-sampling-request", "arguments": map[string]any{"prompt": "hi", "maxTokens": 5}}))
	}
	call(10)
	ask = g.response()
	if ask["method"] != "sampling/createMessage" {
		t.Fatalf("the sampling request: %v", ask)
	}
	answer(ask["id"], `"error":{"code":-32001,"message":"the user said no"}`)
	if res := g.response(); res["id"] != float64(10) || !strings.Contains(fmt.Sprint(res["result"]), "MCP error -32001: the user said no") {
		t.Fatalf("a sampling refused with -32001: %v", res)
	}

	// Error answers to nothing of the gateway's get no answer.
	answer("ardgate-relay-999", `"error":{"code":-1,"message":"stray"}`)
	answer(998, `"error":{"code":-1,"message":"stray"}`)
	g.send(request(11, "ping", nil))
	if m := g.response(); m["id"] != float64(11) {
		t.Fatalf("a stray error answer was answered: %v", m)
	}

	// Unanswered: the call is held past call_timeout (3 s), its server
	// waiting on the client, and runs out of time at max_call_time (6 s),
	// saying so; the request is cancelled at the client then.
	call(12)
	ask = g.response()
	var cancelled, answered bool
	stop := time.AfterFunc(15*time.Second, func() { _ = g.cmd.Process.Kill() }) // then read fails
	defer stop.Stop()
	for !cancelled || !answered {
		m := g.read()
		params, _ := m["params"].(map[string]any)
		switch {
		case m["method"] == "notifications/cancelled" && params["requestId"] == ask["id"]:
			cancelled = true
		case m["id"] == float64(12):
			if answered = true; !strings.Contains(fmt.Sprint(m["result"]), "within 6s, the most one call may take (max_call_time); meanwhile it was waiting for the client to answer its sampling/createMessage") {
				t.Fatalf("the call that ran out of time: %v", m)
			}
		case m["id"] != nil:
			t.Fatalf("after the bound the client got %v; want notifications/cancelled of %v", m, ask["id"])
		}
	}
	answer(ask["id"], `"result":{"role":"assistant","content":{"type":"text","text":"late"},"model":"m"}`)
	g.send(request(13, "ping", nil))
	if m := g.response(); m["id"] != float64(13) {
		t.Fatalf("a late answer was answered: %v", m)
	}
}

// A server that gives up on its request (the TypeScript SDK's, on its
// timeout) says so with notifications/cancelled, and the gateway tells
// the client in turn, so that what it shows for the request (a form, an
// approval) does not stay open with nothing behind it.
func TestClientRequestCancelledByServer(t *testing.T) {
	needTSModules(t)
	port := freePort(t)
	startHTTPUpstream(t, exec.Command("node", "testdata/ts-client/server.mjs", port), "listening on "+port, 30*time.Second)
	cfg := pinnedConfig(t, "ts", "http://127.0.0.1:"+port+"/mcp")
	held := make(chan struct{})
	defer close(held)
	g := startStdioClient(t, env(false), []client.ClientOption{client.WithSamplingHandler(holdSampling(held))}, "--config", cfg)
	for deadline := time.Now().Add(30 * time.Second); !slices.Contains(g.toolNames(), "mcp_ts__ask"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pinned server's tools never appeared: %v", g.toolNames())
		}
	}
	g.drainNotes()
	if res := g.call("mcp_ts__ask", map[string]any{}); !strings.HasPrefix(text(res), "gave up: ") {
		t.Fatalf("ask: %s", text(res))
	}
	n := g.waitNote("notifications/cancelled", 10*time.Second)
	if id, _ := n.Params.AdditionalFields["requestId"].(string); !strings.HasPrefix(id, "ardgate-relay-") {
		t.Fatalf("the client was told of %+v", n.Params.AdditionalFields)
	}
}

// holdSampling answers no sampling until held is closed.
type holdSampling chan struct{}

func (h holdSampling) CreateMessage(ctx context.Context, _ mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	select {
	case <-h:
	case <-ctx.Done():
	}
	return nil, errors.New("not answered")
}

// The official TypeScript SDK client (Claude Code's and Claude Desktop's)
// answers server-everything's roots, sampling and elicitation requests
// through the gateway, over stdio and streamable HTTP
// (testdata/ts-client/relay.mjs).
func TestClientRequestsTypeScriptClient(t *testing.T) {
	needNPX(t)
	needTSModules(t)
	t.Run("stdio", func(t *testing.T) {
		runTSScript(t, "relay.mjs", env(false), "stdio", gatewayBin, "serve")
	})
	t.Run("http", func(t *testing.T) {
		url, _ := startHTTP(t, env(false))
		runTSScript(t, "relay.mjs", env(false), "http", url)
	})
}
