package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
)

// startingServers pins two fixture servers that take delay and late to
// start.
func startingServers(fixture string, delay, late time.Duration) []config.Server {
	return []config.Server{
		{Name: "slow", Command: fixture, Args: []string{"--transport=stdio", "--start-delay=" + delay.String()}},
		{Name: "late", Command: fixture, Args: []string{"--transport=stdio", "--start-delay=" + late.String()}},
	}
}

// stdioGateway is a gateway over pinned servers, for ServeStdio.
func stdioGateway(pinned []config.Server, opts Options) *Gateway {
	return New(&attach.Manager{Pinned: pinned, CallTimeout: 20 * time.Second, StartTimeout: 20 * time.Second, Log: quietLog}, quietLog, opts)
}

// statusOf is the status list_attached_resources gives attachment name.
func (s *clientSession) statusOf(name string) string {
	s.t.Helper()
	var out struct {
		Attachments []listedAttachment `json:"attachments"`
	}
	if err := json.Unmarshal(s.call("list_attached_resources", map[string]any{}).RawStructuredContent, &out); err != nil {
		s.t.Fatal(err)
	}
	for _, a := range out.Attachments {
		if a.Name == name {
			return a.Status
		}
	}
	return ""
}

// A tool of a pinned server still starting, called right after
// initialize by a client that knows its name (no tools/list first), is
// served once the server is up, on both transports, by name and through
// call_attached_tool; a call waits for its own server only. It was
// refused "slow is still starting".
func TestCallWhileStarting(t *testing.T) {
	pinned := startingServers(buildFixture(t), 300*time.Millisecond, 4*time.Second)
	opts := Options{Version: "test", PinnedListWait: 20 * time.Second}
	for _, tc := range []struct {
		name    string
		connect func(t *testing.T) *clientSession
	}{
		{"stdio", func(t *testing.T) *clientSession {
			return &clientSession{t: t, c: serveStdio(t, stdioGateway(pinned, opts))}
		}},
		{"http", func(t *testing.T) *clientSession {
			return newGatewayWith(t, 20*time.Second, opts, HTTPOptions{}, pinned).connect(t)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.connect(t)
			if res := s.call("mcp_slow__echo", map[string]any{"message": "first"}); res.IsError || firstText(res) != "first" {
				t.Fatalf("a call right after initialize: %s", firstText(res))
			}
			if status := s.statusOf("late"); status != attach.StatusStarting {
				t.Fatalf("the call waited for another server: late is %q", status)
			}
			res := s.call(callAttachedTool, map[string]any{"name": "mcp_late__echo", "arguments": map[string]any{"message": "via"}})
			if res.IsError || firstText(res) != "via" {
				t.Fatalf("through %s: %s", callAttachedTool, firstText(res))
			}
		})
	}
}

// The wait is bounded by pinned_list_wait from the session's start: past
// it, a call of a server still starting is refused, saying so.
func TestCallWhileStartingBounded(t *testing.T) {
	pinned := startingServers(buildFixture(t), 0, 5*time.Second)[1:]
	s := &clientSession{t: t, c: serveStdio(t, stdioGateway(pinned, Options{Version: "test", PinnedListWait: 300 * time.Millisecond}))}
	req := mcp.CallToolRequest{}
	req.Params.Name = "mcp_late__echo"
	req.Params.Arguments = map[string]any{"message": "too soon"}
	if _, err := s.c.CallTool(context.Background(), req); err == nil || !strings.Contains(err.Error(), "late is still starting") {
		t.Fatalf("a call past pinned_list_wait: %v", err)
	}
	res := s.call(callAttachedTool, map[string]any{"name": "mcp_late__echo", "arguments": map[string]any{}})
	if s.code(res) != "upstream_down" || !strings.Contains(firstText(res), "late is still starting") {
		t.Fatalf("through %s, past pinned_list_wait: %s %s", callAttachedTool, s.code(res), firstText(res))
	}
}

// A call the client cancels while it waits for its server ends at once,
// unanswered: over stdio no answer comes, over HTTP its POST is an event
// stream with no message.
func TestCallWhileStartingCancelled(t *testing.T) {
	t.Parallel()
	fixture := buildFixture(t)
	t.Run("stdio", func(t *testing.T) {
		// Uncancelled, the call would be refused once pinned_list_wait
		// passes, before the ping is answered.
		pinned := startingServers(fixture, 0, 5*time.Second)[1:]
		c := rawStdio(t, stdioGateway(pinned, Options{Version: "test", PinnedListWait: time.Second}))
		if _, err := c.w.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mcp_late__echo","arguments":{"message":"never"}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}` + "\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		if got := c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":8,"method":"ping"}`+"\n")); !bytes.Contains(got, []byte(`"id":8`)) {
			t.Fatalf("the cancelled call was answered: %s", got)
		}
	})
	t.Run("http", func(t *testing.T) {
		pinned := startingServers(fixture, 0, 8*time.Second)[1:]
		tg := newGatewayWith(t, 20*time.Second, Options{Version: "test", PinnedListWait: 20 * time.Second}, HTTPOptions{}, pinned)
		s := tg.connect(t)
		post := func(body string) (*http.Response, error) { return s.post(tg.url, body) }
		done := make(chan string, 1)
		go func() {
			resp, err := post(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"mcp_late__echo","arguments":{"message":"never"}}}`)
			if err != nil {
				done <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			done <- resp.Header.Get("Content-Type") + " " + string(b)
		}()
		waitFastCall(t, tg.g, s.c.GetSessionId())
		resp, err := post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}}`)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		select {
		case got := <-done:
			if !strings.HasPrefix(got, "text/event-stream") || strings.Contains(got, "data:") {
				t.Fatalf("the cancelled call was answered: %q", got)
			}
		case <-time.After(4 * time.Second):
			t.Fatal("the cancelled call went on waiting")
		}
	})
}

// A client that sends its first requests with initialize, in one write,
// not waiting for its answer, has its first tools/list wait for the
// pinned servers, and a call of theirs served, as one that waits.
func TestPipelinedAfterInitialize(t *testing.T) {
	pinned := startingServers(buildFixture(t), 300*time.Millisecond, 0)[:1]
	c := rawPipes(t, stdioGateway(pinned, Options{Version: "test", PinnedListWait: 20 * time.Second}))
	if _, err := c.w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_slow__echo","arguments":{"message":"early"}}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for len(got) < 3 {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(c.next(t), &m); err != nil {
			t.Fatal(err)
		}
		got[string(m.ID)] = string(m.Result) + string(m.Error)
	}
	if !strings.Contains(got["2"], `"mcp_slow__echo"`) {
		t.Errorf("the first tools/list, sent with initialize: %.300s", got["2"])
	}
	if !strings.Contains(got["3"], `"text":"early"`) {
		t.Errorf("the call, sent with initialize: %.300s", got["3"])
	}
}
