package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/testdata/mcpfixture"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// upstream starts an in-process fixture MCP server over streamable HTTP.
func upstream(t testing.TB) *httptest.Server {
	t.Helper()
	h := server.NewStreamableHTTPServer(mcpfixture.New("remote"))
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Shutdown(context.Background())
		ts.Close()
	})
	return ts
}

// remoteEntry is a catalog entry for an MCP server at url.
func remoteEntry(urn, url string) registry.Entry {
	data, _ := json.Marshal(map[string]any{"name": "remote", "remotes": []any{map[string]any{"type": "streamable-http", "url": url}}})
	return registry.Entry{Identifier: urn, DisplayName: "Remote fixture " + urn, Type: config.MediaMCPServerCard, Data: data, Description: "fixture echo tools"}
}

type testGateway struct {
	g   *Gateway
	h   *HTTP
	url string
}

// newGateway serves a gateway over one local catalog through httptest.
func newGateway(t testing.TB, callTimeout time.Duration, entries ...registry.Entry) *testGateway {
	t.Helper()
	return newGatewayWith(t, callTimeout, Options{Version: "test"}, HTTPOptions{}, nil, entries...)
}

// newGatewayWith is newGateway with the gateway's and the transport's
// options, and pinned servers.
func newGatewayWith(t testing.TB, callTimeout time.Duration, opts Options, hopts HTTPOptions, pinned []config.Server, entries ...registry.Entry) *testGateway {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := &guard.Dialer{AllowLocal: true}
	m := &attach.Manager{
		Registries:     []registry.Registry{registry.NewLocal("test", registry.NewIndex("test", entries))},
		HTTP:           d.Client(),
		Dialer:         d,
		AllowTypes:     config.DefaultAllowAttachTypes,
		MaxAttachments: 5,
		CallTimeout:    callTimeout,
		StartTimeout:   10 * time.Second,
		Pinned:         pinned,
		Log:            log,
		ClientOptions:  opts.Tracing.ClientOptions(),
		Tracing:        opts.Tracing.Upstream(),
	}
	g := New(m, log, opts)
	h := g.NewHTTP(hopts)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Shutdown(context.Background())
		ts.Close()
		g.Close()
		m.HTTP.CloseIdleConnections()
	})
	return &testGateway{g: g, h: h, url: ts.URL + "/mcp"}
}

// waitUntil waits until cond holds, looking every 10 ms, and
// fails t saying that what never happened once within has passed.
func waitUntil(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened in %s", what, within)
		}
	}
}

// waitRunning waits until a tool call of tg's is running.
func (tg *testGateway) waitRunning(t *testing.T) { waitCalling(t, tg.g) }

// waitCalling waits until a tool call of g's has been let in (admit), on
// the fast path or through the MCP server.
func waitCalling(t testing.TB, g *Gateway) {
	t.Helper()
	waitUntil(t, 5*time.Second, "a tool call beginning", func() bool { return g.running.Load() > 0 })
}

// waitFastCall waits until HTTP session sid of g has a request in flight
// that a notifications/cancelled stops: a fast call, a read of an
// attached server's resources, a call waiting for its server to start.
func waitFastCall(t testing.TB, g *Gateway, sid string) {
	t.Helper()
	waitUntil(t, 5*time.Second, "a request in flight in session "+sid, func() bool {
		s := g.lookup(sid)
		return s != nil && s.Fast.Busy()
	})
}

type clientSession struct {
	t     testing.TB
	c     *client.Client
	mu    sync.Mutex
	notes []mcp.JSONRPCNotification
}

func (tg *testGateway) connect(t testing.TB, opts ...transport.StreamableHTTPCOption) *clientSession {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(tg.url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	s := &clientSession{t: t, c: client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))}
	ctx := context.Background()
	if err := s.c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.c.OnNotification(func(n mcp.JSONRPCNotification) {
		s.mu.Lock()
		s.notes = append(s.notes, n)
		s.mu.Unlock()
	})
	if _, err := s.c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.c.Close() })
	return s
}

// post posts body to the gateway at url as a message of s's session,
// by hand, as a client that speaks 2025-11-25.
func (s *clientSession) post(url, body string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.c.GetSessionId())
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	return http.DefaultClient.Do(req)
}

// attach attaches each of urns to the session, failing the test at a
// refusal.
func (s *clientSession) attach(urns ...string) {
	s.t.Helper()
	for _, urn := range urns {
		if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
			s.t.Fatalf("attach %s: %s", urn, firstText(res))
		}
	}
}

func (s *clientSession) call(name string, args any) *mcp.CallToolResult {
	s.t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := s.c.CallTool(context.Background(), req)
	if err != nil {
		s.t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func (s *clientSession) code(res *mcp.CallToolResult) string {
	s.t.Helper()
	if !res.IsError {
		return ""
	}
	var f failureBody
	if err := json.Unmarshal(res.RawStructuredContent, &f); err != nil {
		s.t.Fatalf("error result without a code: %v", res)
	}
	return f.Code
}

func (s *clientSession) tools() []string {
	s.t.Helper()
	res, err := s.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		s.t.Fatal(err)
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names
}

func (s *clientSession) listChanged() int { return s.count(mcp.MethodNotificationToolsListChanged) }

func firstText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(mcp.TextContent)
	return tc.Text
}

// Per-session tools over real streamable HTTP: what one session attaches
// the other never sees, detach takes the tools away, and closing the
// session releases its attachments. goleak (TestMain) checks nothing is
// left running.
func TestSessionsAreIsolated(t *testing.T) {
	up := upstream(t)
	tg := newGateway(t, 10*time.Second, remoteEntry("urn:air:ardgate.test:mcp:remote", up.URL))
	a, b := tg.connect(t), tg.connect(t)

	if res := a.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	if a.listChanged() == 0 {
		t.Fatal("no tools/list_changed after attach")
	}
	if !slices.Contains(a.tools(), "mcp_remote__echo") {
		t.Fatalf("A tools: %v", a.tools())
	}
	if slices.ContainsFunc(b.tools(), func(n string) bool { return strings.HasPrefix(n, "mcp_") }) {
		t.Fatalf("B sees A's tools: %v", b.tools())
	}
	if b.listChanged() != 0 {
		t.Fatal("B was told A's tool list changed")
	}
	if got := firstText(a.call("mcp_remote__echo", map[string]any{"message": "x"})); got != "x" {
		t.Fatalf("echo = %q", got)
	}

	before := a.listChanged()
	if res := a.call("detach_resource", map[string]any{"name": "remote"}); res.IsError {
		t.Fatalf("detach: %s", firstText(res))
	}
	if a.listChanged() == before || slices.Contains(a.tools(), "mcp_remote__echo") {
		t.Fatalf("detach: tools %v, list_changed %d→%d", a.tools(), before, a.listChanged())
	}

	if res := a.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"}); res.IsError {
		t.Fatalf("re-attach: %s", firstText(res))
	}
	if n := len(tg.g.manager.Sessions()); n != 2 {
		t.Fatalf("%d sessions, want 2", n)
	}
	_ = a.c.Close()
	if n := len(tg.g.manager.Sessions()); n != 1 {
		t.Fatalf("after closing A: %d sessions, want 1", n)
	}
}

// A remote upstream that goes away: its calls fail saying so, the listing
// shows it down, and attaching again says why it cannot start.
func TestRemoteUpstreamGoesDown(t *testing.T) {
	h := server.NewStreamableHTTPServer(mcpfixture.New("remote"))
	up := httptest.NewServer(h)
	tg := newGateway(t, 10*time.Second, remoteEntry("urn:air:ardgate.test:mcp:remote", up.URL))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	_ = h.Shutdown(context.Background())
	up.CloseClientConnections()
	up.Close()

	res := s.call("mcp_remote__echo", map[string]any{"message": "x"})
	if s.code(res) != "upstream_down" || strings.Count(firstText(res), "failed to send request") > 1 {
		t.Fatalf("call to a dead upstream: %v %s", s.code(res), firstText(res))
	}
	var l struct {
		Attachments []struct{ Status string }
	}
	_ = json.Unmarshal(s.call("list_attached_resources", map[string]any{}).RawStructuredContent, &l)
	if len(l.Attachments) != 1 || l.Attachments[0].Status != attach.StatusDown {
		t.Fatalf("listing: %+v", l)
	}
	res = s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"})
	if s.code(res) != "start_failed" {
		t.Fatalf("re-attach to a dead upstream: %v %s", s.code(res), firstText(res))
	}
	if got := s.call("gateway_health", map[string]any{}); got.IsError {
		t.Fatalf("session unusable after failures: %s", firstText(got))
	}
}

func TestCallTimeout(t *testing.T) {
	up := upstream(t)
	tg := newGateway(t, 300*time.Millisecond, remoteEntry("urn:air:ardgate.test:mcp:remote", up.URL))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	res := s.call("mcp_remote__slow", map[string]any{"ms": 5000})
	if s.code(res) != "timeout" || !strings.Contains(firstText(res), "300ms") {
		t.Fatalf("slow call: %v %s", s.code(res), firstText(res))
	}
	if got := firstText(s.call("mcp_remote__echo", map[string]any{"message": "after"})); got != "after" {
		t.Fatalf("after a timeout the upstream should still answer: %q", got)
	}
}

// Concurrent attaches of one URN in one session make one attachment.
func TestConcurrentAttachOneURN(t *testing.T) {
	up := upstream(t)
	tg := newGateway(t, 10*time.Second, remoteEntry("urn:air:ardgate.test:mcp:remote", up.URL))
	s := tg.connect(t)
	var wg sync.WaitGroup
	statuses := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			var out struct{ Status string }
			_ = json.Unmarshal(s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"}).RawStructuredContent, &out)
			statuses <- out.Status
		})
	}
	wg.Wait()
	close(statuses)
	count := map[string]int{}
	for st := range statuses {
		count[st]++
	}
	if count["attached"] != 1 || count["already_attached"] != 7 {
		t.Fatalf("statuses %v, want 1 attached and 7 already_attached", count)
	}
}

func TestHTTPAccessRules(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := New(&attach.Manager{Log: log, MaxAttachments: 1}, log, Options{Version: "test"})
	h := g.NewHTTP(HTTPOptions{AuthToken: "s3cret"})
	ts := httptest.NewServer(h)
	defer func() { _ = h.Shutdown(context.Background()); ts.Close(); g.Close() }()

	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	cases := []struct {
		name, origin, auth string
		want               int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"wrong token", "", "Bearer nope", http.StatusUnauthorized},
		{"foreign origin", "https://evil.example", "Bearer s3cret", http.StatusForbidden},
		{"token", "", "Bearer s3cret", http.StatusOK},
		{"loopback origin", "http://localhost:3000", "Bearer s3cret", http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(init))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Fatalf("HTTP %d, want %d", resp.StatusCode, c.want)
			}
		})
	}
	// Refused requests never made a session.
	if n := len(g.manager.Sessions()); n > 2 {
		t.Fatalf("%d sessions after 2 accepted initializes", n)
	}
	http.DefaultClient.CloseIdleConnections()
}

// After a scripted session, /metrics exposes the named series.
func TestMetricsAfterSession(t *testing.T) {
	up := upstream(t)
	tg := newGateway(t, 10*time.Second,
		remoteEntry("urn:air:ardgate.test:mcp:remote", up.URL),
		remoteEntry("urn:air:ardgate.test:mcp:metadata", "http://169.254.169.254/mcp"))
	s := tg.connect(t)
	s.call("discover_resources", map[string]any{"text": "fixture echo"})
	s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"})
	s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"})
	s.call("mcp_remote__echo", map[string]any{"message": "x"})
	s.call("mcp_remote__slow", map[string]any{"ms": "not a number"})
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:metadata"}); !res.IsError {
		t.Fatal("metadata address attached")
	}

	body := tg.metrics(t)
	for _, want := range []string{
		`ardgate_tool_calls_total{result="ok",tool="discover_resources"} 1`,
		`ardgate_tool_calls_total{result="ok",tool="proxied"} 1`,
		`ardgate_tool_calls_total{result="error",tool="proxied"} 1`,
		`ardgate_tool_call_duration_seconds_bucket{tool="attach_resource",le=`,
		`ardgate_attach_total{kind="mcp_server",result="attached"} 1`,
		`ardgate_attach_total{kind="mcp_server",result="already_attached"} 1`,
		`ardgate_attach_total{kind="unknown",result="error"} 1`,
		`ardgate_refusals_total{rule="ssrf"} 1`,
		`ardgate_registry_request_duration_seconds_count{registry="test",result="ok"} 1`,
		`ardgate_sessions 1`,
		`ardgate_attachments{kind="mcp_server",status="up"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// metrics is what the gateway's /metrics serves.
func (tg *testGateway) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(tg.url, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	return string(body)
}

// postMCP posts body to url, a gateway's /mcp, in session sid (none when
// ""), as a streamable HTTP client does, and returns the status and what
// the answer holds.
func postMCP(t *testing.T, url, sid, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(answer))
}

// listings counts the tools/list requests an upstream got, and those it
// has answered.
type listings struct{ got, answered atomic.Int64 }

// Load is how many it got.
func (l *listings) Load() int64 { return l.got.Load() }

// attachCounting serves up over streamable HTTP, counting the tools/list
// requests it gets, each answered after delay, and returns a session of a
// gateway that attached it as name, with the count.
func attachCounting(t *testing.T, up *server.MCPServer, name string, delay time.Duration) (*clientSession, *listings) {
	t.Helper()
	h := server.NewStreamableHTTPServer(up)
	lists := new(listings)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/list"`)) {
			lists.got.Add(1)
			defer lists.answered.Add(1)
			time.Sleep(delay) // a slow listing
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close() })
	urn := "urn:air:ardgate.test:mcp:" + name
	tg := newGateway(t, 10*time.Second, remoteEntry(urn, ts.URL))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	return s, lists
}

// An upstream that changes a tool's definition and says so: the session
// gets the new definition and one tools/list_changed. An upstream that
// says its list changed when nothing did costs the client nothing.
func TestUpstreamToolChanges(t *testing.T) {
	up := server.NewMCPServer("changing", "1", server.WithToolCapabilities(true))
	handler := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	up.AddTool(mcp.NewTool("t", mcp.WithDescription("first version")), handler)
	s, lists := attachCounting(t, up, "changing", 0)
	description := func() string {
		res, err := s.c.ListTools(context.Background(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name == "mcp_changing__t" {
				return tool.Description
			}
		}
		return ""
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		waitUntil(t, 5*time.Second, what, ok)
	}
	waitFor("the attached tool listed", func() bool { return description() == "first version" })

	before := s.listChanged()
	up.AddTool(mcp.NewTool("t", mcp.WithDescription("second version")), handler) // tells its clients
	waitFor("the new definition listed", func() bool { return description() == "second version" })
	// A listing on the fast path may see the new definition just before
	// the notice is queued; a request the server answers brings it.
	waitFor("tools/list_changed sent", func() bool { _ = s.c.Ping(context.Background()); return s.listChanged() == before+1 })

	listed := lists.Load()
	up.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil) // nothing changed
	waitFor("the gateway listing the tools again", func() bool { return lists.Load() > listed })
	time.Sleep(300 * time.Millisecond)
	if n := s.listChanged(); n != before+1 {
		t.Fatalf("tools/list_changed sent %d more times though no definition changed", n-before-1)
	}
}

// An upstream that floods tools/list_changed costs a re-listing or two,
// not one each: the gateway lists again once after the notices that came
// while it was listing.
func TestUpstreamToolChangesFlood(t *testing.T) {
	up := server.NewMCPServer("flooding", "1", server.WithToolCapabilities(true))
	up.AddTool(mcp.NewTool("t"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	// A listing takes a while: notices pile up meanwhile.
	s, lists := attachCounting(t, up, "flooding", 20*time.Millisecond)
	// The notices go out on the GET stream the gateway opens.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		before := lists.Load()
		up.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
		time.Sleep(50 * time.Millisecond)
		if lists.Load() > before {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the gateway never heard the upstream's tools/list_changed")
		}
	}
	waitUntil(t, 5*time.Second, "the re-listings it heard answered", func() bool { return lists.answered.Load() == lists.got.Load() })
	before := lists.Load()
	for range 1000 {
		up.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
	}
	time.Sleep(500 * time.Millisecond)
	// One run, and one more for the notices that came during it; a loaded
	// machine may spread their delivery over a few runs.
	if n := lists.Load() - before; n < 1 || n > 10 {
		t.Errorf("1000 notices brought %d re-listings, want 1 to 10", n)
	}
	if res := s.call("mcp_flooding__t", map[string]any{}); res.IsError || firstText(res) != "ok" {
		t.Errorf("a call after the flood: %s", firstText(res))
	}
}

// The gateway opens a streamable HTTP server's GET stream only when the
// server declared it sends tools/list_changed, the one thing the gateway
// hears on it; one that did not is asked nothing between calls.
func TestListensOnlyWhenTold(t *testing.T) {
	var entries []registry.Entry
	gets := map[bool]*atomic.Int64{}
	for _, listChanged := range []bool{true, false} {
		up := server.NewMCPServer("up", "1", server.WithToolCapabilities(listChanged))
		up.AddTool(mcp.NewTool("t"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
		h := server.NewStreamableHTTPServer(up)
		n := new(atomic.Int64)
		gets[listChanged] = n
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				n.Add(1)
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close() })
		name := map[bool]string{true: "listening", false: "quiet"}[listChanged]
		entries = append(entries, remoteEntry("urn:air:ardgate.test:mcp:"+name, ts.URL))
	}
	tg := newGateway(t, 10*time.Second, entries...)
	s := tg.connect(t)
	for _, e := range entries {
		if res := s.call("attach_resource", map[string]any{"urn": e.Identifier}); res.IsError {
			t.Fatalf("attach %s: %s", e.Identifier, firstText(res))
		}
	}
	for _, name := range []string{"mcp_listening__t", "mcp_quiet__t"} {
		if res := s.call(name, map[string]any{}); res.IsError || firstText(res) != "ok" {
			t.Fatalf("%s: %s", name, firstText(res))
		}
	}
	for end := time.Now().Add(5 * time.Second); gets[true].Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the server that declared tools/list_changed was never listened to")
		}
	}
	time.Sleep(100 * time.Millisecond) // as long again for the other, were it listened to
	if n := gets[false].Load(); n != 0 {
		t.Errorf("%d GETs to a server that declared no tools/list_changed", n)
	}
	if n := gets[true].Load(); n != 1 {
		t.Errorf("%d GETs to the server that declared it, want 1", n)
	}
}

// A tools/list waits for the session's pinned servers that are still
// starting, over streamable HTTP as over stdio (e2e_config_test.go), but
// no longer than PinnedListWait from the session's start.
func TestListWaitsForPinned(t *testing.T) {
	fixture := buildFixture(t)
	for _, tc := range []struct {
		name       string
		delay      string
		wait       time.Duration
		wantListed bool
		wantStatus string
	}{
		{"starts within the wait", "300ms", 0, true, attach.StatusUp},
		{"slower than the wait", "5s", 300 * time.Millisecond, false, attach.StatusStarting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pinned := []config.Server{{Name: "slow", Command: fixture, Args: []string{"--transport=stdio", "--start-delay=" + tc.delay}}}
			s := newGatewayWith(t, 10*time.Second, Options{Version: "test", PinnedListWait: tc.wait}, HTTPOptions{}, pinned).connect(t)
			start := time.Now()
			names := s.tools()
			took := time.Since(start)
			if got := slices.Contains(names, "mcp_slow__echo"); got != tc.wantListed {
				t.Fatalf("first tools/list after %s has the pinned tools: %v, want %v (%v)", took, got, tc.wantListed, names)
			}
			if !tc.wantListed && took > 3*time.Second {
				t.Fatalf("tools/list took %s, past a wait of %s", took, tc.wait)
			}
			var l struct {
				Attachments []struct{ Name, Status string }
			}
			_ = json.Unmarshal(s.call("list_attached_resources", map[string]any{}).RawStructuredContent, &l)
			if len(l.Attachments) != 1 || l.Attachments[0].Status != tc.wantStatus {
				t.Fatalf("listing: %+v, want the pinned server %s", l, tc.wantStatus)
			}
		})
	}
}

// Past max_sessions, a client that would open one more session is refused
// with 503 and a sentence; the sessions open go on, and once one ends a
// new one opens.
func TestMaxSessions(t *testing.T) {
	tg := newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{MaxSessions: 2}, nil)
	first := tg.connect(t)
	tg.connect(t)
	tr, err := transport.NewStreamableHTTP(tg.url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = c.Initialize(context.Background(), mcp.InitializeRequest{})
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "max_sessions") {
		t.Fatalf("a third session: %v", err)
	}
	if res := first.call("gateway_health", map[string]any{}); res.IsError {
		t.Fatalf("a session open meanwhile: %s", firstText(res))
	}
	// An initialize that names a session, or holds the stateless
	// protocol's _meta key anywhere, opens a session all the same at
	// mcp-go's server: it is refused alike (fifty went past a cap of 3).
	for _, c := range []struct{ name, header, body string }{
		{"naming a session", first.c.GetSessionId(), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`},
		{"the stateless key in clientInfo", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"io.modelcontextprotocol/protocolVersion","version":"1"}}}`},
	} {
		req, _ := http.NewRequest(http.MethodPost, tg.url, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.header != "" {
			req.Header.Set("Mcp-Session-Id", c.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || tg.g.open.Load() != 2 {
			t.Errorf("an initialize %s at max_sessions: %s, %d sessions open", c.name, resp.Status, tg.g.open.Load())
		}
	}
	// /healthz stays ok for the sessions open, and says it takes no more.
	health := func() (int, bool) {
		resp, err := http.Get(strings.TrimSuffix(tg.url, "/mcp") + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h struct {
			Accepting bool `json:"accepting_sessions"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&h)
		return resp.StatusCode, h.Accepting
	}
	if code, accepting := health(); code != http.StatusOK || accepting {
		t.Errorf("/healthz at max_sessions: %d, accepting %v", code, accepting)
	}
	_ = first.c.Close() // ends its session
	for end := time.Now().Add(5 * time.Second); tg.g.open.Load() > 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d sessions open after one of two ended", tg.g.open.Load())
		}
	}
	if code, accepting := health(); code != http.StatusOK || !accepting {
		t.Errorf("/healthz below max_sessions: %d, accepting %v", code, accepting)
	}
	tg.connect(t)
	http.DefaultClient.CloseIdleConnections()
}

// A session that ends under a call, or under an attach still starting,
// tells the call so, with session_closed: the call said its upstream was
// down, "detached; attach_resource … again to restart it", and the attach
// blamed the server ("the server did not start: … context canceled"),
// though neither could be helped by what they advised. Failed calls are
// counted by the attachment's URN, not by the name its client chose.
func TestSessionEndsUnderCall(t *testing.T) {
	up := newRecordingUpstream(t)
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read whole, so that net/http sees the client go; never answered.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(hung.Close)
	tg := newGateway(t, 30*time.Second, remoteEntry(fastURN, up.URL), remoteEntry("urn:air:ardgate.test:mcp:hung", hung.URL))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": fastURN, "name": "chosen"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	if res := s.call("mcp_chosen__big", map[string]any{"bytes": 12 << 20}); !res.IsError {
		t.Fatal("a 12 MiB answer did not fail")
	}
	if m := tg.metrics(t); !strings.Contains(m, `ardgate_upstream_errors_total{code="upstream_error",urn="`+fastURN+`"} 1`) {
		t.Errorf("the failed call is not counted by URN:\n%s", m)
	}

	results := make(chan *mcp.CallToolResult, 2)
	go func() { results <- s.call("mcp_chosen__slow", map[string]any{"ms": 20000}) }()
	go func() { results <- s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:hung"}) }()
	for deadline := time.Now().Add(5 * time.Second); up.inflight.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow call never reached the upstream")
		}
	}
	// The attach is under way too: a call of its tools says so.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "mcp_hung__echo"
		_, err := s.c.CallTool(context.Background(), req)
		if err != nil && strings.Contains(err.Error(), "hung is still being attached (its attach_resource has not returned") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a call of a server still being attached: %v", err)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, tg.url, nil)
	req.Header.Set("Mcp-Session-Id", s.c.GetSessionId())
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %v %v", err, resp)
	}
	resp.Body.Close()
	for range 2 {
		select {
		case res := <-results:
			if s.code(res) != "session_closed" || !strings.Contains(firstText(res), "session closed while") {
				t.Errorf("cut short by the session's end: %s %s", s.code(res), firstText(res))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a call outlived its session by 10 s")
		}
	}
}

// Attaching a URN that is attached already, under another name, says the
// attachment keeps its name and how to rename it; the same name, or none,
// says nothing.
func TestAttachAgainUnderAnotherName(t *testing.T) {
	up := upstream(t)
	const urn = "urn:air:ardgate.test:mcp:remote"
	tg := newGateway(t, 10*time.Second, remoteEntry(urn, up.URL))
	tg.g.manager.Registries = append(tg.g.manager.Registries, registry.NewLocal("team", registry.NewIndex("team", []registry.Entry{remoteEntry(urn, up.URL)})))
	s := tg.connect(t)
	for _, c := range []struct{ name, registry, note string }{
		{"", "", ""},
		{"Remote", "", ""}, // the name it has, as names are written
		{"", "test", ""},
		{"other", "", `is attached already, under the name remote, and keeps it: detach_resource remote first to attach it as "other".`},
		// Another registry's entry of the URN is not what it got: said.
		{"", "team", `is attached already, from registry test, and keeps that entry: detach_resource remote first to attach the entry of team.`},
	} {
		var out struct{ Status, Name, Note string }
		args := map[string]any{"urn": urn}
		if c.name != "" {
			args["name"] = c.name
		}
		if c.registry != "" {
			args["registry_id"] = c.registry
		}
		err := json.Unmarshal(s.call("attach_resource", args).RawStructuredContent, &out)
		out.Note = strings.TrimSpace(strings.TrimSuffix(out.Note, instructionsNote)) // the fixture gives instructions
		if err != nil || out.Name != "remote" || !strings.HasSuffix(out.Note, c.note) || (c.note == "") != (out.Note == "") {
			t.Fatalf("attach %v: %+v %v; want the name remote and the note %q", args, out, err, c.note)
		}
	}
	// A name that is not one as asked is said to have changed.
	s.call("detach_resource", map[string]any{"name": "remote"})
	var out struct{ Name, Note string }
	if err := json.Unmarshal(s.call("attach_resource", map[string]any{"urn": urn, "name": "Bad Name!"}).RawStructuredContent, &out); err != nil ||
		out.Name != "bad_name" || !strings.HasPrefix(out.Note, `attached as bad_name, not "Bad Name!": an attachment's name is lower-case letters`) {
		t.Fatalf("attach as \"Bad Name!\": %+v %v", out, err)
	}
}

// A drain whose last call ends as its context does (a second signal at
// that moment) cut no call, and says none was cut.
func TestDrainEndingAsTheLastCallDoes(t *testing.T) {
	tg := newGateway(t, time.Second)
	tg.g.running.Add(1) // a call running
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(25*time.Millisecond, func() {
		tg.g.running.Add(-1) // it ends, and the drain's time with it
		cancel()
	})
	if err := tg.g.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
}

// A call the server answers, its answer an event stream already (the
// session's notices queued, with no GET stream to take them), still
// running when the drain ends, is answered: the call ends saying the
// gateway is shutting down. mcp-go's shutdown closed its stream first,
// and the client got the notices and no answer at all.
func TestShutdownAnswersTheServersCalls(t *testing.T) {
	pinned := []config.Server{{Name: "fx", Command: buildFixture(t), Args: []string{"--transport=stdio"}}}
	tg := newGatewayWith(t, time.Minute, Options{Version: "test"}, HTTPOptions{}, pinned)
	c := dialRaw(t, tg, "")
	c.send(c.request(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	resp, _ := c.response()
	c.sid = resp.Header.Get("Mcp-Session-Id")
	c.send(c.request(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	c.response()
	// Its pinned server comes up, and the notice that its tools changed
	// waits in the server's queue.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if s := tg.g.lookup(c.sid); s != nil && s.NoticesQueued() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no notice queued for the session")
		}
	}
	c.send(c.request(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"mcp_fx__slow","arguments":{"ms":30000}}}`))
	tg.waitRunning(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := tg.g.Drain(ctx); !errors.Is(err, ErrCallsCut) {
		t.Fatalf("drain: %v, want the call cut", err)
	}
	shut := make(chan error, 1)
	go func() { shut <- tg.h.Shutdown(context.Background()) }()
	resp, body := c.response()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("the call's answer is %q; want the event stream the server began with the session's notices", resp.Header.Get("Content-Type"))
	}
	if !strings.Contains(body, `"id":6,"result"`) || !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "shutting down") {
		t.Errorf("the call cut at shutdown was answered %q; want a result saying the gateway is shutting down", trim(body))
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
}

// An attach under way is listed as starting, counted by gateway_health,
// and stopped by a detach, its attach_resource ending saying so: the
// listing showed nothing of it, and a detach said it was not attached.
func TestDetachWhileStarting(t *testing.T) {
	tg := newGateway(t, time.Minute, remoteEntry(lateURN, lateUpstream(t, 30*time.Second)))
	s := tg.connect(t)
	attached := make(chan *mcp.CallToolResult, 1)
	go func() { attached <- s.call("attach_resource", map[string]any{"urn": lateURN}) }()
	var l struct {
		Count       int
		Attachments []struct{ URN, Name, Status string }
	}
	var raw json.RawMessage
	for deadline := time.Now().Add(5 * time.Second); l.Count == 0; time.Sleep(10 * time.Millisecond) {
		raw = s.call("list_attached_resources", map[string]any{}).RawStructuredContent
		_ = json.Unmarshal(raw, &l)
		if time.Now().After(deadline) {
			t.Fatal("an attach under way was never listed")
		}
	}
	if a := l.Attachments[0]; l.Count != 1 || a.URN != lateURN || a.Name != "late" || a.Status != "starting" {
		t.Fatalf("listed as %+v", l)
	}
	// What is not known yet is left out, not listed as "" (kind "" is
	// neither mcp_server nor a2a_agent).
	if strings.Contains(string(raw), `""`) {
		t.Errorf("an attach under way listed with empty fields: %s", raw)
	}
	if h := string(s.call("gateway_health", map[string]any{}).RawStructuredContent); !strings.Contains(h, `"starting":1`) {
		t.Errorf("gateway_health: %s", h)
	}
	var d struct{ Status, Name, Note string }
	if err := json.Unmarshal(s.call("detach_resource", map[string]any{"name": "late"}).RawStructuredContent, &d); err != nil || d.Status != "detached" || d.Name != "late" || !strings.Contains(d.Note, "still starting") {
		t.Fatalf("detach while starting: %+v %v", d, err)
	}
	select {
	case res := <-attached:
		if s.code(res) != "not_attached" || !strings.Contains(firstText(res), "detach_resource stopped it while it was starting") {
			t.Fatalf("the attach stopped: %s %s", s.code(res), firstText(res))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the attach went on after its detach")
	}
	_ = json.Unmarshal(s.call("list_attached_resources", map[string]any{}).RawStructuredContent, &l)
	if l.Count != 0 {
		t.Fatalf("after the detach: %+v", l)
	}
}

// A page of an origin the gateway allows (localhost) may use it from a
// browser: its preflight is answered before the token, which it never
// carries, and every answer says the origin may read it and the session
// id; a page of another origin is refused, preflight and all.
func TestCORS(t *testing.T) {
	tg, _, sid := keptGateway(t, HTTPOptions{AuthToken: "s3cret"})
	do := func(method, origin string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, tg.url, strings.NewReader(callBody(1, "mcp_remote__echo", "from a page")))
		req.Header.Set("Origin", origin)
		for i := 0; i < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	pre := do(http.MethodOptions, "http://localhost:5173", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, mcp-session-id")
	if pre.StatusCode != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") || !strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("preflight: %d %v", pre.StatusCode, pre.Header)
	}
	for range 2 { // the second on a connection the gateway would keep
		post := do(http.MethodPost, "http://localhost:5173", "Authorization", "Bearer s3cret", "Mcp-Session-Id", sid,
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
		if post.StatusCode != http.StatusOK || post.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
			!strings.Contains(post.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
			t.Errorf("a call from the page: %d %v", post.StatusCode, post.Header)
		}
	}
	if r := do(http.MethodOptions, "https://evil.example", "Access-Control-Request-Method", "POST"); r.StatusCode != http.StatusForbidden || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a preflight from another origin: %d %v", r.StatusCode, r.Header)
	}
	if r := do(http.MethodPost, "http://localhost:5173", "Mcp-Session-Id", sid, "Content-Type", "application/json"); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("a call from the page without the token: %d", r.StatusCode)
	}
	http.DefaultClient.CloseIdleConnections()
}
