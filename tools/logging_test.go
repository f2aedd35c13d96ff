package tools

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// logNotes records the log messages a client hears.
type logNotes struct {
	mu   sync.Mutex
	msgs []mcp.JSONRPCNotification
}

func hearLogs(c *client.Client) *logNotes {
	l := &logNotes{}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationMessage) {
			l.mu.Lock()
			l.msgs = append(l.msgs, n)
			l.mu.Unlock()
		}
	})
	return l
}

// heard returns the messages heard so far, as "level logger data".
func (l *logNotes) heard() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.msgs))
	for _, n := range l.msgs {
		f := n.Params.AdditionalFields
		out = append(out, fmt.Sprintf("%v %v %v", f["level"], f["logger"], f["data"]))
	}
	return out
}

// waitFor waits until the messages heard end with last, and returns them.
func (l *logNotes) waitFor(t *testing.T, last string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := l.heard()
		if len(got) > 0 && got[len(got)-1] == last {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client never heard %q; it heard %q", last, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitForAll waits until the messages heard include all of want.
func (l *logNotes) waitForAll(t *testing.T, want ...string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got := l.heard()
		if !slices.ContainsFunc(want, func(w string) bool { return !slices.Contains(got, w) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client never heard all of %q; it heard %q", want, got)
		}
	}
}

// An attached server's log messages reach the client, named by the
// attachment, at the level the client set, which the server is told too;
// a server that floods its log is cut to what the client is sent. Over
// stdio with a stdio server, and over HTTP with a remote one.
func TestUpstreamLogs(t *testing.T) {
	for _, tc := range []struct {
		name string
		// start serves a session with the fixture attached as name; again,
		// when not nil, attaches it anew.
		start func(t *testing.T) (c *client.Client, name string, again func())
	}{
		{"stdio", func(t *testing.T) (*client.Client, string, func()) {
			c := serveStdio(t, New(pinnedFixture(buildFixture(t), time.Minute), quietLog, Options{Version: "test"}))
			return c, "fx", nil
		}},
		{"http", func(t *testing.T) (*client.Client, string, func()) {
			up := upstream(t)
			tg := newGateway(t, time.Minute, remoteEntry("urn:air:test:mcp:remote", up.URL+"/mcp"))
			s := tg.connect(t, transport.WithContinuousListening()) // messages between calls come on the GET stream
			attach := func() {
				if res := s.call("attach_resource", map[string]any{"urn": "urn:air:test:mcp:remote"}); res.IsError {
					t.Fatalf("attach: %v", firstText(res))
				}
			}
			attach()
			return s.c, "remote", func() {
				if res := s.call("detach_resource", map[string]any{"urn": "urn:air:test:mcp:remote"}); res.IsError {
					t.Fatalf("detach: %v", firstText(res))
				}
				attach()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, name, again := tc.start(t)
			logs := hearLogs(c)
			ctx := context.Background()
			log := func(args map[string]any) string {
				t.Helper()
				req := mcp.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = "mcp_"+name+"__log", args
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					res, err := c.CallTool(ctx, req)
					if err == nil && !res.IsError {
						return firstText(res)
					}
					if time.Now().After(deadline) { // a pinned server may still be starting
						t.Fatalf("log %v: %v %v", args, err, res)
					}
				}
			}
			logger := name + "/fixture"

			// Until the client sets a level, errors and worse reach it.
			if got := log(map[string]any{"level": "error"}); got != "sent 1 at error; the client's level is error" {
				t.Fatalf("log: %q", got)
			}
			logs.waitFor(t, "error "+logger+" log 1")
			if name == "fx" {
				// Over stdio, messages the server wrote before its answer
				// come before it: heard by the time the call returns.
				log(map[string]any{"level": "alert", "count": 2, "inline": true})
				if got := logs.heard(); len(got) != 3 || got[2] != "alert "+logger+" log 2" {
					t.Fatalf("when the call returned, the client had heard %q; want the messages written before the answer", got)
				}
			}
			// A message the server sends below that level is not relayed:
			// the error sent after it comes first.
			log(map[string]any{"level": "info", "force": true})
			log(map[string]any{"level": "critical"})
			if got := logs.waitFor(t, "critical "+logger+" log 1"); len(got) != map[string]int{"fx": 4, "remote": 2}[name] {
				t.Fatalf("heard %q; the info message passed the client's level", got)
			}

			// The client's level is passed on to the server.
			var req mcp.SetLevelRequest
			req.Params.Level = mcp.LoggingLevelDebug
			if err := c.SetLevel(ctx, req); err != nil {
				t.Fatal(err)
			}
			toldDebug := func() {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					if got := log(map[string]any{"level": "debug", "count": 3}); strings.HasSuffix(got, "level is debug") {
						return
					}
					if time.Now().After(deadline) {
						t.Fatal("the server was never told the client's level")
					}
				}
			}
			toldDebug()
			// Over HTTP, mcp-go's server may send a call's notices on the
			// session's GET stream as well as on the call's: their order
			// is not the gateway's to keep.
			logs.waitForAll(t, "debug "+logger+" log 1", "debug "+logger+" log 2", "debug "+logger+" log 3")

			// A flood is cut to the session's budget, and the session goes on.
			before := len(logs.heard())
			start := time.Now()
			if got := log(map[string]any{"level": "warning", "count": 2000}); got != "sent 2000 at warning; the client's level is debug" {
				t.Fatalf("flood: %q", got)
			}
			time.Sleep(time.Second) // the budget fills up again
			elapsed := time.Since(start)
			log(map[string]any{"level": "emergency"})
			got := logs.waitFor(t, "emergency "+logger+" log 1")
			flood := len(got) - before - 1
			if limit := logBurst + int(elapsed.Seconds()*logsPerSecond) + 1; flood > limit || flood < 1 {
				t.Fatalf("%d of 2000 flooded messages relayed in %s; want some, at most %d", flood, elapsed, limit)
			}
			t.Logf("%d of 2000 flooded messages relayed in %s", flood, elapsed)

			// A server attached after the client set its level is told it.
			if again != nil {
				again()
				toldDebug()
			}
		})
	}
}

// A streamable HTTP server that logs, and does not say its tools change,
// is listened to between calls once the client set a level: what it logs
// after a call has ended reaches the client. It was not listened to, and
// such a message waited at the server until the next call.
func TestUpstreamLogsBetweenCalls(t *testing.T) {
	up := server.NewMCPServer("quiet", "1", server.WithToolCapabilities(false), server.WithLogging())
	up.AddTool(mcp.NewTool("later"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := server.ClientSessionFromContext(ctx).SessionID()
		go func() {
			time.Sleep(50 * time.Millisecond)
			_ = up.SendLogMessageToSpecificClient(id, mcp.NewLoggingMessageNotification(mcp.LoggingLevelError, "", "after the call"))
		}()
		return mcp.NewToolResultText("ok"), nil
	})
	h := server.NewStreamableHTTPServer(up)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close() })

	tg := newGateway(t, 10*time.Second, remoteEntry("urn:air:ardgate.test:mcp:quiet", ts.URL))
	s := tg.connect(t, transport.WithContinuousListening())
	logs := hearLogs(s.c)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:quiet"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	var req mcp.SetLevelRequest
	req.Params.Level = mcp.LoggingLevelInfo
	if err := s.c.SetLevel(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// One call: a second would bring the message in its answer.
	if res := s.call("mcp_quiet__later", map[string]any{}); res.IsError {
		t.Fatalf("later: %s", firstText(res))
	}
	logs.waitFor(t, "error quiet after the call")
}

// Log messages leave room in an HTTP session's queue of notices: a client
// with no GET stream, whose queue waits for its next request, still gets
// the tools/list_changed that comes after a burst of them. They filled it,
// and the notice was dropped.
func TestLogsLeaveRoomForNotices(t *testing.T) {
	up := server.NewMCPServer("noisy", "1", server.WithToolCapabilities(true), server.WithLogging())
	up.AddTool(mcp.NewTool("burst"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := range 150 {
			_ = up.SendNotificationToClient(ctx, string(mcp.MethodNotificationMessage), map[string]any{"level": "error", "data": fmt.Sprint(i)})
			for ch := server.ClientSessionFromContext(ctx).NotificationChannel(); len(ch) > 0; { // written, not dropped
				time.Sleep(time.Millisecond)
			}
		}
		time.Sleep(10 * time.Millisecond) // the last one written (see the fixture's log tool)
		return mcp.NewToolResultText("ok"), nil
	})
	h := server.NewStreamableHTTPServer(up)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close() })
	tg := newGateway(t, 10*time.Second, remoteEntry("urn:air:ardgate.test:mcp:noisy", ts.URL))
	s := tg.connect(t) // no GET stream
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:noisy"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	gs := tg.g.lookup(s.c.GetTransport().(*transport.StreamableHTTP).GetSessionId())
	queued := func() int { return len(*gs.Notices.Load()) }
	if n := queued(); n != 0 {
		t.Fatalf("%d notices queued before the burst", n)
	}
	if res := s.call("mcp_noisy__burst", map[string]any{}); res.IsError {
		t.Fatalf("burst: %s", firstText(res))
	}
	room := cap(*gs.Notices.Load()) - noticeReserve
	for deadline := time.Now().Add(5 * time.Second); queued() < room; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d log messages queued, want %d", queued(), room)
		}
	}
	up.AddTool(mcp.NewTool("new"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	for deadline := time.Now().Add(5 * time.Second); queued() != room+1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d notices queued, want the %d log messages and the tools/list_changed", queued(), room)
		}
	}
}
