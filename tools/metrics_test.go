package tools

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ardgate/ardgate/config"
)

// progressed tells whether a progress notification of token has come.
func (s *clientSession) progressed(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.notes {
		if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == token {
			return true
		}
	}
	return false
}

// What waits for a stdio server that has stopped reading its input shows
// in /metrics while it waits, under the attachment's name, and is gone
// once the server has read it.
func TestMetricsStdioBacklog(t *testing.T) {
	fixture := buildFixture(t)
	tg := newGatewayWith(t, 20*time.Second, Options{Version: "test"}, HTTPOptions{},
		[]config.Server{{Name: "fx", Command: fixture, Args: []string{"--transport=stdio"}}})
	s := tg.connect(t)
	waitCallable(t, s.c, "mcp_fx__echo", map[string]any{"message": "ready?"})
	backlog := regexp.MustCompile(`(?m)^ardgate_stdio_backlog_bytes\{upstream="fx"\} (\S+)$`)
	scrape := func() (float64, bool) {
		resp, err := http.Get(strings.TrimSuffix(tg.url, "/mcp") + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := backlog.FindSubmatch(body)
		if m == nil {
			return 0, false
		}
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatalf("ardgate_stdio_backlog_bytes %q: %v", m[1], err)
		}
		return v, true
	}
	defer http.DefaultClient.CloseIdleConnections()
	if v, ok := scrape(); ok {
		t.Fatalf("a backlog of %v bytes before any call waited", v)
	}

	// The fixture stops reading its stdin for 3 s from the moment it
	// starts the slow call, which its first progress tells; four 1 MiB
	// calls sent then wait in the gateway, more than its pipe holds.
	var wg sync.WaitGroup
	held := make(chan struct{})
	wg.Go(func() {
		defer close(held)
		s.callWithToken("mcp_fx__slow", map[string]any{"ms": 3000, "hold_input": true}, "held")
	})
	for deadline := time.Now().Add(10 * time.Second); !s.progressed("held"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no progress of the slow call in 10 s")
		}
	}
	big := strings.Repeat("b", 1<<20)
	for range 4 {
		wg.Go(func() {
			if res := s.call("mcp_fx__echo", map[string]any{"message": big}); res.IsError {
				t.Errorf("a 1 MiB echo failed: %s", firstText(res))
			}
		})
	}
	var seen float64
	for ; seen < 2<<20; time.Sleep(20 * time.Millisecond) {
		select {
		case <-held:
			t.Fatalf("the backlog peaked at %v bytes while four 1 MiB calls waited on a server not reading, want over 2 MiB", seen)
		default:
		}
		seen, _ = scrape()
	}
	wg.Wait()
	// The writer's last write returns just after the server has read it.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		v, ok := scrape()
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a backlog of %v bytes 5 s after every call was answered", v)
		}
	}
}
