package tools

import (
	"bytes"
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

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

// Over stdio a request the client cancelled gets no answer, as the MCP
// spec asks (the TypeScript SDK reports one as an error): neither a fast
// call nor a call the MCP server runs. Both stop, the session goes on,
// and an id named by a notice that came too late is answered when a new
// request reuses it.
func TestCancelledGetsNoAnswerStdio(t *testing.T) {
	g := New(pinnedFixture(buildFixture(t), 20*time.Second), quietLog, Options{Version: "test"})
	c := rawStdio(t, g)
	c.caller(t, `"mcp_fx__echo","arguments":{"message":"ready?"}`, `"text":"ready?"`)
	send := func(frame string) {
		t.Helper()
		if _, err := c.w.Write([]byte(frame + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	// next reads frames up to the answer to id, and fails on an answer to
	// any other request; it returns the answer and the progress tokens of
	// the notifications before it. With id "", it reads only until every
	// token in want has been seen.
	next := func(id string, want ...string) ([]byte, []string) {
		t.Helper()
		var tokens []string
		for {
			line, err := c.out.ReadSlice('\n')
			if err != nil {
				t.Fatal(err)
			}
			var f struct {
				ID     json.RawMessage
				Method string
				Params struct {
					ProgressToken json.RawMessage
				}
			}
			if err := json.Unmarshal(line, &f); err != nil {
				t.Fatalf("%v: %.200s", err, line)
			}
			if f.Method != "" {
				tokens = append(tokens, string(f.Params.ProgressToken))
				if id == "" && all(tokens, want) {
					return nil, tokens
				}
				continue
			}
			if string(f.ID) != id {
				t.Fatalf("an answer to %s, waiting for %s: %.300s", f.ID, id, line)
			}
			return bytes.Clone(line), tokens
		}
	}

	// A fast call, and one the MCP server runs (a member of params the
	// fast path leaves to it); the first progress of each says it reached
	// the upstream.
	send(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"mcp_fx__slow","arguments":{"ms":30000},"_meta":{"progressToken":"fast"}}}`)
	send(`{"jsonrpc":"2.0","id":"twelve","method":"tools/call","params":{"name":"mcp_fx__slow","arguments":{"ms":30000},"_meta":{"progressToken":"server"},"other":1}}`)
	next("", `"fast"`, `"server"`)

	// Both count as failed proxied calls once they have ended. Each id is
	// named in another spelling of it.
	ended := g.metrics.proxiedFailed
	before := count(ended)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11.0,"reason":"stop eleven"}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"tw\u0065lve","reason":"the user pressed Esc"}}`)
	for deadline := time.Now().Add(10 * time.Second); count(ended) < before+2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled calls did not end: %v of 2", count(ended)-before)
		}
	}
	// Their answers would have been written by now, before these.
	send(`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"after"}}}`)
	if line, _ := next("13"); !bytes.Contains(line, []byte(`"text":"after"`)) {
		t.Fatalf("after the cancelled calls: %.300s", line)
	}
	send(`{"jsonrpc":"2.0","id":14,"method":"ping"}`)
	next("14")
	// The upstream heard the client's reason for the fast call (on the
	// server's path, mcp-go keeps it to itself).
	send(`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"mcp_fx__cancellations","arguments":{}}}`)
	line, _ := next("15")
	var heard struct {
		Result struct{ Content []struct{ Text string } }
	}
	if err := json.Unmarshal(line, &heard); err != nil || len(heard.Result.Content) != 1 || !slices.Contains(strings.Split(heard.Result.Content[0].Text, "\n"), "stop eleven") {
		t.Fatalf("the reasons the upstream heard: %.300s", line)
	}

	// A notice for a request already answered; the id then comes again.
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":14}}`)
	send(`{"jsonrpc":"2.0","id":14,"method":"ping"}`)
	next("14")
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":13}}`)
	send(`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"mcp_fx__echo","arguments":{"message":"again"}}}`)
	if line, _ := next("13"); !bytes.Contains(line, []byte(`"text":"again"`)) {
		t.Fatalf("a reused id: %.300s", line)
	}
}

func all(have, want []string) bool {
	for _, w := range want {
		if !strings.Contains(fmt.Sprint(have), w) {
			return false
		}
	}
	return true
}

// Over HTTP a call of the gateway's own tools that the client cancelled
// gets no answer either. mcp-go's server answers it, as JSON here (the
// session has had no notification, which would have made its answers
// event streams), and the gateway ends the request instead as an event
// stream with no message. The call stops: the registry it waited on sees
// its query given up.
func TestCancelledOwnToolGetsNoAnswerHTTP(t *testing.T) {
	asked, gaveUp, release := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // net/http watches for the client going only once the body is read
		asked <- struct{}{}
		select {
		case <-r.Context().Done():
			gaveUp <- struct{}{}
		case <-release:
		}
	}))
	defer hung.Close()
	defer close(release)
	hc := (&guard.Dialer{AllowLocal: true}).Client()
	defer hc.CloseIdleConnections()
	reg, err := registry.NewARD("hung", hung.URL, "", registry.RemoteOptions{HTTP: hc})
	if err != nil {
		t.Fatal(err)
	}
	m := &attach.Manager{Registries: []registry.Registry{reg}, HTTP: hc, AllowTypes: config.DefaultAllowAttachTypes,
		MaxAttachments: 1, CallTimeout: time.Minute, StartTimeout: time.Second, Log: quietLog, RegistryDeadline: time.Minute}
	g := New(m, quietLog, Options{Version: "test"})
	h := g.NewHTTP(HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close(); g.Close() })
	tg := &testGateway{g: g, h: h, url: ts.URL + "/mcp"}
	sid := tg.connect(t).c.GetSessionId()

	c, other := dialRaw(t, tg, sid), dialRaw(t, tg, sid)
	c.send(c.request(`{"jsonrpc":"2.0","id":"q-1","method":"tools/call","params":{"name":"discover_resources","arguments":{"text":"weather"}}}`))
	select {
	case <-asked:
	case <-time.After(5 * time.Second):
		t.Fatal("discover_resources never queried the registry")
	}
	other.send(other.request(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"q-1"}}`))
	if code, body := other.answer(); code != http.StatusAccepted {
		t.Fatalf("the notice: %d %s", code, body)
	}
	resp, body := c.response()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || body != "" {
		t.Fatalf("the cancelled call's request ended %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	select {
	case <-gaveUp:
	case <-time.After(5 * time.Second):
		t.Fatal("the registry query went on after the call was cancelled")
	}
	c.send(c.request(`{"jsonrpc":"2.0","id":"q-2","method":"ping"}`))
	if code, body := c.answer(); code != http.StatusOK || !strings.Contains(body, `"id":"q-2","result":{}`) {
		t.Fatalf("a ping after the cancelled call: %d %s", code, body)
	}
}

// A client that goes away mid-call (its connection closed) has the call
// cancelled upstream with a reason that says so: the server read
// "context canceled".
func TestClientGoneReason(t *testing.T) {
	pinned := []config.Server{{Name: "fx", Command: buildFixture(t), Args: []string{"--transport=stdio"}}}
	tg := newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{}, pinned)
	s := tg.connect(t)
	waitPinned(t, s, "mcp_fx__echo")
	ctx, hangUp := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tg.url, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"mcp_fx__slow","arguments":{"ms":30000}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.c.GetSessionId())
	time.AfterFunc(300*time.Millisecond, hangUp)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the call answered before the client hung up")
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		heard := firstText(s.call("mcp_fx__cancellations", map[string]any{}))
		if strings.Contains(heard, "its client went away") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reasons the server heard: %q", heard)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// A tool whose caller gave up (a stdio client that closed its input
// mid-attach or mid-wait) fails as cancelled, in words: it failed as
// upstream_error, "context canceled", as if the server or agent had.
func TestGivenUpSaidSo(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("attach urn:air:x:y: its request ended before the server started: %w", attach.Cancelled(context.Canceled)),
		&attach.AgentError{URN: "urn:air:x:agent", Err: fmt.Errorf("task t on a: %w", attach.Cancelled(context.Canceled))},
	} {
		res := fromError(err)
		var f failureBody
		if err := json.Unmarshal(res.RawStructuredContent, &f); err != nil || f.Code != "cancelled" || strings.Contains(f.Error, "context canceled") || !strings.Contains(f.Error, "its client went away") {
			t.Errorf("%v: %s %q", err, f.Code, f.Error)
		}
	}
}
