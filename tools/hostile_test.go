package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/testdata/mcpfixture"
)

// rawToolsUpstream is a streamable HTTP MCP server written by hand, so
// that it can list what mcp-go would refuse to serve: it answers
// initialize, answers tools/list with what list gives for the request's
// cursor (a result), and answers every call with "ok".
func rawToolsUpstream(t *testing.T, list func(cursor string) string) *httptest.Server {
	return rawUpstream(t, `{"tools":{}}`, func(method, cursor string) string {
		if method == "tools/list" {
			return `"result":` + list(cursor)
		}
		return ""
	})
}

// rawUpstream is rawToolsUpstream declaring capabilities, whose answer to
// a request other than initialize is what answer gives, given the method
// and the cursor (for a call, the tool's name): the response's
// "result":… or "error":… member; "" answers with an "ok" tool result.
func rawUpstream(t *testing.T, capabilities string, answer func(method, cursor string) string) *httptest.Server {
	t.Helper()
	return rawUpstreamWith(t, capabilities, answer, func(w http.ResponseWriter, _ string, frame string) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, frame)
	})
}

// mute is the answer of a rawEventsUpstream that ends the event stream
// without it.
const mute = `"result":{"content":[{"type":"text","text":"mute"}]}`

// rawEventsUpstream is rawUpstream answering every request but
// initialize as an event stream, a call's after noise bytes of progress
// notifications under a token no call has, as a chatty server may; an
// answer of mute is left out of it.
func rawEventsUpstream(t *testing.T, noise int, answer func(method, cursor string) string) *httptest.Server {
	t.Helper()
	event := "event: message\ndata: " + `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"noise","progress":1,"message":"` + strings.Repeat("n", 1000) + `"}}` + "\n\n"
	return rawUpstreamWith(t, `{"tools":{}}`, answer, func(w http.ResponseWriter, method string, frame string) {
		if method == "initialize" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, frame)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if method == "tools/call" && noise > 0 {
			io.WriteString(w, strings.Repeat(event, noise/len(event)+1))
		}
		if !strings.Contains(frame, mute) {
			io.WriteString(w, "event: message\ndata: "+frame+"\n\n")
		}
	})
}

// rawUpstreamWith is rawUpstream writing each answer, frame, to the
// request of method with write.
func rawUpstreamWith(t *testing.T, capabilities string, answer func(method, cursor string) string, write func(w http.ResponseWriter, method, frame string)) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
				Name   string `json:"name"`
			} `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &req) != nil || req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		member := `"result":{"content":[{"type":"text","text":"ok"}]}`
		if req.Method == "initialize" {
			w.Header().Set("Mcp-Session-Id", "raw-1")
			member = `"result":{"protocolVersion":"2025-11-25","capabilities":` + capabilities + `,"serverInfo":{"name":"raw","version":"1"}}`
		} else if a := answer(req.Method, req.Params.Cursor+req.Params.Name); a != "" {
			member = a
		}
		write(w, req.Method, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,%s}`, req.ID, member))
	}))
	t.Cleanup(up.Close)
	return up
}

// attachAt attaches the streamable HTTP server at url, as "remote", in a
// new session of a new gateway, and returns the session and the result.
//
// The call timeout is a minute: moving 10 MiB and more of hostile
// answers takes a second or so, ten times that on a loaded machine with
// the race detector on, and these tests are not of the timeout.
func attachAt(t *testing.T, url string) (*clientSession, *mcp.CallToolResult) {
	t.Helper()
	const urn = "urn:air:ardgate.test:mcp:remote"
	s := newGateway(t, hostileCallTimeout, remoteEntry(urn, url)).connect(t)
	return s, s.call("attach_resource", map[string]any{"urn": urn})
}

// hostileCallTimeout is the call timeout of attachAt's gateways.
const hostileCallTimeout = time.Minute

// An upstream tool whose x-mcp-header annotations break SEP-2243's rules
// is left out, and the server's other tools are attached and called, over
// streamable HTTP and over stdio. mcp-go refuses such a definition: with
// an error for a whole batch of a session's tools, and over stdio by
// panicking, which ended the gateway.
func TestHostileToolDefinition(t *testing.T) {
	up := rawToolsUpstream(t, func(string) string {
		return `{"tools":[{"name":"good","inputSchema":{"type":"object"}},
			{"name":"bad","inputSchema":{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}}]}`
	})
	check := func(t *testing.T, list func() []string, call func(string) *mcp.CallToolResult) {
		t.Helper()
		var tools []string
		for end := time.Now().Add(10 * time.Second); !slices.Contains(tools, "mcp_remote__good"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("the good tool was never listed: %v", tools)
			}
			tools = list()
		}
		if slices.Contains(tools, "mcp_remote__bad") {
			t.Errorf("the tool with bad x-mcp-header annotations is listed: %v", tools)
		}
		if res := call("mcp_remote__good"); res.IsError || firstText(res) != "ok" {
			t.Errorf("the good tool: %s", firstText(res))
		}
	}

	t.Run("http", func(t *testing.T) {
		s, res := attachAt(t, up.URL)
		if res.IsError {
			t.Fatalf("attach: %s", firstText(res))
		}
		check(t, s.tools, func(name string) *mcp.CallToolResult { return s.call(name, map[string]any{}) })
	})
	t.Run("stdio", func(t *testing.T) {
		m := &attach.Manager{
			Pinned:       []config.Server{{Name: "remote", URL: up.URL}},
			HTTP:         (&guard.Dialer{AllowLocal: true}).Client(),
			CallTimeout:  10 * time.Second,
			StartTimeout: 10 * time.Second,
			Log:          quietLog,
		}
		c := serveStdio(t, New(m, quietLog, Options{Version: "test"}))
		list := func() []string {
			res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			return names
		}
		check(t, list, func(name string) *mcp.CallToolResult {
			req := mcp.CallToolRequest{}
			req.Params.Name = name
			res, err := c.CallTool(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			return res
		})
	})
}

// A server whose tool listing never ends (a new cursor on every page, and
// no tools) is refused with a sentence after as many pages as tools are
// allowed, not waited on until the attach times out.
func TestEndlessToolListing(t *testing.T) {
	var pages atomic.Int64
	up := rawToolsUpstream(t, func(cursor string) string {
		return fmt.Sprintf(`{"tools":[],"nextCursor":"c%d"}`, pages.Add(1))
	})
	_, res := attachAt(t, up.URL)
	if !res.IsError || !strings.Contains(firstText(res), "more than 1000 pages") {
		t.Errorf("attach of an endless listing: %s", firstText(res))
	}
	if n := pages.Load(); n != 1000 {
		t.Errorf("%d pages asked for, want 1000", n)
	}
}

// A server's definitions are bounded in bytes, not only in count: tools
// of 1 MiB each, a page each, past 4 MiB refuse the attach with a
// sentence, after no more pages than the cap takes; prompts as large lose
// their list alone, the tools attached. Each page is within the cap on a
// message, and the count within 1,000: 30 such pages took the gateway to
// 1.4 GB and gave its client a listing of 250 MB.
func TestListingsOverTheirBytes(t *testing.T) {
	desc := strings.Repeat("d", 1<<20)
	var pages atomic.Int64
	// page is the page after cursor of a list of kind: an item of 1 MiB,
	// the list ending after 8 of them.
	page := func(kind, cursor string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(cursor, "c"))
		pages.Add(1)
		next := fmt.Sprintf("c%d", n+1)
		if n == 7 {
			next = ""
		}
		return fmt.Sprintf(`{%q:[{"name":"t%d","description":%q,"inputSchema":{"type":"object"}}],"nextCursor":%q}`, kind, n, desc, next)
	}
	_, res := attachAt(t, rawToolsUpstream(t, func(cursor string) string { return page("tools", cursor) }).URL)
	if !res.IsError || !strings.Contains(firstText(res), "its tools' definitions take more than 4 MiB") {
		t.Errorf("attach of a server of 8 tools of 1 MiB: %s", guard.Text(firstText(res), 300))
	}
	if n := pages.Load(); n != 4 { // each a little over 1 MiB
		t.Errorf("%d pages read, want 4", n)
	}

	up := rawUpstream(t, `{"tools":{},"prompts":{}}`, func(method, cursor string) string {
		switch method {
		case "tools/list":
			return `"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
		case "prompts/list":
			return `"result":` + page("prompts", cursor)
		}
		return ""
	})
	s, res := attachAt(t, up.URL)
	if res.IsError {
		t.Fatalf("attach: %s", guard.Text(firstText(res), 300))
	}
	if got := promptNames(t, s.c); len(got) != 0 {
		t.Errorf("prompts listed: %v", got)
	}
	if res := s.call("mcp_remote__echo", map[string]any{}); res.IsError {
		t.Errorf("the tool beside them: %s", firstText(res))
	}
}

// A server whose answer to tools/list has no end, as JSON or as an event
// stream, is cut off at the message cap with a sentence, instead of
// filling the gateway's memory.
func TestToolListingWithoutEnd(t *testing.T) {
	for _, media := range []string{"application/json", "text/event-stream"} {
		t.Run(media, func(t *testing.T) {
			const flood = 64 << 20
			var sent atomic.Int64
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				var req struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if json.Unmarshal(body, &req) != nil || req.ID == nil {
					w.WriteHeader(http.StatusAccepted)
					return
				}
				if req.Method == "initialize" {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}}`, req.ID)
					return
				}
				w.Header().Set("Content-Type", media)
				if media == "text/event-stream" {
					io.WriteString(w, "data: ")
				}
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"`, req.ID)
				chunk := []byte(strings.Repeat("x", 64<<10))
				for sent.Load() < flood {
					if _, err := w.Write(chunk); err != nil {
						return
					}
					sent.Add(int64(len(chunk)))
				}
			}))
			t.Cleanup(up.Close)
			s, res := attachAt(t, up.URL)
			if !res.IsError || !strings.Contains(firstText(res), "larger than the 10 MiB cap") {
				t.Errorf("attach of a server listing without end: %s", firstText(res))
			}
			t.Logf("attach: %s", firstText(res))
			if n := sent.Load(); n >= flood {
				t.Errorf("the gateway read all %d MiB of the listing", n>>20)
			}
			if res := s.call("list_attached_resources", map[string]any{}); res.IsError {
				t.Errorf("the session after: %s", firstText(res))
			}
		})
	}
}

// attachedRemote is a session with the recording upstream attached as
// "remote".
func attachedRemote(t *testing.T) (*recordingUpstream, *clientSession) {
	t.Helper()
	up := newRecordingUpstream(t)
	s, res := attachAt(t, up.URL)
	if res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	return up, s
}

// An answer over the message cap from a remote fails that call alone, on
// the fast path and through call_attached_tool: over HTTP each call has a
// request of its own, and the connection is fine. It took the upstream
// down before, and every later call with it.
func TestRemoteAnswerOverCap(t *testing.T) {
	_, s := attachedRemote(t)
	big := map[string]any{"bytes": 12 << 20}
	for _, call := range []func() *mcp.CallToolResult{
		func() *mcp.CallToolResult { return s.call("mcp_remote__big", big) },
		func() *mcp.CallToolResult {
			return s.call("call_attached_tool", map[string]any{"name": "mcp_remote__big", "arguments": big})
		},
	} {
		if res := call(); !res.IsError || !strings.Contains(firstText(res), "remote: its answer to big: the server's response: the answer is larger than the 10 MiB cap; ask it for less") {
			t.Fatalf("a 12 MiB answer: %.300s", firstText(res))
		}
		if res := s.call("mcp_remote__echo", map[string]any{"message": "after"}); res.IsError || firstText(res) != "after" {
			t.Fatalf("the next call: %s", firstText(res))
		}
	}
	res := s.call("list_attached_resources", map[string]any{})
	if !strings.Contains(string(res.RawStructuredContent), `"status":"up"`) {
		t.Fatalf("the remote after: %s", res.RawStructuredContent)
	}
}

// A proxied call whose arguments are not an object is refused with
// invalid_arguments and reaches no upstream, called by its name as through
// call_attached_tool: it went upstream, which answered with a validation
// dump.
func TestProxiedArgumentsNotObject(t *testing.T) {
	up, s := attachedRemote(t)
	up.mu.Lock()
	before := len(up.ids)
	up.mu.Unlock()
	for _, args := range []any{"hi", []any{1}, 5, true} {
		res := s.call("mcp_remote__echo", args)
		if code := s.code(res); code != "invalid_arguments" || !strings.Contains(firstText(res), `"arguments" must be an object`) {
			t.Errorf("arguments %v: %q %s", args, code, firstText(res))
		}
	}
	up.mu.Lock()
	after := len(up.ids)
	up.mu.Unlock()
	if after != before {
		t.Errorf("%d refused calls reached the upstream", after-before)
	}
	if res := s.call("mcp_remote__echo", map[string]any{"message": "after"}); res.IsError || firstText(res) != "after" {
		t.Fatalf("a call after: %s", firstText(res))
	}
}

// attach_resource naming a registry that is not configured says so, as
// discover_resources does, also for a URN already attached: it said
// upstream_error, and already_attached.
func TestAttachUnknownRegistry(t *testing.T) {
	_, s := attachedRemote(t)
	for _, urn := range []string{"urn:air:ardgate.test:mcp:remote", "urn:air:ardgate.test:mcp:other"} {
		res := s.call("attach_resource", map[string]any{"urn": urn, "registry_id": "zzz"})
		if code := s.code(res); code != "unknown_registry" || !strings.Contains(firstText(res), `registry "zzz" is not configured`) {
			t.Errorf("%s from registry zzz: %q %s", urn, code, firstText(res))
		}
	}
}

// restartable is a remote fixture server that can go away and come back
// on the same address, as a server restarted for a deploy does.
type restartable struct {
	t    *testing.T
	addr string
	srv  *http.Server
	// sessions counts the initialize requests it was sent.
	sessions atomic.Int64
}

func newRestartable(t *testing.T) *restartable {
	r := &restartable{t: t, addr: "127.0.0.1:0"}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *restartable) url() string { return "http://" + r.addr + "/mcp" }

func (r *restartable) start() {
	r.t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	h := server.NewStreamableHTTPServer(mcpfixture.New("remote"))
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			r.sessions.Add(1)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, req)
	})}
	go r.srv.Serve(ln)
}

func (r *restartable) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
	_ = r.srv.Close()
}

// A remote server that went away and came back is reached again by the
// next call, attached or pinned: it stayed down for good, and a pinned
// one could not even be attached again; its call now says that a call
// tries to reach it again. A stateless pinned server's connection, which
// the sessions share, is dialled again once, for them all: it stayed down
// for every session open at the time.
func TestRemoteRevived(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"attached", "pinned", "stateless"} {
		t.Run(kind, func(t *testing.T) {
			up := newRestartable(t)
			var pins []config.Server
			if kind != "attached" {
				pins = []config.Server{{Name: "remote", URL: up.url(), Stateless: kind == "stateless"}}
			}
			tg := newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{}, pins, remoteEntry(fastURN, up.url()))
			sessions := []*clientSession{tg.connect(t)}
			if kind == "stateless" {
				sessions = append(sessions, tg.connect(t))
			}
			for _, s := range sessions {
				if kind == "attached" {
					if res := s.call("attach_resource", map[string]any{"urn": fastURN}); res.IsError {
						t.Fatalf("attach: %s", firstText(res))
					}
				} else {
					waitPinned(t, s, "mcp_remote__echo")
				}
				if res := s.call("mcp_remote__echo", map[string]any{"message": "hi"}); res.IsError {
					t.Fatalf("before: %s", firstText(res))
				}
			}
			up.stop()
			for _, s := range sessions {
				for range 2 { // the second tries to reach it again, and fails
					if res := s.call("mcp_remote__echo", map[string]any{"message": "hi"}); s.code(res) != "upstream_down" || !strings.Contains(firstText(res), "a call tries to reach it again") {
						t.Fatalf("while it is gone: %s %s", s.code(res), firstText(res))
					}
				}
			}
			up.start()
			for i, s := range sessions {
				var res *mcp.CallToolResult
				for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
					if res = s.call("mcp_remote__echo", map[string]any{"message": "hi"}); !res.IsError || time.Now().After(deadline) {
						break
					}
				}
				if res.IsError || firstText(res) != "hi" {
					t.Fatalf("session %d, once it is back: %s", i, firstText(res))
				}
				if l := firstText(s.call("list_attached_resources", map[string]any{})); !strings.Contains(l, `"status":"up"`) {
					t.Errorf("session %d, listed after: %s", i, l)
				}
			}
			if kind == "stateless" {
				if n := up.sessions.Load(); n != 2 {
					t.Errorf("the server saw %d sessions opened; want one before it went away and one after, shared", n)
				}
			}
		})
	}
}

// A pinned server that is not up when a session starts (a local server
// started after the IDE) is started again in the background, after 5 s
// and then less and less often, and its tools come once it is up, with
// tools/list_changed: it stayed out of the session for good, and no call
// could bring it, its tools never listed.
func TestPinnedStartedLater(t *testing.T) {
	t.Parallel() // it waits 5 s
	up := newRestartable(t)
	up.stop()
	tg := newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{}, []config.Server{{Name: "late", URL: up.url()}})
	s := tg.connect(t)
	waitUntil(t, 30*time.Second, "the pinned server listed down", func() bool {
		l := firstText(s.call("list_attached_resources", map[string]any{}))
		if strings.Contains(l, `"status":"up"`) {
			t.Fatalf("before it is up: %s", l)
		}
		return strings.Contains(l, `"status":"down"`)
	})
	up.start()
	waitPinned(t, s, "mcp_late__echo")
	if l := firstText(s.call("list_attached_resources", map[string]any{})); !strings.Contains(l, `"status":"up"`) {
		t.Errorf("once it is up: %s", l)
	}
	if n := s.count(mcp.MethodNotificationToolsListChanged); n == 0 {
		t.Error("no tools/list_changed when its tools came")
	}
}

// A server's hostile lists of prompts and resources: the items that name
// themselves are served, the others left out, a list that is not one
// lost alone, and an error answering one list (no templates) costs the
// others nothing; the server's tools are attached all the same.
func TestHostileOfferLists(t *testing.T) {
	up := rawUpstream(t, `{"tools":{},"prompts":{},"resources":{}}`, func(method, _ string) string {
		switch method {
		case "tools/list":
			return `"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
		case "prompts/list":
			return `"result":{"prompts":[{"name":"ok"},{"description":"no name"},42,{"name":7},{"name":""}]}`
		case "resources/list":
			return `"result":{"resources":"not an array"}`
		case "resources/templates/list":
			return `"error":{"code":-32601,"message":"Method not found"}`
		case "prompts/get":
			return `"result":{"messages":[{"role":"user","content":{"type":"text","text":"raw"}}]}`
		}
		return ""
	})
	s, res := attachAt(t, up.URL)
	if res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	if got := promptNames(t, s.c); !slices.Equal(got, []string{"mcp_remote__ok"}) {
		t.Fatalf("prompts: %v; want the one that names itself", got)
	}
	ctx := context.Background()
	if list, err := s.c.ListResources(ctx, mcp.ListResourcesRequest{}); err != nil || len(list.Resources) != 0 {
		t.Fatalf("resources: %+v %v; want none", list, err)
	}
	if got := promptText(t, s.c, "mcp_remote__ok", nil); got != "raw" {
		t.Fatalf("prompts/get: %q", got)
	}
	if res := s.call("mcp_remote__echo", map[string]any{}); res.IsError || firstText(res) != "ok" {
		t.Fatalf("the tool after it: %v", res)
	}
}

// An HTTP server's answer to a call, as an event stream, is read however
// many bytes of notifications come before it, on the fast path and
// through call_attached_tool: the cap holds each message, not the
// stream. Past 10 MiB of them, the call failed as a stream that "ended
// without answering", and the server was marked down; a stream that
// does end so, or with an answer over the cap, fails that call alone.
func TestAnswerAfterManyEvents(t *testing.T) {
	up := rawEventsUpstream(t, 11<<20, func(method, tool string) string {
		switch {
		case method == "tools/list":
			return `"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"mute","inputSchema":{"type":"object"}},{"name":"big","inputSchema":{"type":"object"}}]}`
		case tool == "mute":
			return mute
		case tool == "big":
			return `"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 11<<20) + `"}]}`
		}
		return ""
	})
	s, res := attachAt(t, up.URL)
	if res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	for _, call := range []func() *mcp.CallToolResult{
		func() *mcp.CallToolResult { return s.call("mcp_remote__echo", map[string]any{}) },
		func() *mcp.CallToolResult {
			return s.call("call_attached_tool", map[string]any{"name": "mcp_remote__echo", "arguments": map[string]any{}})
		},
	} {
		if res := call(); res.IsError || firstText(res) != "ok" {
			t.Fatalf("an answer after 11 MiB of notifications: %s", firstText(res))
		}
	}
	// A stream that ends without the answer, or whose answer is over the
	// cap, fails that call alone: the server answers the next.
	for tool, want := range map[string]string{"mute": "ended without answering", "big": "larger than the 10 MiB cap"} {
		if res := s.call("mcp_remote__"+tool, map[string]any{}); !res.IsError || s.code(res) == "upstream_down" || !strings.Contains(firstText(res), want) {
			t.Fatalf("%s: %s %s; want %q, the server up", tool, s.code(res), firstText(res), want)
		}
		if res := s.call("mcp_remote__echo", map[string]any{}); res.IsError || firstText(res) != "ok" {
			t.Fatalf("the call after %s: %s", tool, firstText(res))
		}
	}
	if l := firstText(s.call("list_attached_resources", map[string]any{})); !strings.Contains(l, `"status":"up"`) {
		t.Fatalf("the remote after: %s", l)
	}
}

// An upstream's answer nested deeper than the gateway reads (10,000
// levels, as encoding/json reads) is refused at once, saying so, and the
// server stays up: a tools/list, which was dropped, the attach of a stdio
// server waiting out start_timeout to say "context deadline exceeded"
// (an HTTP server's answer as an event stream, "unexpected nil
// response"); the answer to a call, over stdio (on the fast path and on
// mcp-go's) and over HTTP, as JSON and as an event stream, which waited
// out the call's timeout over stdio and took an HTTP server down.
func TestAnswerNestedTooDeep(t *testing.T) {
	fixture := buildFixture(t)
	const why = "nested deeper than 10000 levels"
	t.Run("tools/list over http", func(t *testing.T) {
		up := rawEventsUpstream(t, 0, func(method, _ string) string {
			return `"result":{"tools":[{"name":"deep","inputSchema":{"type":"object","properties":{"d":{"default":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}}}}]}`
		})
		start := time.Now()
		// At once, not once the attach has timed out.
		if _, res := attachAt(t, up.URL); !res.IsError || !strings.Contains(firstText(res), why) || time.Since(start) > hostileCallTimeout/2 {
			t.Fatalf("attach of a tools/list nested too deep, after %s: %s", time.Since(start), firstText(res))
		}
	})
	t.Run("tools/list over stdio", func(t *testing.T) {
		pinned := []config.Server{{Name: "deep", Command: fixture, Args: []string{"--transport=stdio", "--nested-tools=10000"}}}
		s := newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{}, pinned).connect(t)
		start := time.Now()
		var l struct {
			Attachments []struct {
				Status  string
				WhyDown string `json:"why_down"`
			}
		}
		waitUntil(t, 10*time.Second, "the pinned server done starting", func() bool {
			l.Attachments = nil
			_ = json.Unmarshal(s.call("list_attached_resources", map[string]any{}).RawStructuredContent, &l)
			return len(l.Attachments) == 1 && l.Attachments[0].Status != attach.StatusStarting
		})
		if took := time.Since(start); !strings.Contains(l.Attachments[0].WhyDown, why) || took > 5*time.Second {
			t.Fatalf("a tools/list nested too deep, after %s: %+v; want it refused at once, saying why", took, l.Attachments)
		}
	})

	// Two servers written by hand, as mcp-go writes no such answer: their
	// one tool answers nested too deep.
	answer := func(method, tool string) string {
		switch {
		case method == "tools/list":
			return `"result":{"tools":[{"name":"nested","inputSchema":{"type":"object"}},{"name":"echo","inputSchema":{"type":"object"}}]}`
		case tool == "nested":
			return `"result":{"content":[{"type":"text","text":"deep"}],"structuredContent":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`
		}
		return ""
	}
	tg := newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{}, []config.Server{
		{Name: "fx", Command: fixture, Args: []string{"--transport=stdio"}},
		{Name: "json", URL: rawUpstream(t, `{"tools":{}}`, answer).URL},
		{Name: "events", URL: rawEventsUpstream(t, 0, answer).URL},
	})
	s := tg.connect(t)
	for _, name := range []string{"fx", "json", "events"} {
		waitPinned(t, s, "mcp_"+name+"__echo")
	}
	for _, c := range []struct{ name, tool string }{
		{"stdio, fast path", "mcp_fx__nested"},
		{"stdio, call_attached_tool", "call_attached_tool"},
		{"http json", "mcp_json__nested"},
		{"http event stream", "mcp_events__nested"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"depth": 10000}
			if c.tool == "call_attached_tool" {
				args = map[string]any{"name": "mcp_fx__nested", "arguments": args}
			}
			start := time.Now()
			res := s.call(c.tool, args)
			if took := time.Since(start); !res.IsError || s.code(res) == "upstream_down" || !strings.Contains(firstText(res), why) || took > 5*time.Second {
				t.Fatalf("an answer nested too deep, after %s: %s %s", took, s.code(res), guard.Text(firstText(res), 300))
			}
			next := strings.Replace(c.tool, "nested", "echo", 1)
			if c.tool == "call_attached_tool" {
				next = "mcp_fx__echo"
			}
			if res := s.call(next, map[string]any{"message": "after"}); res.IsError {
				t.Fatalf("the server's next call: %s", firstText(res))
			}
		})
	}
	if l := firstText(s.call("list_attached_resources", map[string]any{})); strings.Contains(l, `"status":"down"`) {
		t.Errorf("after: %s", l)
	}
}
