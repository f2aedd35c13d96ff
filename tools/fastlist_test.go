package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/testdata/mcpfixture"
)

// listingUpstream serves, over streamable HTTP, a server of 90 large tools
// and a few whose definitions are awkward to encode: a property called
// "name" (encoded before the tool's own name), members after the name,
// text the encoder escapes, a name the gateway must change.
func listingUpstream(t *testing.T) string {
	t.Helper()
	up := server.NewMCPServer("lister", "1", server.WithToolCapabilities(true))
	mcpfixture.AddManyTools(up, 90)
	handler := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	up.AddTool(mcp.NewTool("named", mcp.WithToolTitle("Has <a> name & more"), mcp.WithToolIcons(mcp.Icon{Src: "https://example.com/i.png"}), mcp.WithString("name", mcp.Required()),
		mcp.WithOutputSchema[struct {
			Name string `json:"name"`
		}]()), handler)
	up.AddTool(mcp.NewTool("naïve tool", mcp.WithDescription("Ünïcode, \"quotes\" and \u2028 separators"),
		mcp.WithReadOnlyHintAnnotation(true)), handler)
	h := server.NewStreamableHTTPServer(up)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close() })
	return ts.URL
}

// count is a counter's value.
func count(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}

// listResult is the result of a tools/list answer, as the gateway wrote it:
// a JSON body, or the message of an event stream.
func listResult(t *testing.T, body string) json.RawMessage {
	t.Helper()
	for line := range strings.SplitSeq(body, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			body = data
			break
		}
	}
	var answer struct {
		Result json.RawMessage
		Error  json.RawMessage
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil || answer.Result == nil {
		t.Fatalf("not a tools/list result: %v: %.300s", err, body)
	}
	return answer.Result
}

// Over HTTP, a plain tools/list is answered on the fast path with what the
// server's path answers, byte for byte: with a large server attached, on a
// connection net/http serves and on one the gateway keeps, and once the
// server is detached again. A listing of the method spelled with an
// escape takes the server's path.
func TestFastListMatchesServer(t *testing.T) {
	const urn = "urn:air:ardgate.test:mcp:lister"
	tg := newGateway(t, 10*time.Second, remoteEntry(urn, listingUpstream(t)))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	m := tg.g.metrics
	list := func(c *rawConn, body string) (json.RawMessage, string) {
		t.Helper()
		c.send(c.request(body))
		resp, answer := c.response()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, answer)
		}
		return listResult(t, answer), resp.Header.Get("Content-Type")
	}
	check := func(want int) {
		t.Helper()
		c := dialRaw(t, tg, s.c.GetSessionId())
		fast0, server0, kept0 := count(m.fastLists), count(m.serverLists), tg.h.KeptServed()
		slow, _ := list(c, `{"jsonrpc":"2.0","id":1,"method":"tools\/list"}`)
		if count(m.serverLists) != server0+1 || count(m.fastLists) != fast0 {
			t.Fatal("a listing of the method spelled with an escape did not take the server's path")
		}
		var tools struct{ Tools []mcp.Tool }
		if err := json.Unmarshal(slow, &tools); err != nil || len(tools.Tools) != want {
			t.Fatalf("the server listed %d tools, want %d (%v)", len(tools.Tools), want, err)
		}
		for i, body := range []string{
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"progressToken":"p"}}}`,
			`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{}}`,   // on the connection kept since
			`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":null}`, // no params, as the server reads it
		} {
			fast, ct := list(c, body)
			if !bytes.Equal(fast, slow) {
				t.Fatalf("%s:\nfast   %.400s\nserver %.400s", body, fast, slow)
			}
			if ct != "application/json" || count(m.fastLists) != fast0+float64(i+1) {
				t.Fatalf("%s: not answered on the fast path (%s)", body, ct)
			}
		}
		if n := tg.h.KeptServed() - kept0; n != 3 {
			t.Fatalf("%d listings answered on a kept connection, want the 3 after the first", n)
		}
		if nulled, _ := list(c, `{"jsonrpc":"2.0","id":6,"method":"tools\/list","params":null}`); !bytes.Equal(nulled, slow) {
			t.Fatalf("the server's listing of params null:\n%.400s\nwant\n%.400s", nulled, slow)
		}
		// A cursor is refused, and a _meta the server refuses takes the
		// server's path.
		for i, params := range []string{`{"cursor":"bWNw"}`, `{"_meta":5}`, `{"_meta":"m"}`, `[]`} {
			c.send(c.request(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, 7+i, params)))
			if resp, answer := c.response(); count(m.fastLists) != fast0+4 || resp.Header.Get("Content-Type") == "application/json" && !strings.Contains(answer, `"error"`) {
				t.Fatalf("params %s: answered on the fast path: %.200s", params, answer)
			}
		}
	}
	own := len(tg.g.own)
	check(own + 92)
	if res := s.call("detach_resource", map[string]any{"urn": urn}); res.IsError {
		t.Fatalf("detach: %s", firstText(res))
	}
	check(own)
}

// Over stdio too, with the server pinned: until the pinned server has
// started, a listing takes the server's path, which waits for it.
func TestFastListStdio(t *testing.T) {
	d := &guard.Dialer{AllowLocal: true}
	m := &attach.Manager{
		Pinned:       []config.Server{{Name: "lister", URL: listingUpstream(t)}},
		HTTP:         d.Client(),
		CallTimeout:  time.Minute,
		StartTimeout: 10 * time.Second,
		Log:          quietLog,
	}
	t.Cleanup(m.HTTP.CloseIdleConnections) // after the session's end
	g := New(m, quietLog, Options{Version: "test", PinnedListWait: 10 * time.Second})
	c := rawStdio(t, g)
	first := listResult(t, string(c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools\/list"}`+"\n"))))
	if !bytes.Contains(first, []byte(`"mcp_lister__named"`)) {
		t.Fatalf("the first listing, which waits for the pinned server, lacks its tools: %.300s", first)
	}
	fast0, server0 := count(g.metrics.fastLists), count(g.metrics.serverLists)
	fast := listResult(t, string(c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n"))))
	if !bytes.Equal(fast, first) {
		t.Fatalf("fast   %.400s\nserver %.400s", fast, first)
	}
	if count(g.metrics.fastLists) != fast0+1 || count(g.metrics.serverLists) != server0 {
		t.Fatal("the plain listing did not take the fast path")
	}
}

// A client with no GET stream gets the server's notifications with the
// answer to its next request that reaches the server. While the server
// holds one for the session, neither a call nor a listing takes the fast
// path, so the notice comes with the next answer, as without it.
func TestQueuedNoticeTakesServerPath(t *testing.T) {
	up := server.NewMCPServer("changing", "1", server.WithToolCapabilities(true))
	handler := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	up.AddTool(mcp.NewTool("t", mcp.WithDescription("first version")), handler)
	h := server.NewStreamableHTTPServer(up)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close() })
	const urn = "urn:air:ardgate.test:mcp:changing"
	tg := newGateway(t, 10*time.Second, remoteEntry(urn, ts.URL))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	gs := tg.g.lookup(s.c.GetSessionId())
	for _, next := range []func(){
		func() { s.call("mcp_changing__t", nil) },
		func() { s.tools() },
	} {
		before, fast := s.listChanged(), count(tg.g.metrics.fastLists)
		up.AddTool(mcp.NewTool("t", mcp.WithDescription(fmt.Sprint("version ", before+2))), handler) // tells its clients
		for deadline := time.Now().Add(5 * time.Second); !gs.NoticesQueued(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the gateway never queued tools/list_changed for the session")
			}
		}
		next()
		if s.listChanged() != before+1 || count(tg.g.metrics.fastLists) != fast {
			t.Fatalf("tools/list_changed received %d times with the next answer, want once", s.listChanged()-before)
		}
	}
}

// mcp-go's session gets a session's proxied tools only once a request
// that may call or list them goes to the server: a session whose calls and
// listings all take the fast path never has the server's copies. A call
// on the server's path finds its tool however the request spells its
// method, and the server's copies follow attachments from then on.
func TestServerToolsOnDemand(t *testing.T) {
	up := newRecordingUpstream(t)
	tg := newGateway(t, 10*time.Second, remoteEntry(fastURN, up.URL))
	serverHolds := func(s *clientSession) int {
		t.Helper()
		gs := tg.g.lookup(s.c.GetSessionId())
		gs.syncMu.Lock()
		defer gs.syncMu.Unlock()
		return len(gs.client.GetSessionTools())
	}

	s := tg.connect(t)
	attachRemote(t, s)
	listed := len(s.tools())
	if res := s.call("mcp_remote__echo", map[string]any{"message": "fast"}); firstText(res) != "fast" || !fastPathTaken(up.lastID()) {
		t.Fatalf("a fast call: %+v", res)
	}
	if n := serverHolds(s); n != 0 {
		t.Fatalf("the server's session holds %d tools after fast calls and listings only", n)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "mcp_remote__echo", map[string]any{"message": "slow"}
	req.Params.Meta = &mcp.Meta{ProgressToken: map[string]any{"takes": "the server's path"}}
	if res, err := s.c.CallTool(context.Background(), req); err != nil || firstText(res) != "slow" || fastPathTaken(up.lastID()) {
		t.Fatalf("a call on the server's path: %v %+v, the upstream saw %s", err, res, up.lastID())
	}
	proxied := serverHolds(s)
	if own := len(tg.g.own); proxied == 0 || proxied != listed-own {
		t.Fatalf("the server's session holds %d tools, want the %d proxied", proxied, listed-own)
	}
	if res := s.call("detach_resource", map[string]any{"urn": fastURN}); res.IsError {
		t.Fatalf("detach: %s", firstText(res))
	}
	if n := serverHolds(s); n != 0 {
		t.Fatalf("the server's session holds %d tools after the detach", n)
	}
	attachRemote(t, s)
	if n := serverHolds(s); n != proxied {
		t.Fatalf("the server's session holds %d tools after attaching again, want %d", n, proxied)
	}

	// A method spelled with escapes is the same method to the server.
	for i, frame := range []string{
		`{"jsonrpc":"2.0","id":%d,"method":"tools\/call","params":{"name":"mcp_remote__echo","arguments":{"message":"spelled"}}}`,
		`{"jsonrpc":"2.0","id":%d,"method":"\u0074ools/call","params":{"name":"mcp_remote__echo","arguments":{"message":"spelled"}}}`,
	} {
		s := tg.connect(t)
		attachRemote(t, s)
		raw := dialRaw(t, tg, s.c.GetSessionId())
		raw.send(raw.request(fmt.Sprintf(frame, i)))
		if code, body := raw.answer(); code != http.StatusOK || !strings.Contains(body, `"text":"spelled"`) {
			t.Errorf("%s: %d %s", frame, code, body)
		}
	}
}
