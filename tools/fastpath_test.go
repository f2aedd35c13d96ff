package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/testdata/mcpfixture"
)

const fastURN = "urn:air:ardgate.test:mcp:remote"

// recordingUpstream is the fixture over streamable HTTP, recording the
// JSON-RPC ids of the tools/call requests it gets and counting the calls
// in flight. The gateway's fast path numbers its requests "ardgate-N";
// the MCP client behind the server's path numbers them 1, 2, …
type recordingUpstream struct {
	*httptest.Server
	mu       sync.Mutex
	ids      []string
	inflight atomic.Int64
	inits    atomic.Int64 // initialize requests: one per connection
	lists    atomic.Int64 // tools/list requests
	session  atomic.Value // the last Mcp-Session-Id a client sent
	ended    atomic.Value // a session id answered 404 from now on, as a stateful server does

	// events, when set, turns each tools/call's JSON answer into an event
	// stream, as many servers send it: a comment, a tools/list_changed
	// notification, a ping request and a roots/list request, then the
	// response over several data lines. The answers to the server's
	// requests are kept in pongs; pings counts the streams.
	events atomic.Bool
	pings  atomic.Int64
	pongs  []string
}

func newRecordingUpstream(t testing.TB) *recordingUpstream {
	t.Helper()
	u := &recordingUpstream{}
	h := server.NewStreamableHTTPServer(mcpfixture.New("remote"))
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(server.HeaderKeySessionID); id != "" {
			if id == u.ended.Load() {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			u.session.Store(id)
		}
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, msg := peekMessage(r)
		switch msg.Method {
		case "initialize":
			u.inits.Add(1)
		case "tools/list":
			u.lists.Add(1)
		case "":
			if strings.HasPrefix(string(msg.ID), `"srv-`) {
				u.mu.Lock()
				u.pongs = append(u.pongs, string(body))
				u.mu.Unlock()
				w.WriteHeader(http.StatusAccepted)
				return
			}
		case "tools/call":
			u.mu.Lock()
			u.ids = append(u.ids, string(msg.ID))
			u.mu.Unlock()
			u.inflight.Add(1)
			defer u.inflight.Add(-1)
			if u.events.Load() && strings.HasPrefix(string(msg.ID), `"ardgate-`) {
				u.asEvents(w, r, h)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); u.Close() })
	return u
}

// peekMessage reads r's body, a JSON-RPC message, and puts it back for the
// handler: the body, and the message's id and method.
func peekMessage(r *http.Request) ([]byte, jsonrpcHead) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg jsonrpcHead
	_ = json.Unmarshal(body, &msg)
	return body, msg
}

type jsonrpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (u *recordingUpstream) asEvents(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var indented bytes.Buffer
	if rec.Code != http.StatusOK || json.Indent(&indented, rec.Body.Bytes(), "", "  ") != nil {
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": a comment\n\n")
	fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
	n := u.pings.Add(1)
	fmt.Fprintf(w, "id: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-ping-%d\",\"method\":\"ping\"}\n\n", n)
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-roots-%d\",\"method\":\"roots/list\"}\n\n", n)
	for line := range strings.SplitSeq(indented.String(), "\n") {
		fmt.Fprintf(w, "data: %s\r\n", line)
	}
	fmt.Fprint(w, "\r\n")
}

// lastID returns the id of the last tools/call the upstream got.
func (u *recordingUpstream) lastID() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.ids) == 0 {
		return ""
	}
	return u.ids[len(u.ids)-1]
}

func fastPathTaken(id string) bool { return strings.HasPrefix(id, `"ardgate-`) }

func attachRemote(t *testing.T, s *clientSession) {
	t.Helper()
	if res := s.call("attach_resource", map[string]any{"urn": fastURN}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
}

// The fast path and the server's path give the client the same result,
// byte for byte once re-encoded, for a proxied tool called by its name or
// through call_attached_tool: text, structuredContent, tool errors,
// upstream protocol errors and a result of 300 KiB alike. The upstream's
// request ids show which path each call took.
func TestFastPathSameAsServerPath(t *testing.T) {
	up := newRecordingUpstream(t)
	tg := newGateway(t, 10*time.Second, remoteEntry(fastURN, up.URL))
	s := tg.connect(t)
	attachRemote(t, s)

	cases := []struct {
		tool string
		args any
	}{
		{"echo", map[string]any{"message": "hello"}},
		{"add", map[string]any{"a": 2, "b": 3.5}},
		{"schema_probe", map[string]any{"query": "q", "filters": map[string]any{"tags": []any{"a"}}}},
		{"slow", map[string]any{"ms": -1}},          // a tool error result
		{"echo", map[string]any{"nope": true}},      // missing argument
		{"echo", nil},                               // no arguments at all
		{"big", map[string]any{"bytes": 300 << 10}}, // written where it lies (jsonrpc.InPlace)
	}
	// A progress token that is neither a string nor a number keeps a call
	// off the fast path; the server relays progress for it all the same.
	serverPath := &mcp.Meta{ProgressToken: map[string]any{"takes": "the server's path"}}
	for _, c := range cases {
		fast := s.call("mcp_remote__"+c.tool, c.args)
		if id := up.lastID(); !fastPathTaken(id) {
			t.Fatalf("%s: the call did not take the fast path (upstream saw id %s)", c.tool, id)
		}
		through := s.call("call_attached_tool", map[string]any{"name": "mcp_remote__" + c.tool, "arguments": c.args})
		if id := up.lastID(); !fastPathTaken(id) {
			t.Fatalf("%s: call_attached_tool did not take the fast path (upstream saw id %s)", c.tool, id)
		}
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments, req.Params.Meta = "mcp_remote__"+c.tool, c.args, serverPath
		slow, err := s.c.CallTool(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if id := up.lastID(); fastPathTaken(id) {
			t.Fatalf("%s: the call meant for the server's path took the fast path (upstream saw id %s)", c.tool, id)
		}
		fj, _ := json.Marshal(fast)
		tj, _ := json.Marshal(through)
		sj, _ := json.Marshal(slow)
		if !bytes.Equal(fj, sj) || !bytes.Equal(tj, sj) {
			t.Errorf("%s(%v):\nfast    %s\nthrough %s\nserver  %s", c.tool, c.args, fj, tj, sj)
		}
	}

	// A task-augmented call takes the server's path, which runs the tool
	// as a task only if its definition says it may.
	ttl := int64(60000)
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "mcp_remote__echo", map[string]any{"message": "as a task?"}
	req.Params.Task = &mcp.TaskParams{TTL: &ttl}
	res, err := s.c.CallTool(context.Background(), req)
	if err != nil || firstText(res) != "as a task?" || fastPathTaken(up.lastID()) {
		t.Errorf("a task-augmented call: %v %+v, the upstream saw id %s", err, res, up.lastID())
	}

	// A progress token, or other _meta, takes the fast path too (see
	// progress_test.go); a token neither a string nor a number takes the
	// server's path.
	for _, c := range []struct {
		meta *mcp.Meta
		fast bool
	}{
		{&mcp.Meta{ProgressToken: "p1"}, true},
		{&mcp.Meta{ProgressToken: 7, AdditionalFields: map[string]any{"example.com/trace": "x"}}, true},
		{&mcp.Meta{AdditionalFields: map[string]any{"example.com/trace": "x"}}, true},
		{&mcp.Meta{ProgressToken: map[string]any{"an": "object"}}, false},
	} {
		req := mcp.CallToolRequest{}
		req.Params.Name = "mcp_remote__echo"
		req.Params.Arguments = map[string]any{"message": "with _meta"}
		req.Params.Meta = c.meta
		res, err := s.c.CallTool(context.Background(), req)
		if err != nil || firstText(res) != "with _meta" {
			t.Fatalf("_meta %+v: %v %+v", c.meta, err, res)
		}
		if id := up.lastID(); fastPathTaken(id) != c.fast {
			t.Errorf("_meta %+v: the upstream saw id %s; fast path wanted: %v", c.meta, id, c.fast)
		}
	}
}

// Servers that answer a call with an event stream: the fast path reads
// the response from it, passes the server's notifications on (here a
// tools/list_changed, which makes the gateway list the tools again),
// answers its ping, refuses its roots/list by name (the gateway offers its
// upstreams no roots), and gives the client what the server's path gives
// (answered as JSON here).
func TestFastPathEventStream(t *testing.T) {
	up := newRecordingUpstream(t)
	tg := newGateway(t, 10*time.Second, remoteEntry(fastURN, up.URL))
	s := tg.connect(t)
	attachRemote(t, s)
	up.events.Store(true)
	lists := up.lists.Load()

	for _, c := range []struct {
		tool string
		args any
	}{
		{"echo", map[string]any{"message": "hello"}},
		{"add", map[string]any{"a": 2, "b": 3.5}},
		{"slow", map[string]any{"ms": -1}}, // a tool error result
	} {
		fast := s.call("mcp_remote__"+c.tool, c.args)
		if id := up.lastID(); !fastPathTaken(id) {
			t.Fatalf("%s: the call did not take the fast path (upstream saw id %s)", c.tool, id)
		}
		slow := s.call("call_attached_tool", map[string]any{"name": "mcp_remote__" + c.tool, "arguments": c.args})
		fj, _ := json.Marshal(fast)
		sj, _ := json.Marshal(slow)
		if !bytes.Equal(fj, sj) {
			t.Errorf("%s(%v):\nfast   %s\nserver %s", c.tool, c.args, fj, sj)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		up.mu.Lock()
		pongs := slices.Clone(up.pongs)
		up.mu.Unlock()
		if len(pongs) == 2*int(up.pings.Load()) && up.lists.Load() > lists {
			for _, p := range pongs {
				switch {
				case strings.Contains(p, `"srv-ping-`) && !strings.Contains(p, `"result":{}`):
					t.Errorf("a ping answered with %s", p)
				case strings.Contains(p, `"srv-roots-`) && !(strings.Contains(p, `"code":-32601`) && strings.Contains(p, "roots/list")):
					t.Errorf("a roots/list answered with %s; want method not found, naming it", p)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d answers to %d pings and as many roots/list; tools listed %d times after the notifications (%d before)", len(pongs), up.pings.Load(), up.lists.Load(), lists)
		}
	}
}

// An upstream that ends the session (404 to a call) is down, and the call
// says so and what to do; the next call opens a new session with it.
func TestFastPathUpstreamEndsSession(t *testing.T) {
	up := newRecordingUpstream(t)
	tg := newGateway(t, 10*time.Second, remoteEntry(fastURN, up.URL))
	s := tg.connect(t)
	attachRemote(t, s)
	if res := s.call("mcp_remote__echo", map[string]any{"message": "hi"}); res.IsError || !fastPathTaken(up.lastID()) {
		t.Fatalf("first call: %s (upstream saw id %s)", firstText(res), up.lastID())
	}
	up.ended.Store(up.session.Load())
	res := s.call("mcp_remote__echo", map[string]any{"message": "again"})
	if s.code(res) != "upstream_down" || !strings.Contains(firstText(res), "ended the session") || !strings.Contains(firstText(res), "a call tries to reach it again") {
		t.Fatalf("a call after the upstream ended the session: code %q, %s", s.code(res), firstText(res))
	}
	ended := up.session.Load()
	if res := s.call("mcp_remote__echo", map[string]any{"message": "anew"}); res.IsError || firstText(res) != "anew" || up.session.Load() == ended {
		t.Fatalf("the call after: %s, in session %v (the ended one %v)", firstText(res), up.session.Load(), ended)
	}
}

// Detaching a server ends its fast calls in flight at once, as it does
// on the server's path.
func TestFastPathDetachEndsCall(t *testing.T) {
	up := newRecordingUpstream(t)
	tg := newGateway(t, time.Minute, remoteEntry(fastURN, up.URL))
	s := tg.connect(t)
	attachRemote(t, s)
	done := make(chan *mcp.CallToolResult, 1)
	go func() { done <- s.call("mcp_remote__slow", map[string]any{"ms": 30000}) }()
	for deadline := time.Now().Add(5 * time.Second); up.inflight.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow call never reached the upstream")
		}
	}
	if !fastPathTaken(up.lastID()) {
		t.Fatalf("the slow call did not take the fast path (upstream saw id %s)", up.lastID())
	}
	s.call("detach_resource", map[string]any{"name": "remote"})
	select {
	case res := <-done:
		if !res.IsError || !strings.Contains(firstText(res), "detached") {
			t.Fatalf("a call whose server was detached: %s", firstText(res))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call in flight went on after its server was detached")
	}
}

// What every call passes applies on the fast path too: the result cap,
// the session's rate limit, and the refusal of new calls while draining.
func TestFastPathLimits(t *testing.T) {
	up := newRecordingUpstream(t)
	opts := Options{Version: "test", MaxResultBytes: 1000,
		Limits: guard.Limits{CallsPerSecond: 0.001, CallBurst: 3}}
	tg := newGatewayWith(t, 10*time.Second, opts, HTTPOptions{}, nil, remoteEntry(fastURN, up.URL))
	s := tg.connect(t)
	attachRemote(t, s) // the first of the three calls the burst allows

	res := s.call("mcp_remote__big", map[string]any{"bytes": 5000})
	if !fastPathTaken(up.lastID()) {
		t.Fatal("the big call did not take the fast path")
	}
	if res.IsError || len(res.Content) != 2 || len(firstText(res)) != 1000 ||
		!strings.Contains(res.Content[1].(mcp.TextContent).Text, "max_result_bytes") {
		t.Fatalf("over-cap result not cut with a note: %d parts, first %d bytes", len(res.Content), len(firstText(res)))
	}
	if res := s.call("mcp_remote__echo", map[string]any{"message": "third"}); res.IsError {
		t.Fatalf("third call: %s", firstText(res))
	}
	calls := len(up.ids)
	if res := s.call("mcp_remote__echo", map[string]any{"message": "fourth"}); s.code(res) != "rate_limited" {
		t.Fatalf("fourth call past the burst: code %q, %s", s.code(res), firstText(res))
	}
	if len(up.ids) != calls {
		t.Fatal("a call refused by the rate limit reached the upstream")
	}

	tg2 := newGateway(t, 10*time.Second, remoteEntry(fastURN, up.URL))
	s2 := tg2.connect(t)
	attachRemote(t, s2)
	tg2.g.Drain(context.Background())
	if res := s2.call("mcp_remote__echo", map[string]any{"message": "late"}); s2.code(res) != "shutting_down" {
		t.Fatalf("a call while draining: code %q, %s", s2.code(res), firstText(res))
	}
}

// A session that only makes fast calls is not ended as idle: the gateway
// winds the MCP server's idle clock of it often enough, whether its calls
// come on a connection the gateway keeps or each on a new connection of
// net/http's.
func TestFastPathKeepsSessionAlive(t *testing.T) {
	t.Run("kept connection", func(t *testing.T) { fastPathKeepsSessionAlive(t) })
	t.Run("a connection per request", func(t *testing.T) {
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		fastPathKeepsSessionAlive(t, transport.WithHTTPBasicClient(hc))
	})
}

func fastPathKeepsSessionAlive(t *testing.T, opts ...transport.StreamableHTTPCOption) {
	up := newRecordingUpstream(t)
	const ttl = 400 * time.Millisecond
	tg := newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{IdleTTL: ttl}, nil, remoteEntry(fastURN, up.URL))
	s := tg.connect(t, opts...)
	attachRemote(t, s)
	calls, fast := 0, 0
	// mcp-go's sweeper looks every second: two looks.
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(ttl / 10) {
		if res := s.call("mcp_remote__echo", map[string]any{"message": "ping"}); res.IsError {
			t.Fatalf("call: %s", firstText(res))
		}
		calls++
		if fastPathTaken(up.lastID()) {
			fast++
		}
	}
	if fast != calls {
		t.Fatalf("%d of %d calls took the fast path", fast, calls)
	}
	if n := len(tg.g.manager.Sessions()); n != 1 {
		t.Fatalf("the session ended: %d sessions", n)
	}
	// The server still knows the session, and it never needed the
	// session's proxied tools.
	gs := tg.g.lookup(s.c.GetSessionId())
	gs.syncMu.Lock()
	held := len(gs.client.GetSessionTools())
	gs.syncMu.Unlock()
	if held != 0 {
		t.Errorf("the server's session holds %d tools", held)
	}
	if res := s.call("list_attached_resources", nil); res.IsError {
		t.Fatalf("a call on the server's path after the fast calls: %s", firstText(res))
	}
}

// Over stdio: the fast path answers calls, a notifications/cancelled from
// the client stops the upstream's work on a fast call, and the session
// goes on.
func TestFastPathStdio(t *testing.T) {
	up := newRecordingUpstream(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := &guard.Dialer{AllowLocal: true}
	m := &attach.Manager{
		Pinned:       []config.Server{{Name: "fx", URL: up.URL}},
		HTTP:         d.Client(),
		CallTimeout:  time.Minute,
		StartTimeout: 10 * time.Second,
		Log:          log,
	}
	t.Cleanup(m.HTTP.CloseIdleConnections) // after the session's end
	c := serveStdio(t, New(m, log, Options{Version: "test"}))
	ctx := context.Background()
	call := func(ctx context.Context, tool string, args any) (*mcp.CallToolResult, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, args
		return c.CallTool(ctx, req)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if res, err := call(ctx, "mcp_fx__echo", map[string]any{"message": "hi"}); err == nil && !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pinned upstream never became callable")
		}
	}
	// The call that first succeeds may have reached the MCP server before
	// the tool was known, and been answered there once it was.
	if res, err := call(ctx, "mcp_fx__echo", map[string]any{"message": "hi"}); err != nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
	if id := up.lastID(); !fastPathTaken(id) {
		t.Fatalf("the call did not take the fast path (upstream saw id %s)", id)
	}

	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := call(callCtx, "mcp_fx__slow", map[string]any{"ms": 30000})
		done <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); up.inflight.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow call never reached the upstream")
		}
	}
	cancel() // the client sends notifications/cancelled
	<-done
	for deadline := time.Now().Add(10 * time.Second); up.inflight.Load() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the upstream kept working on a call the client cancelled")
		}
	}
	res, err := call(ctx, "mcp_fx__echo", map[string]any{"message": "still here"})
	if err != nil || firstText(res) != "still here" {
		t.Fatalf("after the cancelled call: %v %v", err, res)
	}
}

// A call to a stdio upstream over stdio is answered from the upstream's
// pipe reader (StartRaw), with no goroutine of its own: results, a
// cancellation by the client, the call timeout, and a session that ends
// with a call in flight all behave as on the other paths.
func TestFastPathStdioUpstream(t *testing.T) {
	g := New(pinnedFixture(buildFixture(t), 4*time.Second), quietLog, Options{Version: "test", MaxResultBytes: 8 << 20})
	var hangUp time.Time
	t.Cleanup(func() { // runs once serveStdio's cleanup has returned
		// Well under the call timeout: the call was ended, not waited for
		// (closing the upstream may take its half-second grace).
		if took := time.Since(hangUp); took > 2500*time.Millisecond {
			t.Errorf("the session took %s to end with a call in flight; it should cancel the call", took)
		}
	})
	c := serveStdio(t, g)
	t.Cleanup(func() { hangUp = time.Now() }) // runs before it
	ctx := context.Background()
	call := func(ctx context.Context, tool string, args any) (*mcp.CallToolResult, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, args
		return c.CallTool(ctx, req)
	}
	waitCallable(t, c, "mcp_fx__echo", map[string]any{"message": "ready?"})

	// This upstream takes the path without a goroutine.
	got := make(chan string, 1)
	stop, ok := g.stdio.Load().att.StartRaw("mcp_fx__echo", json.RawMessage(`{"message":"started"}`), nil, nil, nil, func(raw json.RawMessage, err error, _ *jsonrpc.Batch) {
		got <- fmt.Sprint(string(raw), err)
	})
	if !ok {
		t.Fatal("StartRaw did not take a call to a stdio upstream")
	}
	if r := <-got; !strings.Contains(r, `"started"`) || !strings.HasSuffix(r, "<nil>") {
		t.Fatalf("StartRaw answered %s", r)
	}
	stop(context.Canceled) // after the end: nothing happens
	select {
	case r := <-got:
		t.Fatalf("a stopped call ended twice: %s", r)
	case <-time.After(50 * time.Millisecond):
	}

	// Results, tool errors and a 1 MiB result pass whole.
	if res, err := call(ctx, "mcp_fx__add", map[string]any{"a": 2, "b": 3}); err != nil || string(res.RawStructuredContent) != `{"sum":5}` {
		t.Fatalf("add: %v %+v", err, res)
	}
	if res, err := call(ctx, "mcp_fx__echo", map[string]any{}); err != nil || !res.IsError {
		t.Fatalf("echo without its argument: %v %+v", err, res)
	}
	if res, err := call(ctx, "mcp_fx__big", map[string]any{"bytes": 1 << 20}); err != nil || len(firstText(res)) != 1<<20 {
		t.Fatalf("big: %v, %d bytes", err, len(firstText(res)))
	}

	// The client cancels: the call ends at once and the session goes on.
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := call(callCtx, "mcp_fx__slow", map[string]any{"ms": 1500})
		done <- err
	}()
	waitCalling(t, g)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}

	// The call timeout (4 s) answers for an upstream that does not.
	start := time.Now()
	res, err := call(ctx, "mcp_fx__slow", map[string]any{"ms": 10000})
	if err != nil || !res.IsError || !strings.Contains(firstText(res), "did not answer slow within 4s") {
		t.Fatalf("slow past the timeout: %v %+v", err, res)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Fatalf("the timeout took %s", took)
	}
	if res, err := call(ctx, "mcp_fx__echo", map[string]any{"message": "still here"}); err != nil || firstText(res) != "still here" {
		t.Fatalf("after the timeout: %v %+v", err, res)
	}

	// A call still in flight when the client hangs up ends with the
	// session, at once (the cleanups above time it).
	go func() { _, _ = call(ctx, "mcp_fx__slow", map[string]any{"ms": 30000}) }()
	waitCalling(t, g)
}

// Many calls at once over stdio to a stdio upstream, some cancelled by the
// client on the way: every call that completes gets its own answer, none
// another's, and the session serves a call after all of them.
func TestFastPathStdioUpstreamConcurrent(t *testing.T) {
	c := serveStdio(t, New(pinnedFixture(buildFixture(t), 30*time.Second), quietLog, Options{Version: "test"}))
	waitCallable(t, c, "mcp_fx__echo", map[string]any{"message": "ready?"})

	var wg sync.WaitGroup
	var answered, cancelled atomic.Int64
	for i := range 200 {
		wg.Go(func() {
			ctx := context.Background()
			tool, args := "mcp_fx__echo", map[string]any{"message": fmt.Sprintf("call %d", i)}
			if i%10 == 0 { // a slow one, given up by the client after a moment
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
				defer cancel()
				tool, args = "mcp_fx__slow", map[string]any{"ms": 5000}
			}
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = tool, args
			res, err := c.CallTool(ctx, req)
			switch {
			case i%10 == 0:
				if err == nil {
					t.Errorf("call %d: a call given up on came back: %+v", i, res)
				}
				cancelled.Add(1)
			case err != nil || res.IsError || firstText(res) != args["message"]:
				t.Errorf("call %d: got %v %+v", i, err, res)
			default:
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	if answered.Load() != 180 || cancelled.Load() != 20 {
		t.Fatalf("%d answered, %d cancelled", answered.Load(), cancelled.Load())
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "mcp_fx__echo", map[string]any{"message": "after"}
	if res, err := c.CallTool(context.Background(), req); err != nil || firstText(res) != "after" {
		t.Fatalf("after the burst: %v %+v", err, res)
	}
}

// Frames that reach the gateway in one read are held and sent on in one
// write each way (jsonrpc.Batch): calls, a call the server answers, a
// malformed line and a notification, all in one write from the client,
// each get their own answer, and the session goes on.
func TestFastPathStdioBatched(t *testing.T) {
	c := rawStdio(t, New(pinnedFixture(buildFixture(t), 10*time.Second), quietLog, Options{Version: "test"}))
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)

	const calls = 60
	var burst bytes.Buffer
	want := map[string]string{} // id: what its answer holds
	for i := range calls {
		id := strconv.Itoa(100 + i)
		fmt.Fprintf(&burst, `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"call %d"}}}`+"\n", id, i)
		want[id] = fmt.Sprintf(`"text":"call %d"`, i)
		switch i {
		case 20:
			burst.WriteString(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}` + "\n")
			want[`"list"`] = `"mcp_fx__echo"`
		case 30:
			burst.WriteString(`{"jsonrpc":"2.0","id":"bad","method":` + "\n")
			want["null"] = `"code":-32700`
		case 40:
			burst.WriteString(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}` + "\n")
		}
	}
	if _, err := c.w.Write(burst.Bytes()); err != nil {
		t.Fatal(err)
	}
	for len(want) > 0 {
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			t.Fatalf("%v, with %d answers still to come", err, len(want))
		}
		var f struct{ ID json.RawMessage }
		if err := json.Unmarshal(line, &f); err != nil || f.ID == nil {
			continue // a notification
		}
		w, ok := want[string(f.ID)]
		if !ok {
			t.Fatalf("an answer to no call, or a second one: %.200s", line)
		}
		if !bytes.Contains(line, []byte(w)) {
			t.Fatalf("answer %s: %.200s; want %s in it", f.ID, line, w)
		}
		delete(want, string(f.ID))
	}
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"after"}`, `"text":"after"`)()
}

// isErrorResult reads the top-level isError member only, whatever comes
// before it or inside strings and nested values.
func TestIsErrorResult(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want bool
	}{
		{`{"content":[{"type":"text","text":"boom"}],"isError":true}`, true},
		{`{"isError":true,"content":[]}`, true},
		{` { "content" : [ ] , "isError" : true } `, true},
		{`{"content":[],"isError":false}`, false},
		{`{"content":[{"type":"text","text":"hi"}]}`, false},
		{`{"structuredContent":{"isError":true},"content":[]}`, false},
		{`{"content":[{"type":"text","text":"\"isError\":true"}]}`, false},
		{`{"content":[{"type":"text","text":"a \\\" b\\\\"}],"isError":true}`, true},
		{`{"isError":true,"isError":false}`, false},
		{`{"meta":[1,{"a":[2,3]},"x"],"n":-1.5e3,"b":null,"isError":true}`, true},
		{`[]`, false},
		{`{"isError":`, false},
	} {
		if got := isErrorResult([]byte(c.raw)); got != c.want {
			t.Errorf("isErrorResult(%s) = %v, want %v", c.raw, got, c.want)
		}
	}
}

// FuzzIsErrorResult holds isErrorResult to encoding/json on every valid
// JSON object.
//
//	go test -run '^$' -fuzz FuzzIsErrorResult ./tools
func FuzzIsErrorResult(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"boom"}],"isError":true}`,
		`{"structuredContent":{"isError":true},"content":[]}`,
		`{"content":[{"type":"text","text":"a \\\" b\\\\"}],"isError":true}`,
		`{"a":"\\","isError":true}`, `{"isError" : true }`, `{"isError":true,"isError":false}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m map[string]json.RawMessage
		if !json.Valid(raw) || json.Unmarshal(raw, &m) != nil {
			return
		}
		if want := string(m["isError"]) == "true"; isErrorResult(raw) != want {
			t.Fatalf("isErrorResult(%q) = %v; encoding/json finds isError %s", raw, !want, m["isError"])
		}
	})
}

// A small call over stdio to a stdio upstream allocates next to nothing in
// the gateway: the call's record, its id and key, and the two callbacks
// that end and stop it (5 when this was written, from 19 before). The
// client here is raw frames read in place, and the upstream a child
// process, so what is counted is the gateway's.
func TestFastPathStdioAllocations(t *testing.T) {
	const most = 8
	echo := rawEcho(t)
	if allocs := testing.AllocsPerRun(500, echo); allocs > most {
		t.Errorf("%.0f allocations a call, want at most %d", allocs, most)
	}
}

// In deferred mode every proxied call goes through call_attached_tool,
// which takes the fast path too, for a listed or a deferred tool alike,
// and is counted under its own name, as on the server's path. What the
// fast path does not take goes to the server, which says what is wrong:
// an unknown tool, a member the tool does not know, arguments that are
// not an object; and a member name in other letter case, which
// encoding/json matches, is served there too.
func TestFastPathCallAttachedTool(t *testing.T) {
	up := newRecordingUpstream(t)
	tg := newGateway(t, 10*time.Second, remoteEntry(fastURN, up.URL))
	tg.g.manager.Deferred = true
	s := tg.connect(t)
	attachRemote(t, s)
	if slices.Contains(s.tools(), "mcp_remote__echo") {
		t.Fatal("a deferred tool is listed")
	}
	res := s.call(callAttachedTool, map[string]any{"name": "mcp_remote__echo", "arguments": map[string]any{"message": "deferred"}})
	if firstText(res) != "deferred" || !fastPathTaken(up.lastID()) {
		t.Fatalf("call_attached_tool of a deferred tool: %+v, the upstream saw id %s", res, up.lastID())
	}
	if want := `ardgate_tool_calls_total{result="ok",tool="call_attached_tool"} 1`; !strings.Contains(tg.metrics(t), want) {
		t.Errorf("/metrics lacks %s", want)
	}

	for _, c := range []struct {
		args     map[string]any
		code     string // the failure's code; "" for a result
		contains string
	}{
		{map[string]any{"name": "mcp_remote__nope"}, "unknown_tool", "is not a tool of remote; its tools: mcp_remote__add"},
		{map[string]any{"name": "mcp_remote__echo", "arguments": map[string]any{"message": "x"}, "extra": 1}, "invalid_arguments", "extra"},
		{map[string]any{"name": "mcp_remote__echo", "arguments": "not an object"}, "invalid_arguments", `"arguments" must be an object`},
	} {
		up.mu.Lock()
		ids := len(up.ids)
		up.mu.Unlock()
		res := s.call(callAttachedTool, c.args)
		if got := s.code(res); got != c.code || !strings.Contains(firstText(res), c.contains) {
			t.Errorf("call_attached_tool %v: code %q, %q; want %q and %q in it", c.args, got, firstText(res), c.code, c.contains)
		}
		up.mu.Lock()
		for _, id := range up.ids[ids:] {
			if fastPathTaken(id) {
				t.Errorf("call_attached_tool %v took the fast path", c.args)
			}
		}
		up.mu.Unlock()
	}
	// A deferred tool is not registered: called by its own name, the
	// server says it does not know it.
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "mcp_remote__echo", map[string]any{"message": "x"}
	if _, err := s.c.CallTool(context.Background(), req); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a deferred tool called by its name: %v", err)
	}
}

// The gateway relays no MCP tasks: a tool that requires one is left out
// (it was listed, and a call with a task got a task of mcp-go's that ended
// at once, with no tasks/get), and one that may take one is listed without
// its execution member, called plainly, on the fast path.
func TestFastPathTaskRequired(t *testing.T) {
	up := rawToolsUpstream(t, func(string) string {
		return `{"tools":[{"name":"needs_task","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},
			{"name":"may_task","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}},
			{"name":"plain","inputSchema":{"type":"object"}}]}`
	})
	s, res := attachAt(t, up.URL)
	if res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	list, err := s.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		if strings.HasPrefix(tool.Name, "mcp_remote__") {
			names = append(names, tool.Name)
			if tool.Execution != nil {
				t.Errorf("%s listed with %+v", tool.Name, tool.Execution)
			}
		}
	}
	if !slices.Equal(names, []string{"mcp_remote__may_task", "mcp_remote__plain"}) {
		t.Errorf("listed: %v", names)
	}
	if res := s.call("call_attached_tool", map[string]any{"name": "mcp_remote__needs_task", "arguments": map[string]any{}}); !res.IsError {
		t.Errorf("the tool that needs a task, through call_attached_tool: %s", firstText(res))
	}
	if res := s.call("mcp_remote__may_task", map[string]any{}); firstText(res) != "ok" {
		t.Errorf("the tool that may take a task: %s", firstText(res))
	}
	if res := s.call("mcp_remote__plain", map[string]any{}); firstText(res) != "ok" {
		t.Errorf("the plain tool: %s", firstText(res))
	}
}
