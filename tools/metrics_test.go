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

	// The fixture stops reading its stdin for 1.5 s; four 1 MiB calls
	// sent meanwhile wait in the gateway, more than its pipe holds.
	var wg sync.WaitGroup
	wg.Go(func() { s.call("mcp_fx__slow", map[string]any{"ms": 1500, "hold_input": true}) })
	time.Sleep(200 * time.Millisecond)
	big := strings.Repeat("b", 1<<20)
	for range 4 {
		wg.Go(func() {
			if res := s.call("mcp_fx__echo", map[string]any{"message": big}); res.IsError {
				t.Errorf("a 1 MiB echo failed: %s", firstText(res))
			}
		})
	}
	var seen float64
	for deadline := time.Now().Add(1200 * time.Millisecond); seen < 2<<20 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		seen, _ = scrape()
	}
	if seen < 2<<20 {
		t.Errorf("the backlog peaked at %v bytes while four 1 MiB calls waited on a server not reading, want over 2 MiB", seen)
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
