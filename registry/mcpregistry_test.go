package registry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/testdata/registryfixture"
)

// requests records what a fixture was asked.
type requests struct {
	mu   sync.Mutex
	seen []*http.Request
}

func (q *requests) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q.mu.Lock()
		q.seen = append(q.seen, r.Clone(context.Background()))
		q.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// searches returns the distinct search terms of the list requests.
func (q *requests) searches() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, r := range q.seen {
		if strings.HasSuffix(r.URL.Path, "/servers") && !slices.Contains(out, r.URL.Query().Get("search")) {
			out = append(out, r.URL.Query().Get("search"))
		}
	}
	slices.Sort(out)
	return out
}

// versionedFixture serves the recorded corpus and the servers of several
// versions and statuses, recording the requests.
func versionedFixture(t *testing.T) (*httptest.Server, *requests) {
	t.Helper()
	h, err := registryfixture.MCPRegistry("../testdata/mcpregistry/servers.json", "../testdata/registryfixture/versions.json")
	if err != nil {
		t.Fatal(err)
	}
	q := &requests{}
	ts := httptest.NewServer(q.wrap(h))
	t.Cleanup(ts.Close)
	return ts, q
}

// A deprecated server is listed and looked up, marked deprecated with
// the registry's statusMessage; it was dropped, and attaching it by URN
// said unknown_urn. A server whose latest version is deprecated is its
// newest active version: version=latest gave the deprecated one only.
// A deleted one is neither listed nor found.
func TestMCPRegistryStatuses(t *testing.T) {
	ts, _ := versionedFixture(t)
	m, err := NewMCPRegistry("mcp", ts.URL, RemoteOptions{HTTP: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := m.Search(ctx, Query{Text: "weather forecast", PageSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		urn, version, status, says string // status "gone": not there
	}{
		{"urn:air:acme.github.io:mcp:weather-station", "1.1.0", "", ""},
		{"urn:air:acme.github.io:mcp:legacy-forecast", "0.9.0", StatusDeprecated, `deprecated by its registry ("Superseded by io.github.acme/weather-station.")`},
		{"urn:air:acme.github.io:mcp:weather-archive", "", "gone", ""},
		{"urn:air:acme.github.io:mcp:weather-radar", "1.2.0", "", ""},
	} {
		i := slices.IndexFunc(p.Results, func(r Result) bool { return r.Identifier == c.urn })
		e, err := m.Lookup(ctx, c.urn)
		if c.status == "gone" {
			if i >= 0 || !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: listed at %d, looked up: %v; want neither", c.urn, i, err)
			}
			continue
		}
		if i < 0 || err != nil {
			t.Errorf("%s: listed at %d, looked up: %v", c.urn, i, err)
			continue
		}
		for how, got := range map[string]Entry{"listed": p.Results[i].Entry, "looked up": e} {
			withheld := got.Withheld()
			if got.Version != c.version || got.Status != c.status || (withheld == nil) != (c.says == "") ||
				withheld != nil && !strings.Contains(withheld.Error(), c.says) {
				t.Errorf("%s %s: version %q, status %q, withheld %v; want %q, %q, %q", c.urn, how, got.Version, got.Status, withheld, c.version, c.status, c.says)
			}
		}
	}
}

// The registry refuses a search shorter than three runes with a 422:
// "éé", four bytes, was sent, and failed the whole discover; beside
// "database", "日本" was sent, refused, and lost without a word. Words
// too short are not sent; the ranking still reads them.
func TestMCPRegistrySearchLengthInRunes(t *testing.T) {
	for _, c := range []struct {
		text string
		sent []string // "" is the listing, no search
	}{
		{"éé", []string{""}},
		{"日本 database", []string{"database"}},
		{"ééé weather", []string{"weather", "ééé"}},
		{"a db", []string{""}},
	} {
		ts, q := versionedFixture(t)
		m, _ := NewMCPRegistry("mcp", ts.URL, RemoteOptions{HTTP: &http.Client{}})
		if _, err := m.Search(context.Background(), Query{Text: c.text}); err != nil {
			t.Errorf("%q: %v", c.text, err)
		}
		if got := q.searches(); !slices.Equal(got, c.sent) {
			t.Errorf("%q: searched %q; want %q", c.text, got, c.sent)
		}
	}
}

// A url given with the API's version, or its servers route, is the
// registry's: the client asked /v0.1/v0.1/servers of one ending in
// /v0.1, and said only "HTTP 404". A url that is no registry's base says
// what was asked.
func TestMCPRegistryBaseURL(t *testing.T) {
	ts, _ := versionedFixture(t)
	for _, c := range []struct {
		url, fails string
	}{
		{ts.URL, ""},
		{ts.URL + "/", ""},
		{ts.URL + "/v0.1", ""},
		{ts.URL + "/v0.1/", ""},
		{ts.URL + "/v0", ""},
		{ts.URL + "/v0.1/servers", ""},
		{ts.URL + "/api", "the gateway asks " + ts.URL + "/api/v0.1/servers: is url the MCP Registry's base URL"},
	} {
		m, err := NewMCPRegistry("mcp", c.url, RemoteOptions{HTTP: &http.Client{}})
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		p, err := m.Search(context.Background(), Query{Text: "weather"})
		switch {
		case c.fails == "" && (err != nil || len(p.Results) == 0):
			t.Errorf("%s: %v, %d results", c.url, err, len(p.Results))
		case c.fails != "" && (err == nil || !strings.Contains(err.Error(), c.fails)):
			t.Errorf("%s: %v; want it to say %q", c.url, err, c.fails)
		}
	}
}

// Requests to a registry name ardgate and its version; they said
// "Go-http-client/1.1".
func TestRegistryUserAgent(t *testing.T) {
	ts, q := versionedFixture(t)
	for _, c := range []struct {
		kind, version, want string
	}{
		{config.KindMCPRegistry, "1.2.3", "ardgate/1.2.3"},
		{config.KindMCPRegistry, "", "ardgate"},
		{config.KindARD, "v0.9.0-dev", "ardgate/v0.9.0-dev"},
	} {
		q.mu.Lock()
		q.seen = nil
		q.mu.Unlock()
		r, err := Open(config.Registry{ID: "r", Kind: c.kind, URL: ts.URL}, OpenOptions{HTTP: &http.Client{}, Version: c.version})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = r.Search(context.Background(), Query{Text: "weather"}) // the fixture has no ARD routes: asked all the same
		q.mu.Lock()
		for _, req := range q.seen {
			if got := req.Header.Get("User-Agent"); got != c.want {
				t.Errorf("%s, version %q: %s sent User-Agent %q; want %q", c.kind, c.version, req.URL, got, c.want)
			}
		}
		if len(q.seen) == 0 {
			t.Errorf("%s: no request", c.kind)
		}
		q.mu.Unlock()
	}
}

// The registry's 422 problem document says which parameter it refused
// and why; its detail alone said "validation failed".
func TestMCPRegistryProblemDocument(t *testing.T) {
	ts, _ := versionedFixture(t)
	m, _ := NewMCPRegistry("mcp", ts.URL, RemoteOptions{HTTP: &http.Client{}})
	for _, c := range []struct {
		params url.Values
		says   string
	}{
		{url.Values{"limit": {"101"}}, "HTTP 422: validation failed: query.limit expected number <= 100"},
		{url.Values{"search": {"éé"}}, "HTTP 422: validation failed: query.search expected length >= 3"},
	} {
		_, err := m.do(context.Background(), http.MethodGet, "/v0.1/servers", c.params, nil)
		if err == nil || !strings.Contains(err.Error(), c.says) || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%v: %v; want it to say %q", c.params, err, c.says)
		}
	}
}
