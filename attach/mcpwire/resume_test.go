package mcpwire

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"
)

// A call whose stream the server ends before answering, once it gave an
// event id, is polled with GETs from the last event, after the wait the
// server asked for, until the answer comes (SEP-1699). One that ends
// with no id to resume from, or whose poll fails, fails with a sentence.
func TestPosterResumesCall(t *testing.T) {
	for _, own := range []bool{true, false} {
		t.Run(fmt.Sprintf("own connections %v", own), func(t *testing.T) {
			t.Cleanup(func() { goleak.VerifyNone(t) })
			var mu sync.Mutex
			var polls []string // each GET's Last-Event-ID
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				if r.Method == http.MethodPost {
					body, _ := io.ReadAll(r.Body)
					switch {
					case strings.Contains(string(body), `"poll"`):
						io.WriteString(w, "retry: 10\nid: a\ndata: \n\n") // the priming event, then the stream ends
					case strings.Contains(string(body), `"bad-poll"`):
						io.WriteString(w, "retry: 10\nid: x\ndata: \n\n")
					default: // no id: nothing to resume from
						io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
					}
					return
				}
				id := r.Header.Get("Last-Event-ID")
				mu.Lock()
				polls = append(polls, id)
				mu.Unlock()
				switch id {
				case "a":
					io.WriteString(w, "id: b\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\n\n")
				case "b":
					io.WriteString(w, "id: c\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"late\"}]}}\n\n")
				default:
					w.Header().Del("Content-Type")
					http.Error(w, "unknown event id", http.StatusBadRequest)
				}
			}))
			t.Cleanup(srv.Close)
			var notes []string
			p := posterFor(t, srv.URL, own, func(n mcp.JSONRPCNotification) {
				mu.Lock()
				notes = append(notes, n.Method)
				mu.Unlock()
			})
			ctx := context.Background()

			if got, err := call1(t, ctx, p, 5, "poll"); err != nil || got != "late" {
				t.Fatalf("a polled call: %q, %v", got, err)
			}
			mu.Lock()
			if !slices.Equal(polls, []string{"a", "b"}) || !slices.Equal(notes, []string{"notifications/progress"}) {
				t.Errorf("polled from %q, heard %q; want from a then b, and the progress", polls, notes)
			}
			polls = nil
			mu.Unlock()

			if _, err := call1(t, ctx, p, 6, "bad-poll"); err == nil || !strings.Contains(err.Error(), "polling the server for the call's answer: the server answered HTTP 400") {
				t.Errorf("a poll the server refused: %v", err)
			}
			if _, err := call1(t, ctx, p, 7, "no-id"); err == nil || !strings.Contains(err.Error(), "ended without answering the call") {
				t.Errorf("a stream ended with no id: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(polls, []string{"x"}) {
				t.Errorf("polled from %q, want x only", polls)
			}
		})
	}
}
