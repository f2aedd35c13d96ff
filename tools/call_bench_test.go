package tools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/testdata/mcpfixture"
)

// BenchmarkProxyCall measures one small tools/call over real loopback
// streamable HTTP, directly against the fixture upstream and through the
// gateway after attach_resource, in one run: the difference is what the
// gateway's hop costs (its CPU shows in -cpuprofile, its allocations in
// allocs/op, which count client, gateway and upstream alike).
// gateway_progress makes the same call with a progress token, as Claude
// Code and the MCP Inspector call every tool; gateway_call_attached_tool
// through call_attached_tool, as a session in deferred mode calls.
//
//	go test -run '^$' -bench ProxyCall -benchmem ./tools
func BenchmarkProxyCall(b *testing.B) {
	up := upstream(b)
	const urn = "urn:air:ardgate.test:mcp:remote"
	tg := newGateway(b, 10*time.Second, remoteEntry(urn, up.URL))
	args := map[string]any{"message": "ping"}

	b.Run("direct", func(b *testing.B) {
		tr, err := transport.NewStreamableHTTP(up.URL)
		if err != nil {
			b.Fatal(err)
		}
		c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
		b.Cleanup(func() { _ = c.Close() })
		if err := c.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
			b.Fatal(err)
		}
		benchCalls(b, c, "echo", args, nil)
	})
	b.Run("gateway", func(b *testing.B) {
		s := tg.connect(b)
		if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
			b.Fatalf("attach: %s", firstText(res))
		}
		benchCalls(b, s.c, "mcp_remote__echo", args, nil)
	})
	// As Claude Code and the MCP Inspector call: with a progress token.
	b.Run("gateway_progress", func(b *testing.B) {
		s := tg.connect(b)
		if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
			b.Fatalf("attach: %s", firstText(res))
		}
		benchCalls(b, s.c, "mcp_remote__echo", args, &mcp.Meta{ProgressToken: "bench"})
	})
	// As a session in deferred mode calls: through call_attached_tool.
	b.Run("gateway_call_attached_tool", func(b *testing.B) {
		s := tg.connect(b)
		if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
			b.Fatalf("attach: %s", firstText(res))
		}
		benchCalls(b, s.c, callAttachedTool, map[string]any{"name": "mcp_remote__echo", "arguments": args}, nil)
	})
}

func benchCalls(b *testing.B, c *client.Client, name string, args any, meta *mcp.Meta) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	req.Params.Meta = meta
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.CallTool(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if res.IsError {
			b.Fatalf("%s: %v", name, res.Content)
		}
	}
}

// BenchmarkProxyCallStdio is BenchmarkProxyCall over stdio: the fixture
// server as a child process on pipes, directly and pinned behind the
// gateway, whose stdio transport runs in-process on pipes.
//
//	go test -run '^$' -bench ProxyCallStdio -benchmem ./tools
func BenchmarkProxyCallStdio(b *testing.B) {
	fixture := buildFixture(b)
	args := map[string]any{"message": "ping"}

	b.Run("direct", func(b *testing.B) {
		c, err := client.NewStdioMCPClient(fixture, []string{"PATH=" + os.Getenv("PATH")}, "--transport=stdio")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
			b.Fatal(err)
		}
		benchCalls(b, c, "echo", args, nil)
	})
	b.Run("gateway", func(b *testing.B) {
		c := serveStdio(b, New(pinnedFixture(fixture, 10*time.Second), quietLog, Options{Version: "bench"}))
		waitCallable(b, c, "mcp_fx__echo", args)
		benchCalls(b, c, "mcp_fx__echo", args, nil)
	})
	b.Run("gateway_progress", func(b *testing.B) {
		c := serveStdio(b, New(pinnedFixture(fixture, 10*time.Second), quietLog, Options{Version: "bench"}))
		waitCallable(b, c, "mcp_fx__echo", args)
		benchCalls(b, c, "mcp_fx__echo", args, &mcp.Meta{ProgressToken: "bench"})
	})
}

// waitCallable waits for a pinned server, which starts in the background.
func waitCallable(t testing.TB, c *client.Client, name string, args any) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		res, err := c.CallTool(context.Background(), req)
		if err == nil && !res.IsError {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became callable: %v %v", name, err, res)
		}
	}
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// pinnedFixture is a manager with the fixture binary pinned as the stdio
// server "fx".
func pinnedFixture(fixture string, callTimeout time.Duration) *attach.Manager {
	return &attach.Manager{
		Pinned:       []config.Server{{Name: "fx", Command: fixture, Args: []string{"--transport=stdio"}}},
		CallTimeout:  callTimeout,
		StartTimeout: 10 * time.Second,
		Log:          quietLog,
	}
}

// buildFixture builds the fixture MCP server, to run as a stdio upstream.
func buildFixture(t testing.TB) string {
	t.Helper()
	fixture := filepath.Join(t.TempDir(), "mcpfixture")
	if out, err := exec.Command("go", "build", "-o", fixture, "../testdata/mcpfixture/cmd/mcpfixture").CombinedOutput(); err != nil {
		t.Fatalf("build the fixture: %v\n%s", err, out)
	}
	return fixture
}

// serveStdio serves g's stdio transport in-process on pipes to an mcp-go
// client of opts, initialised. At cleanup the client hangs up and
// ServeStdio must return without error.
func serveStdio(t testing.TB, g *Gateway, opts ...client.ClientOption) *client.Client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- g.ServeStdio(context.Background(), inR, outW) }()
	c := client.NewClient(transport.NewIO(outR, inW, nil), append([]client.ClientOption{client.WithProtocolVersion(mcp.ProtocolVersion20251125)}, opts...)...)
	t.Cleanup(func() {
		_ = inW.Close()
		if err := <-served; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		_ = outW.Close() // ends the client's reader
		_ = c.Close()
		g.Close()
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// BenchmarkFastPathStdio is the gateway's own cost of a call over stdio to
// a stdio upstream, small or with a 1 MiB result: the client is raw frames
// on in-process pipes, read without allocating, and the upstream a child
// process, so allocs/op and B/op are the gateway's alone.
//
//	go test -run '^$' -bench FastPathStdio -benchmem ./tools
func BenchmarkFastPathStdio(b *testing.B) {
	c := rawStdio(b, New(pinnedFixture(buildFixture(b), 10*time.Second), quietLog, Options{Version: "test"}))
	for _, bc := range []struct{ name, call, want string }{
		{"echo", `"mcp_fx__echo","arguments":{"message":"ping"}`, `"text":"ping"`},
		{"1MiB", `"mcp_fx__big","arguments":{"bytes":1048576}`, `"text":"xxxxxxxx`},
		{"1MiB-echo", `"mcp_fx__echo","arguments":{"message":"` + strings.Repeat("y", 1<<20) + `"}`, `"text":"yyyyyyyy`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			call := c.caller(b, bc.call, bc.want)
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
		})
	}
}

// rawEcho serves a gateway with the fixture pinned, over stdio to a raw
// client, and returns a call of the fixture's echo, which checks the
// answer.
func rawEcho(t testing.TB) func() {
	t.Helper()
	c := rawStdio(t, New(pinnedFixture(buildFixture(t), 10*time.Second), quietLog, Options{Version: "test"}))
	return c.caller(t, `"mcp_fx__echo","arguments":{"message":"ping"}`, `"text":"ping"`)
}

// caller waits until the call whose name and arguments params gives
// answers with want in its result, and returns one call of it, which
// checks the answer the same way.
func (c *rawClient) caller(t testing.TB, params, want string) func() {
	t.Helper()
	call := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":` + params + "}}\n")
	for deadline := time.Now().Add(10 * time.Second); !bytes.Contains(c.roundTrip(t, call), []byte(want)); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered with %s", params, want)
		}
	}
	return func() {
		if line := c.roundTrip(t, call); !bytes.Contains(line, []byte(want)) {
			t.Fatalf("unexpected answer: %.200s", line)
		}
	}
}

// rawClient speaks to a gateway's stdio transport in raw frames.
type rawClient struct {
	w   *io.PipeWriter
	out *bufio.Reader
}

// rawStdio serves g's stdio transport in-process on pipes and initialises
// the session with raw frames.
func rawStdio(t testing.TB, g *Gateway) *rawClient {
	t.Helper()
	c := rawPipes(t, g)
	c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`+"\n"))
	if _, err := c.w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	return c
}

// rawPipes serves g's stdio transport on pipes to a client that writes
// and reads frames by hand, not yet initialized.
func rawPipes(t testing.TB, g *Gateway) *rawClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- g.ServeStdio(context.Background(), inR, outW) }()
	t.Cleanup(func() {
		_ = inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }() // what is still to be written
		if err := <-served; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		_ = outW.Close()
		g.Close()
	})
	return &rawClient{w: inW, out: bufio.NewReaderSize(outR, 2<<20)} // a 1 MiB result in place
}

// roundTrip writes one request frame and returns the next response the
// gateway writes, valid until the next read; notifications are skipped.
func (c *rawClient) roundTrip(t testing.TB, frame []byte) []byte {
	if _, err := c.w.Write(frame); err != nil {
		t.Fatal(err)
	}
	return c.next(t)
}

// next returns the next response the gateway writes, valid until the next
// read; notifications are skipped.
func (c *rawClient) next(t testing.TB) []byte {
	for {
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","method":`)) {
			return line
		}
	}
}

// BenchmarkAttachRemote measures attach_resource of a streamable HTTP
// server over real loopback, one at a time in one session, each followed
// by its detach (not timed): the time a model waits between asking for a
// server and being able to call it.
//
//	go test -run '^$' -bench AttachRemote -benchmem ./tools
func BenchmarkAttachRemote(b *testing.B) {
	for _, c := range []struct {
		name  string
		many  int  // more tools of about 2 KiB (mcpfixture.AddManyTools)
		other bool // another session keeps the server attached
	}{
		{"9 tools", 0, false},
		{"99 tools", 90, false},
		{"99 tools, attached by another session", 90, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv := mcpfixture.New("remote")
			mcpfixture.AddManyTools(srv, c.many)
			h := server.NewStreamableHTTPServer(srv)
			up := httptest.NewServer(h)
			defer func() { _ = h.Shutdown(context.Background()); up.Close() }()
			const urn = "urn:air:ardgate.test:mcp:remote"
			tg := newGateway(b, 10*time.Second, remoteEntry(urn, up.URL))
			if c.other {
				if res := tg.connect(b).call("attach_resource", map[string]any{"urn": urn}); res.IsError {
					b.Fatalf("attach: %s", firstText(res))
				}
			}
			s := tg.connect(b)
			b.ReportAllocs()
			for b.Loop() {
				if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
					b.Fatalf("attach: %s", firstText(res))
				}
				b.StopTimer()
				if res := s.call("detach_resource", map[string]any{"name": "remote"}); res.IsError {
					b.Fatalf("detach: %s", firstText(res))
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkToolsList measures a client's tools/list over real loopback
// HTTP, with the fixture's 9 tools or 99 attached, on the server's path
// (a parameter the fast path leaves alone sends it there) and on the fast
// path, side by side. The client reads the answer's bytes and decodes
// nothing, so the figures are the gateway's and the transport's.
//
//	go test -run '^$' -bench ToolsList -benchmem ./tools
func BenchmarkToolsList(b *testing.B) {
	for _, many := range []int{0, 90} {
		srv := mcpfixture.New("remote")
		mcpfixture.AddManyTools(srv, many)
		h := server.NewStreamableHTTPServer(srv)
		up := httptest.NewServer(h)
		const urn = "urn:air:ardgate.test:mcp:remote"
		tg := newGateway(b, 10*time.Second, remoteEntry(urn, up.URL))
		s := tg.connect(b)
		if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
			b.Fatalf("attach: %s", firstText(res))
		}
		for _, path := range []struct{ name, body string }{
			{"server", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"path":"server"}}`},
			{"fast", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		} {
			b.Run(fmt.Sprintf("%d tools/%s", 9+many, path.name), func(b *testing.B) {
				c := &http.Client{Transport: &http.Transport{}}
				defer c.CloseIdleConnections()
				var size int64
				b.ReportAllocs()
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, tg.url, strings.NewReader(path.body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set(server.HeaderKeySessionID, s.c.GetSessionId())
					req.Header.Set(server.HeaderKeyProtocolVersion, mcp.ProtocolVersion20251125)
					resp, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					size, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Fatalf("%d", resp.StatusCode)
					}
				}
				b.ReportMetric(float64(size), "B/answer")
			})
		}
		_ = h.Shutdown(context.Background())
		up.Close()
	}
}
