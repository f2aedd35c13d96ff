package tools

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/config"
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
