package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/testdata/a2afixture"
)

// While a stage of attach_resource, or a task wait_task follows, brings no
// news, the client hears progress all the same, every ProgressBeat, rising
// and short of the next step: a server slow to list its tools, an agent's
// task asleep for a while. Before, nothing came between stages, and a
// client that gives a request more time at each progress gave up on a long
// npx download all the same.
func TestProgressBeats(t *testing.T) {
	up := server.NewMCPServer("slowlist", "1", server.WithToolCapabilities(false))
	up.AddTool(mcp.NewTool("t"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	h := server.NewStreamableHTTPServer(up)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/list"`)) {
			time.Sleep(400 * time.Millisecond)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close() })
	agent := a2afixture.Start(t)
	tg := newGatewayWith(t, 10*time.Second, Options{Version: "test", ProgressBeat: 50 * time.Millisecond}, HTTPOptions{}, nil,
		remoteEntry("urn:air:ardgate.test:mcp:slowlist", ts.URL), agentEntry("urn:air:agents.test:agent:helper", agent.URL+"/.well-known/agent-card.json"))
	s := tg.connect(t)

	// beats checks the progress heard under token: rising, below its
	// total, and at least three beats of the stage or task update that
	// begins with stage.
	beats := func(token, stage string) {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		last, n := -1.0, 0
		for _, note := range s.notes {
			f := note.Params.AdditionalFields
			if note.Method != string(mcp.MethodNotificationProgress) || f["progressToken"] != token {
				continue
			}
			p, _ := f["progress"].(float64)
			if p <= last {
				t.Fatalf("progress %v after %v under %s: it must rise", p, last, token)
			}
			if total, ok := f["total"].(float64); ok && p >= total {
				t.Fatalf("progress %v of %v under %s before the end", p, total, token)
			}
			last = p
			if msg, _ := f["message"].(string); strings.HasPrefix(msg, stage) && strings.HasSuffix(msg, "s)") {
				n++
			}
		}
		if n < 3 {
			var heard []string
			for _, note := range s.notes {
				if f := note.Params.AdditionalFields; f["progressToken"] == token {
					heard = append(heard, fmt.Sprint(f["progress"], " ", f["message"]))
				}
			}
			t.Fatalf("%d beats of %q under %s; want at least 3; heard %q", n, stage, token, heard)
		}
	}
	if res := s.callWithToken("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:slowlist"}, "a"); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	beats("a", "listing tools")

	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:helper"}); res.IsError {
		t.Fatalf("attach the agent: %s", firstText(res))
	}
	v := s.task(s.call("spawn_agent", map[string]any{"agent": "helper", "message": "slow 1500"}))
	if v = s.task(s.callWithToken("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 10}, "w")); v.State != "completed" {
		t.Fatalf("wait: %+v", v)
	}
	beats("w", "") // of whichever update came last: submitted, or working
}

// A task that streams a status every 30 ms is reported at most every
// 250 ms (a new state at once): ten progress notifications a second went
// to the client, 995 in one wait.
func TestTaskProgressCoalesced(t *testing.T) {
	s := helperAttached(t)
	const steps = 40 // 1.2 s of them
	v := s.task(s.call("spawn_agent", map[string]any{"message": fmt.Sprint("stream ", steps)}))
	if v = s.task(s.callWithToken("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 10}, "c")); v.State != "completed" {
		t.Fatalf("wait: %+v", v)
	}
	heard := s.progressFor("c")
	if n := len(heard); n < 3 || n > 15 {
		t.Fatalf("%d progress notifications for %d steps; want 3 to 15: %q", n, steps, heard)
	}
}
