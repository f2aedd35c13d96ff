package tools

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

// A registry that never answers costs one deadline, to a discovery and
// to an attach: the others' results come back, and the slow one is
// reported.
func TestRegistryTimeout(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	defer close(release)
	hc := (&guard.Dialer{AllowLocal: true}).Client()
	slow, _ := registry.NewARD("slow", hung.URL, "", registry.RemoteOptions{HTTP: hc})
	local := registry.NewLocal("local", registry.NewIndex("local", []registry.Entry{
		{Identifier: "urn:air:acme.com:mcp:weather", DisplayName: "Weather", Type: config.MediaMCPServerCard, URL: "https://acme.com/w.json"}}))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := &attach.Manager{Registries: []registry.Registry{slow, local}, HTTP: hc, AllowTypes: config.DefaultAllowAttachTypes,
		MaxAttachments: 1, CallTimeout: time.Second, StartTimeout: time.Second, Log: log, RegistryDeadline: 200 * time.Millisecond}
	g := New(m, log, Options{Version: "test"})
	h := g.NewHTTP(HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()); ts.Close(); g.Close(); hc.CloseIdleConnections() })
	s := (&testGateway{g: g, h: h, url: ts.URL + "/mcp"}).connect(t)

	res := s.call("discover_resources", map[string]any{"text": "weather"})
	var out struct {
		Results []struct{ URN string }
		Errors  []struct {
			RegistryID string `json:"registry_id"`
			Error      string
		}
	}
	if err := json.Unmarshal(res.RawStructuredContent, &out); err != nil || res.IsError {
		t.Fatalf("discover: %s", firstText(res))
	}
	if len(out.Results) != 1 || len(out.Errors) != 1 || out.Errors[0].RegistryID != "slow" || !strings.Contains(out.Errors[0].Error, "did not answer within 200ms") {
		t.Fatalf("discover with a hung registry: %+v", out)
	}
	// An attach asks each registry in turn, each within the deadline: it
	// waited on the hung one for good.
	res = s.call("attach_resource", map[string]any{"urn": "urn:air:acme.com:mcp:elsewhere"})
	if msg := firstText(res); s.code(res) != "registry_error" || !strings.Contains(msg, "registry slow did not answer within 200ms") || !strings.Contains(msg, "it is not in [local]") {
		t.Fatalf("attach with a hung registry first: %s %s", s.code(res), msg)
	}
}

// A client that goes away mid-call: the call is cancelled all the way to
// the upstream, which stops working on it.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	up := newRecordingUpstream(t)
	tg := newGateway(t, time.Minute, remoteEntry("urn:air:ardgate.test:mcp:remote", up.URL))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote"}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "mcp_remote__slow"
		req.Params.Arguments = map[string]any{"ms": 30000}
		_, err := s.c.CallTool(ctx, req)
		done <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); up.inflight.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the call never reached the upstream")
		}
	}
	cancel()
	<-done
	for deadline := time.Now().Add(10 * time.Second); up.inflight.Load() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the upstream kept working on a call whose client went away")
		}
	}
	// The session goes on.
	if got := firstText(s.call("mcp_remote__echo", map[string]any{"message": "still here"})); got != "still here" {
		t.Fatalf("after the cancelled call: %q", got)
	}
}
