package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/testdata/mcpfixture"
	"github.com/ardgate/ardgate/tools/serve"
)

// A session's quiet GET stream carries a comment every StreamHeartbeat,
// so that a proxy cutting idle connections leaves it open; comments come
// only between events (here the list_changed notices of a pinned server
// that comes up while no request is open, so that they go on the GET
// stream), and a negative StreamHeartbeat writes none. mcp-go's client,
// listening on its GET stream through the comments, still hears a
// notification.
func TestStreamHeartbeat(t *testing.T) {
	pinned := []config.Server{{Name: "late", Command: buildFixture(t), Args: []string{"--transport=stdio", "--start-delay=300ms"}}}
	for _, every := range []time.Duration{100 * time.Millisecond, -1} {
		tg := newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{StreamHeartbeat: every}, pinned)
		cs := tg.connect(t)
		sid := cs.c.GetSessionId()

		req, _ := http.NewRequest(http.MethodGet, tg.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		ctx, stopGET := context.WithTimeout(context.Background(), 700*time.Millisecond)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		get := make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(resp.Body) // until the context ends it
			get <- string(b)
		}()
		got := <-get
		stopGET()
		resp.Body.Close()

		beats := strings.Count(got, ": keep-alive\n\n")
		if !strings.Contains(got, "notifications/tools/list_changed") {
			t.Errorf("no notification on the GET stream: %q", got)
		}
		if every < 0 {
			if beats > 0 {
				t.Errorf("heartbeats off: %d comments: %q", beats, got)
			}
			continue
		}
		if beats < 4 {
			t.Errorf("every %s: %d comments in 700 ms: %q", every, beats, got)
		}
		// Each comment stands between events: the text around it is
		// whole events.
		for _, part := range strings.Split(got, ": keep-alive\n\n") {
			if part != "" && (!strings.HasSuffix(part, "\n\n") || strings.HasPrefix(part, "\n")) {
				t.Errorf("a comment inside an event: %q", got)
			}
		}

		// Its pinned server comes up 300 ms on, after comments.
		ls := tg.connect(t, transport.WithContinuousListening())
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			ls.mu.Lock()
			heard := slices.ContainsFunc(ls.notes, func(n mcp.JSONRPCNotification) bool { return n.Method == "notifications/tools/list_changed" })
			ls.mu.Unlock()
			if heard {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("mcp-go's client heard no tools/list_changed on a stream with comments")
			}
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// quietAnswer checks body, the answer to call id as an event stream: at
// least min comments, each between events, notifications only besides,
// and the result holding want as the last event.
func quietAnswer(t *testing.T, resp *http.Response, body string, id, min int, want string) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("a call quiet for a while answered as %q: %s; want an event stream with comments", ct, trim(body))
	}
	if beats := strings.Count(body, ": keep-alive\n\n"); beats < min {
		t.Errorf("%d comments, want at least %d: %q", beats, min, body)
	}
	parts := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	for i, p := range parts {
		if p == ": keep-alive" && i < len(parts)-1 {
			continue
		}
		if strings.HasPrefix(p, "id: ") {
			_, p, _ = strings.Cut(p, "\n")
		}
		data, ok := strings.CutPrefix(p, "event: message\ndata: ")
		var msg struct {
			ID     json.RawMessage
			Method string
		}
		if !ok || strings.Contains(data, "\n") || json.Unmarshal([]byte(data), &msg) != nil {
			t.Fatalf("part %d of the answer is %q; want a comment or one event", i, p)
		}
		if i < len(parts)-1 && (msg.ID != nil || !strings.HasPrefix(msg.Method, "notifications/")) {
			t.Errorf("before the result: %q; want comments and notifications only", p)
		}
		if i == len(parts)-1 && (string(msg.ID) != fmt.Sprint(id) || !strings.Contains(data, `"result":`) || !strings.Contains(data, want)) {
			t.Fatalf("the last event is %q; want the result of call %d, holding %s", trim(p), id, want)
		}
	}
}

// lateURN names the fixture served by lateUpstream.
const lateURN = "urn:air:example.com:mcp:late"

// attachLate is a raw attach_resource of lateURN, id 6.
const attachLate = `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"attach_resource","arguments":{"urn":"` + lateURN + `"}}}`

// lateUpstream serves the fixture over HTTP, answering initialize after
// delay; it returns the server's URL.
func lateUpstream(t *testing.T, delay time.Duration) string {
	late := server.NewStreamableHTTPServer(mcpfixture.New("late"))
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, msg := peekMessage(r); msg.Method == "initialize" {
			select {
			case <-time.After(delay):
			case <-r.Context().Done(): // its client gave up
			}
		}
		late.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { _ = late.Shutdown(context.Background()); up.Close() })
	return up.URL
}

// The answer to a call quiet for StreamHeartbeat becomes an event stream,
// when the client takes one, with a comment at that pace, and the result
// as its last event: on the fast path through net/http's server and on a
// kept connection, and on the server's path (an attach_resource whose
// server is slow to start). A proxy
// cutting connections idle for 60 s no longer cuts a long call's answer.
// A client that takes JSON only, a call quicker than that, and a gateway
// with heartbeats off get JSON.
func TestQuietCallHeartbeat(t *testing.T) {
	tg, _, sid := keptGateway(t, HTTPOptions{StreamHeartbeat: 100 * time.Millisecond})

	c := dialRaw(t, tg, sid)
	c.send(c.request(slowBody(1, 450)))
	resp, body := c.response()
	quietAnswer(t, resp, body, 1, 2, "slept 450ms")

	k := keptRaw(t, tg, sid)
	k.send(k.request(slowBody(3, 450)))
	resp, body = k.response()
	quietAnswer(t, resp, body, 3, 2, "slept 450ms")
	k.echo(4, "the stream ended whole")
	for _, accept := range []string{"application/json", "*/*"} {
		k.send(strings.Replace(k.request(slowBody(7, 300)), "Accept: application/json, text/event-stream", "Accept: "+accept, 1))
		if resp, body := k.response(); resp.Header.Get("Content-Type") != "application/json" || strings.Contains(body, "keep-alive") || !strings.Contains(body, "slept 300ms") {
			t.Errorf("a client whose Accept is %q: %q %s", accept, resp.Header.Get("Content-Type"), trim(body))
		}
	}
	// A call whose client has sent its next request already is not
	// watched: its beat is a timer's.
	k.send(k.request(slowBody(10, 450)) + k.request(callBody(11, "mcp_remote__echo", "next")))
	resp, body = k.response()
	quietAnswer(t, resp, body, 10, 2, "slept 450ms")
	if code, body := k.answer(); code != http.StatusOK || !strings.Contains(body, `"text":"next"`) {
		t.Fatalf("the request sent with the quiet call: %d %s", code, body)
	}
	k.send(k.request(slowBody(8, 0)))
	if resp, body := k.response(); resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, "slept 0ms") {
		t.Errorf("a quick call: %q %s", resp.Header.Get("Content-Type"), trim(body))
	}
	// A call whose client sends its next request while it runs: the
	// watch ends then, and the beats go on by a timer.
	k.send(k.request(slowBody(12, 450)))
	time.Sleep(3 * serve.WatchAfter)
	k.send(k.request(callBody(13, "mcp_remote__echo", "during")))
	resp, body = k.response()
	quietAnswer(t, resp, body, 12, 2, "slept 450ms")
	if code, body := k.answer(); code != http.StatusOK || !strings.Contains(body, `"text":"during"`) {
		t.Fatalf("the request sent during the quiet call: %d %s", code, body)
	}

	// mcp-go's client reads such an answer.
	cs := tg.connect(t)
	attachRemote(t, cs)
	if res := cs.call("mcp_remote__slow", map[string]any{"ms": 350}); res.IsError || firstText(res) != "slept 350ms" {
		t.Errorf("mcp-go's client got %+v", res)
	}

	// The server's path: attach_resource of a server slow to initialize.
	tl := newGatewayWith(t, time.Minute, Options{Version: "test"}, HTTPOptions{StreamHeartbeat: 100 * time.Millisecond}, nil, remoteEntry(lateURN, lateUpstream(t, 450*time.Millisecond)))
	l := dialRaw(t, tl, tl.connect(t).c.GetSessionId())
	l.send(l.request(attachLate))
	resp, body = l.response()
	quietAnswer(t, resp, body, 6, 2, `"status":"attached"`)

	off, _, sid := keptGateway(t, HTTPOptions{StreamHeartbeat: -1})
	for _, o := range []*rawConn{dialRaw(t, off, sid), keptRaw(t, off, sid)} {
		o.send(o.request(slowBody(9, 300)))
		if resp, body := o.response(); resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, "slept 300ms") {
			t.Errorf("heartbeats off: %q %s", resp.Header.Get("Content-Type"), trim(body))
		}
	}
}

// A POST whose Accept takes neither JSON nor an event stream gets 406, on
// a new connection and on one the gateway keeps: it was answered with an
// event stream all the same. An Accept split over two lines is read whole.
func TestPostNotAcceptable(t *testing.T) {
	tg, _, sid := keptGateway(t, HTTPOptions{})
	for _, c := range []*rawConn{dialRaw(t, tg, sid), keptRaw(t, tg, sid)} {
		c.send(strings.Replace(c.request(callBody(5, "mcp_remote__echo", "x")), "Accept: application/json, text/event-stream", "Accept: text/html", 1))
		if code, body := c.answer(); code != http.StatusNotAcceptable || !strings.Contains(body, "send both in Accept") {
			t.Errorf("Accept: text/html: %d %s", code, body)
		}
		c.send(strings.Replace(c.request(callBody(6, "mcp_remote__echo", "y")), "Accept: application/json, text/event-stream", "Accept: text/html\r\nAccept: application/json", 1))
		if code, body := c.answer(); code != http.StatusOK || !strings.Contains(body, `"text":"y"`) {
			t.Errorf("Accept over two lines: %d %s", code, body)
		}
	}
}
