package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/testdata/proctest"
)

// Paths of the binaries TestMain builds: the gateway, and the Go fixture
// server installed as a stand-in "npx" in fakeBin.
var (
	gatewayBin  string
	fixtureBin  string
	fakeBin     string
	openfangBin string // testdata/openfang's peer
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ardgate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gatewayBin = filepath.Join(dir, "ardgate")
	fakeBin = filepath.Join(dir, "fakebin")
	fixtureBin = filepath.Join(fakeBin, "npx")
	openfangBin = filepath.Join(dir, "openfang")
	for _, b := range [][]string{{gatewayBin, "."}, {fixtureBin, "./testdata/mcpfixture/cmd/mcpfixture"}, {openfangBin, "./testdata/openfang/cmd/openfang"}} {
		out, err := exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", b[1], err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gateway is one running ardgate process, or one HTTP session to one.
type gateway struct {
	t       *testing.T
	c       *client.Client
	stderr  *syncBuffer
	version string // the protocol version the client negotiated

	mu    sync.Mutex
	notes []mcp.JSONRPCNotification // every notification received
	from  int                       // waitNote looks from here on
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env returns a clean environment for the gateway: PATH with fakeBin first
// when fake is set, plus extra.
func env(fake bool, extra ...string) []string {
	path := os.Getenv("PATH")
	if fake {
		path = fakeBin + string(os.PathListSeparator) + path
	}
	e := []string{"PATH=" + path, "HOME=" + os.Getenv("HOME")}
	if v, ok := os.LookupEnv("ARDGATE_FAST_PATH"); ok {
		e = append(e, "ARDGATE_FAST_PATH="+v) // CI runs these tests both ways
	}
	return append(e, extra...)
}

// freePort returns a loopback port that was free a moment ago, for an
// upstream that takes its port from its command line.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// startHTTPUpstream starts up, an MCP server over streamable HTTP, in a
// process group of its own (npx's node goes with it) killed when the test
// ends, and waits up to wait for ready on its stderr, which it returns.
func startHTTPUpstream(t *testing.T, up *exec.Cmd, ready string, wait time.Duration) *syncBuffer {
	t.Helper()
	up.SysProcAttr = ownGroup()
	stderr := &syncBuffer{}
	up.Stderr = stderr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		killGroup(up.Process.Pid)
		_ = up.Wait()
	})
	if !logged(stderr, ready, wait) {
		t.Fatalf("%s did not start: %s", up.Path, stderr.String())
	}
	return stderr
}

// logged waits up to d for text in log, and reports whether it came.
func logged(log *syncBuffer, text string, d time.Duration) bool {
	for deadline := time.Now().Add(d); !strings.Contains(log.String(), text); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// waitLog waits up to d for text in a gateway's log.
func waitLog(t *testing.T, log *syncBuffer, text string, d time.Duration) {
	t.Helper()
	if !logged(log, text, d) {
		t.Fatalf("%q not logged within %s: %s", text, d, log.String())
	}
}

// pinHTTP runs the gateway over stdio with the streamable HTTP server at
// url pinned as name, and waits for the server's tool to be listed.
func pinHTTP(t *testing.T, name, url, tool string) *gateway {
	t.Helper()
	g := startStdio(t, env(false), "--config", pinnedConfig(t, name, url))
	for deadline := time.Now().Add(30 * time.Second); !slices.Contains(g.toolNames(), tool); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pinned server's tools never appeared: %v", g.toolNames())
		}
	}
	return g
}

// pinnedConfig writes a config file that pins the streamable HTTP server
// at url, on loopback, as name, and returns its path.
func pinnedConfig(t *testing.T, name, url string) string {
	t.Helper()
	return writeConfig(t, pinned(name, url))
}

// pinned is the config that pins the streamable HTTP server at url, on
// loopback, as name.
func pinned(name, url string) map[string]any {
	return map[string]any{"allow_local_urls": true, "servers": []any{map[string]any{"name": name, "url": url}}}
}

// writeConfig writes cfg to a config file of its own and returns its path.
func writeConfig(t *testing.T, cfg map[string]any) string {
	t.Helper()
	return writeJSON(t, filepath.Join(t.TempDir(), "ardgate.json"), cfg)
}

// startEverythingHTTP runs npm server-everything over streamable HTTP
// and returns its endpoint.
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	port := freePort(t)
	up := exec.Command("npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31", "streamableHttp")
	up.Env = env(false, "PORT="+port)
	startHTTPUpstream(t, up, "listening on port "+port, 2*time.Minute)
	return "http://127.0.0.1:" + port + "/mcp"
}

// startStdio runs the gateway binary over stdio with a real MCP client on
// its pipes.
func startStdio(t *testing.T, environ []string, args ...string) *gateway {
	t.Helper()
	return startStdioClient(t, environ, nil, args...)
}

// startStdioClient is startStdio with the client's options: its handlers
// of the server's requests.
func startStdioClient(t *testing.T, environ []string, opts []client.ClientOption, args ...string) *gateway {
	t.Helper()
	return startStdioAs(t, environ, append([]client.ClientOption{client.WithProtocolVersion(mcp.ProtocolVersion20251125)}, opts...), args...)
}

// startStdioAs is startStdioClient with the client's options alone: with
// none, mcp-go's default client, which tries the stateless protocol first.
func startStdioAs(t *testing.T, environ []string, opts []client.ClientOption, args ...string) *gateway {
	t.Helper()
	g := &gateway{t: t, stderr: &syncBuffer{}}
	tr := transport.NewStdioWithOptions(gatewayBin, nil, append([]string{"serve"}, args...),
		transport.WithCommandFunc(func(_ context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Env = environ
			cmd.Stderr = g.stderr
			return cmd, nil
		}))
	g.connect(tr, opts...)
	t.Cleanup(func() {
		_ = g.c.Close()
		if t.Failed() {
			t.Logf("gateway stderr:\n%s", g.stderr.String())
		}
	})
	return g
}

func (g *gateway) connect(tr transport.Interface, opts ...client.ClientOption) {
	g.t.Helper()
	g.c = client.NewClient(tr, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Start's context is the one the client answers the gateway's
	// requests in, for as long as it runs: not ctx.
	if err := g.c.Start(context.Background()); err != nil {
		g.t.Fatalf("start client: %v", err)
	}
	g.c.OnNotification(func(n mcp.JSONRPCNotification) {
		g.mu.Lock()
		g.notes = append(g.notes, n)
		g.mu.Unlock()
	})
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "ardgate-e2e", Version: "1"}
	res, err := g.c.Initialize(ctx, req)
	if err != nil {
		g.t.Fatalf("initialize: %v", err)
	}
	g.version = res.ProtocolVersion
}

// call calls a tool and returns its result; transport failures fail the
// test, tool errors do not.
func (g *gateway) call(name string, args any) *mcp.CallToolResult {
	g.t.Helper()
	return g.callMeta(name, args, nil)
}

func (g *gateway) callMeta(name string, args any, meta *mcp.Meta) *mcp.CallToolResult {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	req.Params.Meta = meta
	res, err := g.c.CallTool(ctx, req)
	if err != nil {
		g.t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured result.
func (g *gateway) ok(name string, args any, into any) {
	g.t.Helper()
	res := g.call(name, args)
	if res.IsError {
		g.t.Fatalf("%s failed: %s", name, text(res))
	}
	decode(g.t, res, into)
}

// fails calls a tool that must fail with code and returns its message.
func (g *gateway) fails(name string, args any, code string) string {
	g.t.Helper()
	res := g.call(name, args)
	if !res.IsError {
		g.t.Fatalf("%s succeeded, want error %s: %s", name, code, text(res))
	}
	var body struct{ Error, Code string }
	decode(g.t, res, &body)
	if body.Code != code {
		g.t.Fatalf("%s: code %q, want %q (%s)", name, body.Code, code, body.Error)
	}
	if body.Error == "" || body.Error != text(res) {
		g.t.Fatalf("%s: error text %q and structured error %q differ", name, text(res), body.Error)
	}
	return body.Error
}

func decode(t *testing.T, res *mcp.CallToolResult, into any) {
	t.Helper()
	if into == nil {
		return
	}
	if len(res.RawStructuredContent) == 0 {
		t.Fatalf("no structuredContent in %s", text(res))
	}
	if err := json.Unmarshal(res.RawStructuredContent, into); err != nil {
		t.Fatalf("decode %s: %v", res.RawStructuredContent, err)
	}
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (g *gateway) toolNames() []string {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := g.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		g.t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// rawTools lists tools as JSON objects, to see schemas whole.
func (g *gateway) rawTools() map[string]json.RawMessage {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := g.c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("raw-tools"), Method: "tools/list",
	})
	if err != nil || resp.Error != nil {
		g.t.Fatalf("raw tools/list: %v %v", err, resp)
	}
	var r struct{ Tools []json.RawMessage }
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		g.t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for _, raw := range r.Tools {
		var n struct{ Name string }
		_ = json.Unmarshal(raw, &n)
		out[n.Name] = raw
	}
	return out
}

// waitNote waits for a notification with that method received since the
// last drainNotes.
func (g *gateway) waitNote(method string, d time.Duration) mcp.JSONRPCNotification {
	g.t.Helper()
	return g.waitNoteThat(method, d, func(mcp.JSONRPCNotification) bool { return true })
}

// waitNoteThat waits for a notification with that method, received since
// the last drainNotes, for which match is true.
func (g *gateway) waitNoteThat(method string, d time.Duration, match func(mcp.JSONRPCNotification) bool) mcp.JSONRPCNotification {
	g.t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, n := range g.notesSince(method) {
			if match(n) {
				return n
			}
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("no %s within %s", method, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// progressTokens numbers the tokens of calls that must be seen running.
var progressTokens atomic.Int64

// callRunning starts a call of one of the fixture's slow tools, under a
// progress token, and returns once its server reports progress on it: the
// call runs at the server. Its result comes on the channel.
func (g *gateway) callRunning(name string, args map[string]any) <-chan *mcp.CallToolResult {
	g.t.Helper()
	token := fmt.Sprintf("running-%d", progressTokens.Add(1))
	done := make(chan *mcp.CallToolResult, 1)
	go func() { done <- g.callMeta(name, args, &mcp.Meta{ProgressToken: token}) }()
	g.waitNoteThat("notifications/progress", 10*time.Second, func(n mcp.JSONRPCNotification) bool {
		return n.Params.AdditionalFields["progressToken"] == token
	})
	return done
}

// notesSince returns the notifications with that method received since
// the last drainNotes.
func (g *gateway) notesSince(method string) []mcp.JSONRPCNotification {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, n := range g.notes[g.from:] {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// drainNotes forgets notifications received so far.
func (g *gateway) drainNotes() {
	g.mu.Lock()
	g.from = len(g.notes)
	g.mu.Unlock()
}

// listing is list_attached_resources' result.
type listing struct {
	Count       int
	Max         int
	Attachments []struct {
		URN, Name, Kind, Status, Endpoint string
		WhyDown                           string `json:"why_down"`
		RegistryID                        string `json:"registry_id"`
		MediaType                         string `json:"media_type"`
		ToolsCount                        int    `json:"tools_count"`
		PID                               int
		Pinned                            bool
	}
}

func (g *gateway) list() listing {
	g.t.Helper()
	var l listing
	g.ok("list_attached_resources", map[string]any{}, &l)
	return l
}

// pidOf returns the process id of a stdio attachment.
func (g *gateway) pidOf(name string) int {
	g.t.Helper()
	for _, a := range g.list().Attachments {
		if a.Name == name {
			if a.PID == 0 {
				g.t.Fatalf("%s has no pid: %+v", name, a)
			}
			return a.PID
		}
	}
	g.t.Fatalf("%s is not attached", name)
	return 0
}

// waitGroupGone waits until no process of group pgid is alive.
func waitGroupGone(t *testing.T, pgid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if len(proctest.GroupMembers(pgid)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("processes of group %d still alive: %v", pgid, proctest.GroupMembers(pgid))
}

// startFixtureHTTP runs the fixture as a streamable HTTP server and
// returns its URL.
func startFixtureHTTP(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(fixtureBin, "--transport=http", "--addr=127.0.0.1:0", "--name=remote")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("fixture READY: %v", err)
	}
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "READY ")
	if !ok {
		t.Fatalf("fixture said %q", line)
	}
	go io.Copy(io.Discard, out)
	return u
}

// catalogWithRemote writes a catalog whose remote-fixture entry points at
// url, next to a copy of the fixture catalog's other entries.
func catalogWithRemote(t *testing.T, url string) string {
	t.Helper()
	data, err := os.ReadFile("testdata/catalogs/fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.ReplaceAll(string(data), "http://127.0.0.1:1/mcp", url))
	dir := t.TempDir()
	nested, _ := os.ReadFile("testdata/catalogs/nested.json")
	if err := os.WriteFile(filepath.Join(dir, "nested.json"), nested, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "fixture.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rawGateway is the gateway binary over stdio with frames written and
// read by hand, where a test needs to say what goes in one write.
type rawGateway struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	outEnd io.Closer // the client's end of the gateway's stdout
	stderr *syncBuffer
	id     int // the last id rpc used
}

// startRaw runs the gateway over stdio and initializes the session.
func startRaw(t *testing.T, environ []string, args ...string) *rawGateway {
	t.Helper()
	g := startRawClient(t, environ, `{}`, args...)
	g.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return g
}

// startRawClient runs the gateway over stdio and sends initialize with
// the client's capabilities, and reads its answer; notifications/initialized
// is the caller's to send.
func startRawClient(t *testing.T, environ []string, capabilities string, args ...string) *rawGateway {
	t.Helper()
	cmd := exec.Command(gatewayBin, append([]string{"serve"}, args...)...)
	cmd.Env = environ
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	g := &rawGateway{t: t, cmd: cmd, in: in, out: bufio.NewReader(out), outEnd: out, stderr: &syncBuffer{}}
	cmd.Stderr = g.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	g.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + capabilities + `,"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := g.read(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	return g
}

// send writes frames, a line each, in one write.
func (g *rawGateway) send(frames ...string) {
	g.t.Helper()
	if _, err := io.WriteString(g.in, strings.Join(frames, "\n")+"\n"); err != nil {
		g.t.Fatal(err)
	}
}

// read reads the next frame; stdout carries nothing else.
func (g *rawGateway) read() map[string]any {
	g.t.Helper()
	line, err := g.out.ReadString('\n')
	if err != nil {
		g.t.Fatalf("read: %v (stderr: %s)", err, g.stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		g.t.Fatalf("stdout carried a non-frame: %q", line)
	}
	return m
}

// request is a JSON-RPC request frame.
func request(id int, method string, params any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return string(b)
}

// response reads frames up to the next response, skipping notifications.
func (g *rawGateway) response() map[string]any {
	g.t.Helper()
	for {
		if m := g.read(); m["id"] != nil {
			return m
		}
	}
}

// rpc sends a request with an id of its own and returns its response,
// skipping other frames.
func (g *rawGateway) rpc(method string, params any) map[string]any {
	g.t.Helper()
	g.id++
	id := 1000 + g.id // clear of the ids tests write by hand
	g.send(request(id, method, params))
	for {
		if m := g.response(); m["id"] == float64(id) {
			return m
		}
	}
}

// sendRunning sends a tools/call of one of the fixture's slow tools as
// request id, under a progress token, and reads frames until its server
// reports progress on it: the call runs at the server.
func (g *rawGateway) sendRunning(id int, name string, args map[string]any) {
	g.t.Helper()
	token := fmt.Sprintf("running-%d", progressTokens.Add(1))
	g.send(request(id, "tools/call", map[string]any{"name": name, "arguments": args, "_meta": map[string]any{"progressToken": token}}))
	stop := time.AfterFunc(10*time.Second, func() { _ = g.cmd.Process.Kill() }) // then read fails
	defer stop.Stop()
	for {
		m := g.read()
		if m["id"] == float64(id) {
			g.t.Fatalf("call %d was answered before its server said it runs: %v", id, m)
		}
		if params, _ := m["params"].(map[string]any); m["method"] == "notifications/progress" && params["progressToken"] == token {
			return
		}
	}
}

// waitWriteWaits waits until the gateway waits to write, its stdout
// unread and full; it skips the test where that cannot be told.
func (g *rawGateway) waitWriteWaits() {
	g.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		waits, err := writeWaits(g.cmd.Process.Pid)
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			g.t.Skip("whether a process waits to write can be told on Linux only")
		case err != nil:
			g.t.Fatalf("the gateway's threads: %v", err)
		case waits:
			return
		case time.Now().After(deadline):
			g.t.Fatal("the gateway, its stdout unread, did not wait to write within 10 s")
		}
	}
}

// end closes stdin, and the gateway must exit cleanly.
func (g *rawGateway) end() {
	g.t.Helper()
	g.in.Close()
	if err := g.cmd.Wait(); err != nil {
		g.t.Fatalf("gateway exit: %v (stderr: %s)", err, g.stderr.String())
	}
}
