package tools

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/tools/serve"
)

// Over HTTP: a session ended with DELETE answers 404, its end said, and
// the gateway holds no id of it once it is past the last maxEnded.
func TestSessionEndedHTTP(t *testing.T) {
	tg := newGateway(t, 0)
	s := tg.connect(t)
	id := s.c.GetSessionId()
	live := func(id string) bool {
		ended, err := tg.h.SessionIDs().Validate(id)
		return err == nil && !ended
	}
	if !live(id) {
		t.Fatalf("session %q is not among the gateway's ids", id)
	}
	del, _ := http.NewRequest(http.MethodDelete, tg.url, nil)
	del.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	defer http.DefaultClient.CloseIdleConnections()
	post := func() (int, string) { return postMCP(t, tg.url, id, `{"jsonrpc":"2.0","id":1,"method":"ping"}`) }
	if code, body := post(); code != http.StatusNotFound || body != serve.EndedSession {
		t.Fatalf("after DELETE: %d %q", code, body)
	}
	if live(id) {
		t.Fatal("the ended session's id is still live")
	}
	id = "mcp-session-00000000-0000-4000-8000-000000000000"
	if code, body := post(); code != http.StatusNotFound || body != serve.UnknownSession {
		t.Fatalf("an id never issued: %d %q", code, body)
	}
}

// A GET or DELETE that names no live session is refused, as such a POST
// is (a GET with no id with 405 and Allow: POST), and opens no session: mcp-go's server opened one for a GET with no
// id or a made-up one, which counted against max_sessions until swept, and
// answered a DELETE of any id with 200. The live session's GET stream and
// DELETE still work. Another method gets 405 and Allow (it got 404, "page
// not found").
func TestUnknownSessionRefusedHTTP(t *testing.T) {
	tg := newGatewayWith(t, 0, Options{Version: "test"}, HTTPOptions{MaxSessions: 1}, nil)
	s := tg.connect(t)
	live := s.c.GetSessionId()
	send := func(method, id string, post ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, tg.url, strings.NewReader(strings.Join(post, "")))
		req.Header.Set("Accept", "text/event-stream")
		if method == http.MethodPost {
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Content-Type", "application/json")
		}
		if id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatalf("%s %q: %v", method, id, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body) // a stream opened ends with ctx
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	defer http.DefaultClient.CloseIdleConnections()
	made := "mcp-session-00000000-0000-4000-8000-000000000000"
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		method, id string
		code       int
		says       string
		post       string
	}{
		// A POST with no id gets 400, as the spec asks, unless it is an
		// initialize (here refused: the one session allowed is open).
		{http.MethodPost, "", http.StatusBadRequest, "Mcp-Session-Id header required", ping},
		{http.MethodPost, "", http.StatusBadRequest, "Mcp-Session-Id header required", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		// A body that is no JSON object is answered as mcp-go's server
		// answers one with a session id, known or not: a parse error, not
		// "send a session id".
		{http.MethodPost, "", http.StatusBadRequest, `"code":-32700,"message":"request body is not valid json`, `garbage`},
		{http.MethodPost, made, http.StatusBadRequest, `"code":-32700,"message":"request body is not valid json`, `garbage`},
		{http.MethodPost, "", http.StatusServiceUnavailable, "max_sessions", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`},
		{http.MethodPost, made, http.StatusNotFound, "Invalid session ID", ping},
		// The stateless protocol, not offered, is for the server to refuse.
		{http.MethodPost, "", http.StatusBadRequest, "protocol", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		// A GET with no id opens no stream: 405, as the spec says of a
		// GET the server opens none for (the AI SDK, which GETs before
		// initialize, failed on a 400).
		{http.MethodGet, "", http.StatusMethodNotAllowed, "open a session with an initialize request (POST) first", ""},
		{http.MethodGet, made, http.StatusNotFound, "Invalid session ID", ""},
		{http.MethodGet, "fake-1", http.StatusNotFound, "Invalid session ID", ""},
		{http.MethodDelete, "", http.StatusBadRequest, "Mcp-Session-Id header required", ""},
		{http.MethodDelete, made, http.StatusNotFound, "Invalid session ID", ""},
		{http.MethodGet, live, http.StatusOK, "", ""},
		{http.MethodPut, live, http.StatusMethodNotAllowed, "takes POST", ""},
		{http.MethodPatch, "", http.StatusMethodNotAllowed, "takes POST", ""},
	} {
		if code, body := send(tc.method, tc.id, tc.post); code != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%s with id %q: %d %q, want %d %q", tc.method, tc.id, code, body, tc.code, tc.says)
		}
	}
	if n := tg.g.open.Load(); n != 1 {
		t.Fatalf("%d sessions open, want the one live", n)
	}
	get, _ := http.NewRequest(http.MethodGet, tg.url, nil)
	get.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Allow") != "POST" {
		t.Errorf("a GET with no id: Allow %q, want POST", resp.Header.Get("Allow"))
	}
	// A protocol version never agreed is refused first, before the
	// gateway's own answers at the door (an unknown tool was answered 200).
	// So is one that sorts after the stateless version without being one
	// ("abc", "2027-01-01"): it was passed on, and got mcp-go's words on
	// a _meta field the client never sent.
	for _, version := range []string{"1999-01-01", "abc", "2027-01-01"} {
		for _, body := range []string{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, ping} {
			req, _ := http.NewRequest(http.MethodPost, tg.url, strings.NewReader(body))
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Mcp-Session-Id", live)
			req.Header.Set("MCP-Protocol-Version", version)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), "Unsupported protocol version: "+version) {
				t.Errorf("%s in version %s: %d %s", body, version, resp.StatusCode, got)
			}
		}
	}
	// A GET of the live session that takes no event stream is refused at
	// once, not held open (a wildcard takes one).
	for accept, want := range map[string]int{"application/json": http.StatusNotAcceptable, "application/json, */*;q=0.1": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, tg.url, nil)
		req.Header.Set("Accept", accept)
		req.Header.Set("Mcp-Session-Id", live)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		resp.Body.Close()
		cancel()
		if resp.StatusCode != want {
			t.Errorf("GET with Accept %q: %d, want %d", accept, resp.StatusCode, want)
		}
	}
	if code, _ := send(http.MethodDelete, live); code != http.StatusOK {
		t.Fatalf("DELETE of the live session: %d", code)
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		if code, body := send(method, live); code != http.StatusNotFound || body != serve.EndedSession {
			t.Errorf("%s of the ended session: %d %q", method, code, body)
		}
	}
	// The one session max_sessions allows is free again for a client.
	if c := tg.connect(t); c.c.GetSessionId() == "" {
		t.Fatal("no session after the live one ended")
	}
}
