package registry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ardgate/ardgate/testdata/kagent"
)

func TestWellKnown(t *testing.T) {
	var failing atomic.Bool
	catalogHost := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case failing.Load():
			http.Error(w, "down", http.StatusInternalServerError)
		case r.URL.Path == "/.well-known/ai-catalog.json":
			_, _ = w.Write([]byte(`{"specVersion":"1.0","entries":[` + oneEntry + `,"description":"live weather"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer catalogHost.Close()
	// An A2A v0.2 host: ard.json and agent.json, the older names.
	agentHost := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/ard.json":
			_, _ = w.Write([]byte(`{"specVersion":"1.0","entries":[]}`))
		case "/.well-known/agent.json":
			_, _ = w.Write([]byte(`{"name":"Code Reviewer","description":"reviews pull requests","url":"https://x/a2a",
			  "skills":[{"id":"review","name":"Review","tags":["code-analysis"]}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer agentHost.Close()
	empty := httptest.NewServer(http.NotFoundHandler())
	defer empty.Close()

	w, err := NewWellKnown("hosts", []string{catalogHost.URL, agentHost.URL, empty.URL}, RemoteOptions{HTTP: &http.Client{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w.Refresh(ctx)

	p, err := w.Search(ctx, Query{Text: "review pull requests"})
	if err != nil || len(p.Results) == 0 || !strings.HasPrefix(p.Results[0].Identifier, "urn:air:127.0.0.1:agent:code-reviewer") {
		t.Fatalf("agent card not indexed: %v %+v", err, p.Results)
	}
	if p.Results[0].Type != "application/a2a-agent-card+json" {
		t.Fatalf("type %q", p.Results[0].Type)
	}
	p, _ = w.Search(ctx, Query{Text: "the", Filter: map[string][]string{"tags": {"code-analysis"}}})
	if len(p.Results) != 1 {
		t.Fatalf("filter by skill tag: %+v", p.Results)
	}
	if _, err := w.Lookup(ctx, "urn:air:acme.com:mcp:weather"); err != nil {
		t.Fatalf("catalog entry: %v", err)
	}
	h := w.Health()
	if !h[0].OK || !h[1].OK || h[2].OK || !strings.Contains(h[2].Error, "neither") {
		t.Fatalf("health %+v", h)
	}

	// A host that fails keeps its last entries; its health says so.
	failing.Store(true)
	w.Refresh(ctx)
	if _, err := w.Lookup(ctx, "urn:air:acme.com:mcp:weather"); err != nil {
		t.Fatalf("entries of a failing host dropped: %v", err)
	}
	if h := w.Health(); h[0].OK || !strings.Contains(h[0].Error, "500") || h[0].Entries == nil || *h[0].Entries != 1 {
		t.Fatalf("failing host health %+v", h[0])
	}
}

// Searches made before the first fetch wait for it, within their context.
func TestWellKnownWaitsForFirstFetch(t *testing.T) {
	w, _ := NewWellKnown("hosts", nil, RemoteOptions{HTTP: &http.Client{}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Search(ctx, Query{Text: "x"}); err == nil {
		t.Fatal("search before any fetch did not wait")
	}
	w.Refresh(context.Background())
	if _, err := w.Search(context.Background(), Query{Text: "x"}); err != nil {
		t.Fatal(err)
	}
}

// A host with a path lists a namespace's cards at its well-known card
// path; their string capabilities are indexed, and a card that could not
// be attached is refused, the host's health saying why.
func TestWellKnownNamespaceHost(t *testing.T) {
	host := kagent.Start(t)
	odd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/team/.well-known/agent.json" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`[{"name":"grpc-only","version":"1.0.0","supportedInterfaces":[{"url":"https://x","protocolBinding":"GRPC","protocolVersion":"1.0"}]}]`))
	}))
	defer odd.Close()
	w, err := NewWellKnown("hosts", []string{host.URL, odd.URL + "/team"}, RemoteOptions{HTTP: &http.Client{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w.Refresh(ctx)
	p, err := w.Search(ctx, Query{Text: "kubernetes", Filter: map[string][]string{"capabilities": {"kubernetes-management"}}})
	if err != nil || len(p.Results) != 1 || p.Results[0].DisplayName != kagent.Agent {
		t.Fatalf("by string capability: %v %+v", err, p.Results)
	}
	health := w.Health()
	if !health[0].OK || health[1].OK || !strings.Contains(health[1].Error, "grpc-only") {
		t.Fatalf("health: %+v", health)
	}
}
