package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/testdata/proctest"
)

// startHTTP runs the gateway binary in HTTP mode on a free loopback port
// and returns the MCP URL. At cleanup it sends SIGTERM and expects a clean
// exit.
func startHTTP(t *testing.T, environ []string, args ...string) (url string, stderr *syncBuffer) {
	t.Helper()
	url, stderr, _ = startHTTPStop(t, environ, args...)
	return url, stderr
}

// startHTTPStop is startHTTP that also returns a function stopping the
// gateway (SIGTERM, then waiting for it and its log) before the test ends.
func startHTTPStop(t *testing.T, environ []string, args ...string) (string, *syncBuffer, func()) {
	t.Helper()
	cmd := exec.Command(gatewayBin, append([]string{"serve", "--transport", "http", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Env = environ
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	lines := bufio.NewScanner(pipe)
	url := ""
	for url == "" && lines.Scan() {
		stderr.Write(append(lines.Bytes(), '\n'))
		var rec struct{ URL string }
		if json.Unmarshal(lines.Bytes(), &rec) == nil {
			url = rec.URL
		}
	}
	if url == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("gateway did not start:\n%s", stderr.String())
	}
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(stderr, pipe); close(copied) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { <-copied; done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("gateway exit after SIGTERM: %v", err)
				}
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Errorf("gateway did not exit within 20s of SIGTERM")
			}
			if t.Failed() {
				t.Logf("gateway stderr:\n%s", stderr.String())
			}
		})
	}
	t.Cleanup(stop)
	return url, stderr, stop
}

// connectHTTP opens one MCP session to the gateway.
func connectHTTP(t *testing.T, url string, opts ...client.ClientOption) *gateway {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{t: t, stderr: &syncBuffer{}}
	g.connect(tr, opts...)
	t.Cleanup(func() { _ = g.c.Close() })
	return g
}

func hasPrefix(names []string, prefix string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, prefix) })
}

// Two sessions on one gateway, one on the 2025-11-25 protocol and one on
// the newest: each sees only what it attached, and closing one ends its
// upstream processes and nothing else.
func TestHTTPTwoSessionsIsolated(t *testing.T) {
	remote := startFixtureHTTP(t)
	catalog := catalogWithRemote(t, remote)
	url, _ := startHTTP(t, env(true, "ARDGATE_ALLOW_LOCAL_URLS=true"), "--catalog", catalog)

	a := connectHTTP(t, url, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	b := connectHTTP(t, url) // newest protocol: negotiates down to a session
	for _, g := range []*gateway{a, b} {
		if v := g.c.ProtocolVersion(); v != mcp.ProtocolVersion20251125 {
			t.Fatalf("negotiated %q, want %s", v, mcp.ProtocolVersion20251125)
		}
		if g.c.GetSessionId() == "" {
			t.Fatal("no Mcp-Session-Id: attachments would have no session to live in")
		}
	}

	// Attach concurrently: A a local and a remote server, B a local one.
	var wg sync.WaitGroup
	for _, job := range []struct {
		g   *gateway
		urn string
	}{
		{a, "urn:air:ardgate.test:mcp:fixture"},
		{a, "urn:air:ardgate.test:mcp:remote-fixture"},
		{b, "urn:air:ardgate.test:mcp:fixture"},
	} {
		wg.Go(func() {
			res := job.g.call("attach_resource", map[string]any{"urn": job.urn})
			if res.IsError {
				t.Errorf("attach %s: %s", job.urn, text(res))
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	a.waitNote("notifications/tools/list_changed", 10*time.Second)
	b.waitNote("notifications/tools/list_changed", 10*time.Second)

	aTools, bTools := a.toolNames(), b.toolNames()
	if !slices.Contains(aTools, "mcp_fixture__echo") || !slices.Contains(aTools, "mcp_remote_fixture__echo") {
		t.Fatalf("session A tools: %v", aTools)
	}
	if !slices.Contains(bTools, "mcp_fixture__echo") || hasPrefix(bTools, "mcp_remote_fixture__") {
		t.Fatalf("session B sees A's attachment: %v", bTools)
	}
	b.fails("call_attached_tool", map[string]any{"name": "mcp_remote_fixture__echo", "arguments": map[string]any{"message": "x"}}, "unknown_tool")

	if got := text(a.call("mcp_remote_fixture__echo", map[string]any{"message": "over http"})); got != "over http" {
		t.Fatalf("remote echo = %q", got)
	}
	if got := text(b.call("mcp_fixture__echo", map[string]any{"message": "session b"})); got != "session b" {
		t.Fatalf("B echo = %q", got)
	}
	aPid, bPid := a.pidOf("fixture"), b.pidOf("fixture")
	if aPid == bPid {
		t.Fatal("sessions share one upstream process")
	}
	if l := b.list(); l.Count != 1 {
		t.Fatalf("B lists %d attachments, want 1: %+v", l.Count, l)
	}

	// Closing A (DELETE) ends A's processes; B's keeps serving.
	if err := a.c.Close(); err != nil {
		t.Fatal(err)
	}
	waitGroupGone(t, aPid, 10*time.Second)
	if len(proctest.GroupMembers(bPid)) == 0 {
		t.Fatal("closing session A killed session B's upstream")
	}
	if got := text(b.call("mcp_fixture__echo", map[string]any{"message": "still here"})); got != "still here" {
		t.Fatalf("B after A closed: %q", got)
	}
	if err := b.c.Close(); err != nil {
		t.Fatal(err)
	}
	waitGroupGone(t, bPid, 10*time.Second)
}

// The npm reference server over HTTP: attach in one session, invisible to
// the other, gone with its session.
func TestHTTPEverythingEndToEnd(t *testing.T) {
	needNPX(t)
	url, _ := startHTTP(t, env(false))
	a := connectHTTP(t, url)
	b := connectHTTP(t, url, client.WithProtocolVersion(mcp.ProtocolVersion20251125))

	var d discovered
	a.ok("discover_resources", map[string]any{"text": "echo test tools"}, &d)
	if d.Results[0].URN != "urn:air:modelcontextprotocol.io:mcp:everything" {
		t.Fatalf("first result %+v", d.Results[0])
	}
	a.ok("attach_resource", map[string]any{"urn": d.Results[0].URN}, nil)
	a.waitNote("notifications/tools/list_changed", 10*time.Second)
	if got := text(a.call("mcp_everything__echo", map[string]any{"message": "hi"})); got != "Echo: hi" {
		t.Fatalf("echo = %q", got)
	}
	if hasPrefix(b.toolNames(), "mcp_everything__") {
		t.Fatal("session B sees session A's tools")
	}
	pid := a.pidOf("everything")
	_ = a.c.Close()
	waitGroupGone(t, pid, 10*time.Second)
}

// The HTTP endpoint itself: health, and a request without a session.
func TestHTTPHealthz(t *testing.T) {
	url, _ := startHTTP(t, env(false))
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ Status string }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != 200 || h.Status != "ok" {
		t.Fatalf("healthz: %d %+v %v", resp.StatusCode, h, err)
	}
	// A tools/call with an unknown session id is refused, not served.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Session-Id", "mcp-session-00000000-0000-0000-0000-000000000000")
	req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown session: HTTP %d, want 404", resp2.StatusCode)
	}
}

// A session whose client went away without ending it is ended once no
// request of it has come for session_idle_timeout (here set from the
// environment): its upstream processes are killed, it leaves /healthz's
// count, and its id is refused. A session in use meanwhile is not ended.
func TestHTTPIdleSessionSwept(t *testing.T) {
	url, _ := startHTTP(t, env(true, "ARDGATE_SESSION_IDLE_TIMEOUT=2s"), "--catalog", "testdata/catalogs/fixture.json")
	gone, busy, calling, listening := connectHTTP(t, url), connectHTTP(t, url), connectHTTP(t, url), connectHTTP(t, url)
	for _, g := range []*gateway{gone, busy, calling, listening} {
		if res := g.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}); res.IsError {
			t.Fatalf("attach: %s", text(res))
		}
	}
	pid, sid := gone.pidOf("fixture"), gone.c.GetSessionId()
	// A session whose client sends nothing is not idle while a call of
	// it runs, nor while its GET stream is open: both were swept.
	slow := make(chan string, 1)
	go func() { slow <- text(calling.call("mcp_fixture__slow", map[string]any{"ms": 6000})) }()
	stopListening := listen(t, url, listening.c.GetSessionId())
	defer stopListening()
	start := time.Now()
	for time.Since(start) < 6*time.Second { // past the timeout, and a sweep or two
		if got := text(busy.call("mcp_fixture__echo", map[string]any{"message": "busy"})); got != "busy" {
			t.Fatalf("the session in use, after %s: %q", time.Since(start).Round(time.Millisecond), got)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if got := <-slow; got != "slept 6000ms" {
		t.Fatalf("a call of 6 s with an idle timeout of 2 s: %q", got)
	}
	stopListening()
	if got := text(listening.call("mcp_fixture__echo", map[string]any{"message": "still here"})); got != "still here" {
		t.Fatalf("the session that listened: %q", got)
	}
	waitGroupGone(t, pid, 10*time.Second)
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h struct{ Sessions int }
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if err != nil || h.Sessions != 3 {
		t.Fatalf("healthz after the sweep: %d sessions (%v), want 3, the ones in use", h.Sessions, err)
	}
	if code := postStatus(t, url, sid); code != http.StatusNotFound {
		t.Fatalf("the swept session's id: HTTP %d, want 404", code)
	}
}

// A session whose client shows no sign of life for session_reap_after
// ends long before session_idle_timeout, and its server's process with
// it: the Inspector CLI, LangChain and Mastra close without a DELETE,
// and left their npx servers running for the idle timeout's 30 minutes.
// A session in use, one with a call running and one with its GET stream
// open are kept.
func TestHTTPQuietSessionReaped(t *testing.T) {
	t.Parallel()
	const reap = 3 * time.Second
	url, _ := startHTTP(t, env(true, "ARDGATE_SESSION_REAP_AFTER="+reap.String()), "--catalog", "testdata/catalogs/fixture.json")
	gone, busy, calling, listening := connectHTTP(t, url), connectHTTP(t, url), connectHTTP(t, url), connectHTTP(t, url)
	for _, g := range []*gateway{gone, busy, calling, listening} {
		if res := g.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}); res.IsError {
			t.Fatalf("attach: %s", text(res))
		}
	}
	slow := make(chan string, 1)
	go func() {
		slow <- text(calling.call("mcp_fixture__slow", map[string]any{"ms": (3 * reap).Milliseconds()}))
	}()
	stopListening := listen(t, url, listening.c.GetSessionId())
	defer stopListening()

	pid := gone.pidOf("fixture")
	for deadline := time.Now().Add(10 * reap); len(proctest.GroupMembers(pid)) > 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the quiet session's server still runs %s on: %v", 10*reap, proctest.GroupMembers(pid))
		}
		if got := text(busy.call("mcp_fixture__echo", map[string]any{"message": "busy"})); got != "busy" {
			t.Fatalf("the session in use: %q", got)
		}
	}
	if code := postStatus(t, url, gone.c.GetSessionId()); code != http.StatusNotFound {
		t.Fatalf("the reaped session's id: HTTP %d, want 404", code)
	}
	// Each of the others is looked at while it still shows a sign of
	// life: the one in use now, the others once their call or stream ends.
	still := func(name string, g *gateway) {
		if got := text(g.call("mcp_fixture__echo", map[string]any{"message": "still here"})); got != "still here" {
			t.Errorf("the session %s: %q", name, got)
		}
	}
	still("in use", busy)
	if got := <-slow; got != fmt.Sprintf("slept %dms", (3*reap).Milliseconds()) {
		t.Fatalf("a call longer than session_reap_after: %q", got)
	}
	still("calling", calling)
	stopListening()
	still("listening", listening)
}

// listen opens the GET stream of session sid, unread, until the function
// it returns closes it.
func listen(t *testing.T, url, sid string) (stop func()) {
	t.Helper()
	get, _ := http.NewRequest(http.MethodGet, url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", sid)
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := http.DefaultClient.Do(get.WithContext(ctx))
	if err != nil || stream.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET stream: %v %v", err, stream)
	}
	return func() {
		cancel()
		stream.Body.Close()
	}
}

// postStatus is the HTTP status of a tools/list in session sid.
func postStatus(t *testing.T, url, sid string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// healthz returns the status and body of /healthz of the gateway at url.
func healthz(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// With ARDGATE_AUTH_TOKEN set, a request without it gets 401 and one from
// a foreign Origin 403; neither makes a session or reaches a tool.
func TestHTTPAuthAndOrigin(t *testing.T) {
	url, _ := startHTTP(t, env(false, "ARDGATE_AUTH_TOKEN=t0ken"))
	post := func(auth, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	sessions := func() int {
		resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h struct{ Sessions int }
		_ = json.NewDecoder(resp.Body).Decode(&h)
		return h.Sessions
	}
	if code := post("", ""); code != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d", code)
	}
	if code := post("Bearer t0ken", "https://attacker.example"); code != http.StatusForbidden {
		t.Fatalf("foreign origin: HTTP %d", code)
	}
	if n := sessions(); n != 0 {
		t.Fatalf("refused requests made %d sessions", n)
	}
	if code := post("Bearer t0ken", ""); code != http.StatusOK {
		t.Fatalf("with token: HTTP %d", code)
	}
	// The scheme's name is case-insensitive; the token is not.
	if code := post("bearer t0ken", ""); code != http.StatusOK {
		t.Fatalf("with the scheme in lower case: HTTP %d", code)
	}
	if code := post("Bearer T0KEN", ""); code != http.StatusUnauthorized {
		t.Fatalf("with the token in upper case: HTTP %d", code)
	}
}

// SIGTERM while a call runs: the call completes, then the gateway ends
// its sessions (children killed) and exits cleanly. While it drains,
// /healthz says so with 503, so that a load balancer sends it no one new,
// and a new session is refused with 503 and a sentence.
func TestHTTPGracefulDrain(t *testing.T) {
	cmd := exec.Command(gatewayBin, "serve", "--transport", "http", "--addr", "127.0.0.1:0", "--log-format", "json",
		"--catalog", "testdata/catalogs/fixture.json")
	cmd.Env = env(true)
	pipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	var url string
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		var rec struct{ URL string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.URL != "" {
			url = rec.URL
			break
		}
	}
	go io.Copy(io.Discard, pipe)
	g := connectHTTP(t, url, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, nil)
	pid := g.pidOf("fixture")
	// A call first, so that the slow one is likely to go on a connection
	// the gateway has kept and serves itself.
	if got := text(g.call("mcp_fixture__echo", map[string]any{"message": "first"})); got != "first" {
		t.Fatalf("echo = %q", got)
	}

	done := g.callRunning("mcp_fixture__slow", map[string]any{"ms": 1500})
	_ = cmd.Process.Signal(syscall.SIGTERM)
	// /healthz turns 503 once the gateway heard the signal.
	code, body := healthz(t, url)
	for deadline := time.Now().Add(5 * time.Second); code == http.StatusOK; code, body = healthz(t, url) {
		if time.Now().After(deadline) {
			t.Fatalf("healthz 5 s after SIGTERM: %d %s", code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), `"status":"draining"`) {
		t.Fatalf("healthz while draining: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "shutting down") {
		t.Fatalf("a new session while draining: %d %s", resp.StatusCode, body)
	}
	select {
	case res := <-done:
		if res.IsError || !strings.Contains(text(res), "slept 1500ms") {
			t.Fatalf("the call in flight at SIGTERM: %s", text(res))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call in flight never finished")
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after the drain")
	}
	waitGroupGone(t, pid, 5*time.Second)
}
