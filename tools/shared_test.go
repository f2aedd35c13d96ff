package tools

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/testdata/mcpfixture"
)

// A pinned server marked stateless is one connection for every session;
// one not marked is a connection per session. Sharing mixes nothing: two
// sessions using the same progress token at once each hear only their
// own call's progress, and a session ending leaves the others working.
func TestStatelessServerShared(t *testing.T) {
	for _, stateless := range []bool{true, false} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			up := newRecordingUpstream(t)
			pinned := []config.Server{{Name: "fx", URL: up.URL, Stateless: stateless}}
			tg := newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{}, pinned)
			sessions := []*clientSession{tg.connect(t), tg.connect(t), tg.connect(t)}
			for i, s := range sessions {
				waitPinned(t, s, "mcp_fx__echo")
				msg := fmt.Sprintf("session %d", i)
				if got := firstText(s.call("mcp_fx__echo", map[string]any{"message": msg})); got != msg {
					t.Fatalf("echo in session %d = %q", i, got)
				}
			}
			want := int64(1)
			if !stateless {
				want = int64(len(sessions))
			}
			if got := up.inits.Load(); got != want {
				t.Fatalf("the upstream was initialized %d times, want %d", got, want)
			}

			// Same client token, two sessions, at once.
			var wg sync.WaitGroup
			for i, ms := range []int{500, 800} {
				wg.Go(func() {
					req := mcp.CallToolRequest{}
					req.Params.Name = "mcp_fx__slow"
					req.Params.Arguments = map[string]any{"ms": ms}
					req.Params.Meta = &mcp.Meta{ProgressToken: "same"}
					if _, err := sessions[i].c.CallTool(context.Background(), req); err != nil {
						t.Errorf("slow in session %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			for i, ms := range []int{500, 800} {
				s := sessions[i]
				s.mu.Lock()
				heard := 0
				for _, n := range s.notes {
					if n.Method != string(mcp.MethodNotificationProgress) {
						continue
					}
					heard++
					if tok, total := n.Params.AdditionalFields["progressToken"], n.Params.AdditionalFields["total"]; tok != "same" || total != float64(ms) {
						t.Errorf("session %d heard progress of another call: token %v total %v, want same/%d", i, tok, total, ms)
					}
				}
				s.mu.Unlock()
				if heard == 0 {
					t.Errorf("session %d heard no progress", i)
				}
			}

			_ = sessions[0].c.Close()
			for i, s := range sessions[1:] {
				if got := firstText(s.call("mcp_fx__echo", map[string]any{"message": "after"})); got != "after" {
					t.Fatalf("session %d after another ended: %q", i+1, got)
				}
			}
		})
	}
}

// waitPinned waits until a pinned server's tool answers in the session.
func waitPinned(t *testing.T, s *clientSession, tool string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		req.Params.Arguments = map[string]any{"message": "ready?"}
		// The fast path learns a session's new tools a moment before the
		// MCP server, which serves calls that carry _meta: wait for both.
		if res, err := s.c.CallTool(context.Background(), req); err == nil && !res.IsError && slices.Contains(s.tools(), tool) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became callable", tool)
		}
	}
}

// A pinned remote server's token (token_env in the config) goes to it as
// a bearer token on every request: the handshake, the listings through
// mcp-go's transport, the calls on the fast path and the DELETE that ends
// the server's session. Without it the
// server refuses the gateway, which lists it down.
func TestPinnedServerToken(t *testing.T) {
	h := server.NewStreamableHTTPServer(mcpfixture.New("remote"))
	var refused, deletes atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			refused.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodDelete {
			deletes.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)

	pinned := []config.Server{{Name: "fx", URL: up.URL, Token: "s3cret"}}
	s := newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{}, pinned).connect(t)
	waitPinned(t, s, "mcp_fx__echo")
	if got := firstText(s.call("mcp_fx__echo", map[string]any{"message": "with a token"})); got != "with a token" {
		t.Fatalf("echo = %q", got)
	}
	if text := readText(t, s.c, "fixture://readme"); text != mcpfixture.ReadmeText {
		t.Fatalf("resources/read = %q", text)
	}
	// The session's end ends the server's session too, with the token
	// (mcp-go's DELETE carries no configured header of its own).
	_ = s.c.Close()
	for deadline := time.Now().Add(5 * time.Second); deletes.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server's session was never ended with the token")
		}
	}
	if n := refused.Load(); n != 0 {
		t.Fatalf("the server refused %d requests of the gateway's", n)
	}

	pinned[0].Token = ""
	s = newGatewayWith(t, 10*time.Second, Options{Version: "test"}, HTTPOptions{}, pinned).connect(t)
	req := mcp.CallToolRequest{}
	req.Params.Name = "mcp_fx__echo"
	if _, err := s.c.CallTool(context.Background(), req); err == nil || !strings.Contains(err.Error(), "fx is down") || !strings.Contains(err.Error(), "asks for authorization (HTTP 401)") {
		t.Fatalf("without the token: %v; want the server down, saying it asked for authorization", err)
	}
	get := mcp.GetPromptRequest{}
	get.Params.Name = "mcp_fx__greet"
	if _, err := s.c.GetPrompt(context.Background(), get); err == nil || !strings.Contains(err.Error(), "fx: upstream is down") {
		t.Fatalf("a prompt of the server down: %v; want it said down, not unknown", err)
	}
}
