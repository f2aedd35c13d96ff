package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ardgate/ardgate/testdata/registryfixture"
)

// quirkServer answers /search with body for every request and counts them.
func quirkServer(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		handler(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &n
}

func newTestARD(t *testing.T, url string) *ARD {
	t.Helper()
	a, err := NewARD("reg", url, "", RemoteOptions{HTTP: &http.Client{}, TTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func jsonReply(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

const oneEntry = `{"identifier":"urn:air:acme.com:mcp:weather","displayName":"Weather","type":"application/mcp-server-card+json","url":"https://acme.com/w.json"`

func TestARDQuirks(t *testing.T) {
	ctx := context.Background()
	t.Run("score as int, float or string", func(t *testing.T) {
		ts, _ := quirkServer(t, jsonReply(200, `{"results":[`+oneEntry+`,"score":95,"source":"x"},`+
			strings.Replace(oneEntry, "weather", "wind", 1)+`,"score":87.6},`+
			strings.Replace(oneEntry, "weather", "rain", 1)+`,"score":"70"}]}`))
		p, err := newTestARD(t, ts.URL).Search(ctx, Query{Text: "w"})
		if err != nil || len(p.Results) != 3 {
			t.Fatalf("%v %+v", err, p)
		}
		if p.Results[0].Score != 95 || p.Results[1].Score != 88 || p.Results[2].Score != 70 {
			t.Fatalf("scores %d %d %d", p.Results[0].Score, p.Results[1].Score, p.Results[2].Score)
		}
		if p.Results[1].Source != ts.URL {
			t.Fatalf("missing source not filled in: %q", p.Results[1].Source)
		}
	})
	t.Run("pageToken null and optional fields missing", func(t *testing.T) {
		ts, _ := quirkServer(t, jsonReply(200, `{"results":[`+oneEntry+`}],"pageToken":null}`))
		p, err := newTestARD(t, ts.URL).Search(ctx, Query{Text: "w"})
		if err != nil || len(p.Results) != 1 || p.PageToken != "" || p.Results[0].Score != 0 {
			t.Fatalf("%v %+v", err, p)
		}
	})
	t.Run("hostile results dropped, the rest kept", func(t *testing.T) {
		ts, _ := quirkServer(t, jsonReply(200, `{"results":[{"identifier":"javascript:alert(1)","displayName":"x","type":"t","url":"u"},
			{"identifier":"urn:air:acme.com:mcp:x","type":42},`+oneEntry+`,"score":1}]}`))
		p, err := newTestARD(t, ts.URL).Search(ctx, Query{Text: "w"})
		if err != nil || len(p.Results) != 1 || p.Results[0].Identifier != "urn:air:acme.com:mcp:weather" {
			t.Fatalf("%v %+v", err, p)
		}
	})
	t.Run("ARD error body", func(t *testing.T) {
		ts, _ := quirkServer(t, jsonReply(400, `{"errorCode":"INVALID_ARGUMENT","message":"filter key bogus"}`))
		_, err := newTestARD(t, ts.URL).Search(ctx, Query{Text: "w"})
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "filter key bogus") || !strings.Contains(err.Error(), "INVALID_ARGUMENT") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("FastAPI detail string", func(t *testing.T) {
		ts, _ := quirkServer(t, jsonReply(404, `{"detail":"Not Found"}`))
		_, err := newTestARD(t, ts.URL).Search(ctx, Query{Text: "w"})
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "Not Found") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("FastAPI 422 detail list", func(t *testing.T) {
		ts, _ := quirkServer(t, jsonReply(422, `{"detail":[{"loc":["body","query","text"],"msg":"field required","type":"missing"}]}`))
		_, err := newTestARD(t, ts.URL).Search(ctx, Query{Text: "w"})
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "field required") || !strings.Contains(err.Error(), "text") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("429 honours Retry-After, then succeeds", func(t *testing.T) {
		var calls atomic.Int64
		ts, _ := quirkServer(t, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				jsonReply(429, `{"errorCode":"RESOURCE_EXHAUSTED","message":"slow down"}`, "Retry-After", "1")(w, r)
				return
			}
			jsonReply(200, `{"results":[]}`)(w, r)
		})
		start := time.Now()
		if _, err := newTestARD(t, ts.URL).Search(ctx, Query{Text: "w"}); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 2 || time.Since(start) < 900*time.Millisecond {
			t.Fatalf("calls %d after %s; want 2 after Retry-After's second", calls.Load(), time.Since(start))
		}
	})
	t.Run("5xx retried, then reported", func(t *testing.T) {
		ts, n := quirkServer(t, jsonReply(503, `upstream unavailable`))
		_, err := newTestARD(t, ts.URL).Search(ctx, Query{Text: "w"})
		var se *StatusError
		if !errors.As(err, &se) || se.Status != 503 || n.Load() != 3 || !strings.Contains(err.Error(), "upstream unavailable") {
			t.Fatalf("%v after %d calls", err, n.Load())
		}
	})
	t.Run("4xx not retried", func(t *testing.T) {
		ts, n := quirkServer(t, jsonReply(401, `{"errorCode":"UNAUTHENTICATED","message":"token"}`))
		_, _ = newTestARD(t, ts.URL).Search(ctx, Query{Text: "w"})
		if n.Load() != 1 {
			t.Fatalf("401 sent %d times", n.Load())
		}
	})
	t.Run("over-size response refused", func(t *testing.T) {
		ts, _ := quirkServer(t, func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write(bytes.Repeat([]byte(" "), maxRegistryResponse+10))
		})
		_, err := newTestARD(t, ts.URL).Search(ctx, Query{Text: "w"})
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("%v", err)
		}
	})
}

// Only the fields the API defines are sent; glob filters stay here, and
// a search they filter asks for pages of MaxPageSize, with its own page
// token. federation is referrals unless configured: the gateway follows
// referrals itself.
func TestARDSendsOnlySpecifiedFields(t *testing.T) {
	type spec struct {
		Query struct {
			Text   string              `json:"text"`
			Filter map[string][]string `json:"filter"`
		} `json:"query"`
		Federation string `json:"federation"`
		PageSize   int    `json:"pageSize"`
		PageToken  string `json:"pageToken"`
	}
	var got spec
	ts, _ := quirkServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = spec{}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil || r.URL.Path != "/api/v1/search" || r.Method != http.MethodPost {
			jsonReply(400, `{"errorCode":"INVALID_ARGUMENT","message":"bad request"}`)(w, r)
			return
		}
		jsonReply(200, `{"results":[`+oneEntry+`,"tags":["kubernetes-ops"],"score":9},`+
			strings.Replace(oneEntry, "weather", "other", 1)+`,"tags":["x"],"score":8}],"pageToken":"p2"}`)(w, r)
	})
	a, _ := NewARD("reg", ts.URL+"/api/v1/", "", RemoteOptions{HTTP: &http.Client{}}) // referrals, by default
	p, err := a.Search(context.Background(), Query{Text: "kube", Filter: map[string][]string{"type": {"application/mcp-server-card+json"}}, PageSize: 5, PageToken: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Query.Text != "kube" || got.Federation != "referrals" || got.PageSize != 5 || got.PageToken != "p1" || len(got.Query.Filter["type"]) != 1 {
		t.Fatalf("sent %+v", got)
	}
	if len(p.Results) != 2 || p.PageToken != "p2" {
		t.Fatalf("page %+v", p)
	}
	q := Query{Text: "kube", Filter: map[string][]string{"type": {"application/mcp-server-card+json"}, "tags": {"kubernetes-*"}}, PageSize: 1}
	p, err = a.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if _, sent := got.Query.Filter["tags"]; sent || len(got.Query.Filter["type"]) != 1 || got.PageSize != MaxPageSize || got.PageToken != "" {
		t.Fatalf("glob filter sent to the registry, or its page size: %+v", got)
	}
	if len(p.Results) != 1 || p.Results[0].Identifier != "urn:air:acme.com:mcp:weather" || p.PageToken == "" {
		t.Fatalf("glob not applied here: %+v", p)
	}
	q.PageToken = p.PageToken
	if _, err = a.Search(context.Background(), q); err != nil || got.PageToken != "p2" {
		t.Fatalf("the next page: %v, sent %+v", err, got)
	}
}

// Parallel identical searches make one request; a repeat within the TTL
// makes none.
func TestARDSingleflightAndCache(t *testing.T) {
	release := make(chan struct{})
	ts, n := quirkServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		jsonReply(200, `{"results":[`+oneEntry+`,"score":5}]}`)(w, r)
	})
	end := sync.OnceFunc(func() { close(release) })
	t.Cleanup(end) // before the server closes: a failed wait leaves the request held
	a, _ := NewARD("reg", ts.URL, "", RemoteOptions{HTTP: &http.Client{}, TTL: time.Minute})
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := a.Search(context.Background(), Query{Text: "weather"}); err != nil {
				t.Error(err)
			}
		})
	}
	waitInFlight(t, 10)
	end()
	wg.Wait()
	if _, err := a.Search(context.Background(), Query{Text: "weather"}); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 1 {
		t.Fatalf("%d requests for 11 identical searches", n.Load())
	}
	if _, err := a.Search(context.Background(), Query{Text: "wind"}); err != nil || n.Load() != 2 {
		t.Fatalf("a different search was not sent: %v, %d", err, n.Load())
	}
}

// waitInFlight waits until n goroutines are in a registry's shared round
// trip, read from their stacks: nothing else says that a caller has
// joined the one in flight.
func waitInFlight(t *testing.T, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		for buf = buf[:cap(buf)]; ; buf = make([]byte, 2*len(buf)) {
			if k := runtime.Stack(buf, true); k < len(buf) {
				buf = buf[:k]
				break
			}
		}
		got := bytes.Count(buf, []byte("singleflight.(*Group).Do("))
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d searches joined the round trip in flight within 10s", got, n)
		}
	}
}

func TestARDLookup(t *testing.T) {
	var lookupStatus atomic.Int64
	lookupStatus.Store(200)
	ts, _ := quirkServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/search":
			jsonReply(200, `{"results":[`+strings.Replace(oneEntry, "weather", "seen", 1)+`,"score":5}]}`)(w, r)
		case r.URL.EscapedPath() == "/agents/urn:air:acme.com:mcp:weather" && lookupStatus.Load() == 200:
			jsonReply(200, oneEntry+`}`)(w, r)
		default:
			jsonReply(int(lookupStatus.Load()), `{"errorCode":"NOT_FOUND","message":"no"}`)(w, r)
		}
	})
	a := newTestARD(t, ts.URL)
	ctx := context.Background()
	if e, err := a.Lookup(ctx, "urn:air:acme.com:mcp:weather"); err != nil || e.DisplayName != "Weather" {
		t.Fatalf("lookup: %v %+v", err, e)
	}
	for _, status := range []int64{404, 501} {
		lookupStatus.Store(status)
		a := newTestARD(t, ts.URL) // nothing seen yet
		if _, err := a.Lookup(ctx, "urn:air:acme.com:mcp:seen"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%d before search: %v", status, err)
		}
		if _, err := a.Search(ctx, Query{Text: fmt.Sprint("seen", status)}); err != nil {
			t.Fatal(err)
		}
		if e, err := a.Lookup(ctx, "urn:ai:ACME.com:mcp:seen"); err != nil || e.Identifier != "urn:air:acme.com:mcp:seen" {
			t.Fatalf("%d after search: falls back to seen entries: %v", status, err)
		}
	}
	// A registry gone since its search: an entry it listed is still had
	// (it was "registry r2 did not answer" while the model had just seen
	// it); one it never listed is its failure, not an unknown URN.
	lookupStatus.Store(200)
	a = newTestARD(t, ts.URL)
	if _, err := a.Search(ctx, Query{Text: "seen"}); err != nil {
		t.Fatal(err)
	}
	ts.Close()
	if e, err := a.Lookup(ctx, "urn:air:acme.com:mcp:seen"); err != nil || e.Identifier != "urn:air:acme.com:mcp:seen" {
		t.Fatalf("a registry gone: the entry it listed: %v", err)
	}
	if _, err := a.Lookup(ctx, "urn:air:acme.com:mcp:weather"); err == nil || errors.Is(err, ErrNotFound) || !errors.Is(err, ErrUnreachable) {
		t.Fatalf("a registry gone: an entry it never listed: %v", err)
	}
}

// The bearer token goes to the registry's origin and nowhere else, not
// even when the registry redirects.
func TestARDTokenStaysHome(t *testing.T) {
	var leaked atomic.Value
	leaked.Store("")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"))
		jsonReply(200, `{"results":[]}`)(w, r)
	}))
	defer other.Close()
	var sawToken atomic.Value
	home, _ := quirkServer(t, func(w http.ResponseWriter, r *http.Request) {
		sawToken.Store(r.Header.Get("Authorization"))
		http.Redirect(w, r, other.URL+"/search", http.StatusTemporaryRedirect)
	})
	a, _ := NewARD("reg", home.URL, "", RemoteOptions{HTTP: &http.Client{}, Token: "s3cret"})
	if _, err := a.Search(context.Background(), Query{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if sawToken.Load() != "Bearer s3cret" {
		t.Fatalf("registry got %q", sawToken.Load())
	}
	if leaked.Load() != "" {
		t.Fatalf("token leaked to another origin: %q", leaked.Load())
	}
}

// mcpRegistryFixture serves the recorded MCP Registry page.
func mcpRegistryFixture(t *testing.T) *httptest.Server {
	t.Helper()
	h, err := registryfixture.MCPRegistry("../testdata/mcpregistry/servers.json")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

func TestMCPRegistry(t *testing.T) {
	ts := mcpRegistryFixture(t)
	m, err := NewMCPRegistry("mcp", ts.URL, RemoteOptions{HTTP: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Three words' name searches answered three times the page's size;
	// cut to it. Eight servers have "cloud" in their names, 198 "server".
	p, err := m.Search(ctx, Query{Text: "cloud server", PageSize: 3})
	if err != nil || len(p.Results) != 3 {
		t.Fatalf("search: %v %+v", err, p)
	}
	for _, r := range p.Results {
		if _, err := ParseURN(r.Identifier); err != nil || r.Type != "application/mcp-server-card+json" || len(r.Data) == 0 {
			t.Fatalf("bad mapped entry %+v", r)
		}
	}
	if p.PageToken == "" {
		t.Fatal("no cursor for a search with more results")
	}
	// Pages of 3 list what one page of 100 lists, in its order, and go
	// on past it: none shown twice, none left out.
	all, err := m.Search(ctx, Query{Text: "cloud server", PageSize: 100})
	if err != nil || len(all.Results) < 10 {
		t.Fatalf("one page: %v %d results", err, len(all.Results))
	}
	var paged []string
	for tok := ""; ; {
		p, err := m.Search(ctx, Query{Text: "cloud server", PageSize: 3, PageToken: tok})
		if err != nil {
			t.Fatalf("page after %d: %v", len(paged), err)
		}
		for _, r := range p.Results {
			paged = append(paged, r.Identifier)
		}
		if tok = p.PageToken; tok == "" {
			break
		}
	}
	var whole []string
	for _, r := range all.Results {
		whole = append(whole, r.Identifier)
	}
	if len(paged) <= len(whole) || !slices.Equal(paged[:len(whole)], whole) || len(slices.Compact(slices.Sorted(slices.Values(paged)))) != len(paged) {
		t.Errorf("pages of 3 listed\n%v\none page of 100\n%v", paged, whole)
	}
	if _, err := m.Search(ctx, Query{Text: "weather", PageSize: 3, PageToken: p.PageToken}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a page token of another query: %v; want it refused", err)
	}
	// "github" is in the namespace of every io.github.* server, which the
	// registry's name search matches: the servers about GitHub came pages
	// after the first hundred, and are found.
	p, err = m.Search(ctx, Query{Text: "github issues", PageSize: 5})
	if err != nil || len(p.Results) < 2 || !strings.HasSuffix(p.Results[0].Identifier, ":github-enterprise-mcp") || !strings.HasSuffix(p.Results[1].Identifier, ":github-actions-mcp-server") {
		t.Fatalf("github issues: %v %+v", err, p.Results)
	}
	// A word inside a word of a name ("text" in context, "time" in
	// greptimedb) keeps no entry the ranking does not match.
	for _, text := range []string{"translate text", "time zone conversion"} {
		p, err := m.Search(ctx, Query{Text: text, PageSize: 20})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Results {
			if r.Score == 0 {
				t.Errorf("%q listed %s, which only holds a word inside a word of its name", text, r.Identifier)
			}
		}
	}
	e, err := m.Lookup(ctx, "urn:air:21st-dev.github.io:mcp:magic-mcp")
	if err != nil || e.DisplayName == "" {
		t.Fatalf("lookup: %v %+v", err, e)
	}
	if _, err := m.Lookup(ctx, "urn:air:nobody.example:mcp:ghost"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown lookup: %v", err)
	}
}

func TestServerURNMapping(t *testing.T) {
	cases := map[string]string{
		"io.github.foo/bar":         "urn:air:foo.github.io:mcp:bar",
		"io.github.21st-dev/magic":  "urn:air:21st-dev.github.io:mcp:magic",
		"com.example/weather@v2":    "urn:air:example.com:mcp:weather-v2",
		"ai.smithery/some.server_x": "urn:air:smithery.ai:mcp:some.server_x",
	}
	for name, want := range cases {
		got, err := ServerURN(name)
		if err != nil || got != want {
			t.Errorf("ServerURN(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, bad := range []string{"noslash", "/x", "a/", "..x/y"} {
		if _, err := ServerURN(bad); err == nil {
			t.Errorf("ServerURN(%q) accepted", bad)
		}
	}
	if n, err := ServerName("urn:air:foo.github.io:mcp:bar"); err != nil || n != "io.github.foo/bar" {
		t.Errorf("ServerName = %q %v", n, err)
	}
}

// gateway_health tells what a registry's answers were: one that answered
// 401, 403 or what could not be read was listed well, though every search
// failed. A registry asking to be asked again later than a search waits
// says so at once; it was waited out and read "did not answer".
func TestRegistryHealthTellsFailures(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		reply   http.HandlerFunc
		healthy bool
		says    string
	}{
		{"an answer", jsonReply(200, `{"results":[]}`), true, ""},
		{"a query refused", jsonReply(400, `{"errorCode":"bad","message":"no"}`), true, "no"},
		{"401", jsonReply(401, `{"errorCode":"unauthorized","message":"a token is needed"}`), false, "a token is needed"},
		{"403", jsonReply(403, `{"errorCode":"forbidden","message":"not you"}`), false, "not you"},
		{"HTML", jsonReply(200, `<html>hello</html>`), false, "malformed search response"},
		{"empty", jsonReply(200, ``), false, "malformed search response"},
		{"503, again in two minutes", jsonReply(503, `{"errorCode":"down","message":"down for maintenance"}`, "Retry-After", "120"), false, "it asks to be asked again in 2m0s"},
	} {
		ts, _ := quirkServer(t, c.reply)
		a := newTestARD(t, ts.URL)
		// Before its first search, it is said not to be asked yet, not
		// to have failed.
		if b, err := json.Marshal(a.Health()[0]); err != nil || !strings.Contains(string(b), `"not_checked_yet":true`) || strings.Contains(string(b), `"ok"`) || strings.Contains(string(b), "0001-01-01") {
			t.Errorf("%s: health before a search: %s %v", c.name, b, err)
		}
		start := time.Now()
		_, err := a.Search(ctx, Query{Text: "weather"})
		if c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)) || c.says == "" && err != nil {
			t.Errorf("%s: search: %v; want %q", c.name, err, c.says)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s: the search took %v", c.name, took)
		}
		if h := a.Health()[0]; h.OK != c.healthy {
			t.Errorf("%s: health %+v; want ok %v", c.name, h, c.healthy)
		}
		if b, _ := json.Marshal(a.Health()[0]); !strings.Contains(string(b), fmt.Sprintf(`"ok":%v`, c.healthy)) || !strings.Contains(string(b), `"checked_at":"`) || strings.Contains(string(b), "not_checked_yet") {
			t.Errorf("%s: health after a search: %s", c.name, b)
		}
	}
}

// An MCP Registry's lists are read a window at a time, and pages go on
// from window to window: a listing of 1,200 servers stopped at the 500
// of its first window, its last page saying nothing more was there; so
// did a search whose word every name holds. A page of a list that fails
// (past the client's retries) is asked for again by the next page, not
// taken for the list's end, which ended the listing with no word.
func TestMCPRegistryPagesPastAWindow(t *testing.T) {
	const servers = 1200
	var mu sync.Mutex
	failures := map[string]int{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		fail := failures[q.Get("cursor")] > 0
		failures[q.Get("cursor")]--
		mu.Unlock()
		if fail {
			http.Error(w, `{"detail":"busy"}`, http.StatusInternalServerError)
			return
		}
		var names []string
		for i := range servers {
			if n := fmt.Sprintf("io.github.acme/server-%04d", i); strings.Contains(n, q.Get("search")) {
				names = append(names, n)
			}
		}
		from, _ := strconv.Atoi(q.Get("cursor"))
		limit, _ := strconv.Atoi(q.Get("limit"))
		end := min(from+limit, len(names))
		var list []string
		for _, n := range names[from:end] {
			list = append(list, fmt.Sprintf(`{"server":{"name":%q,"description":"a server"}}`, n))
		}
		next := ""
		if end < len(names) {
			next = strconv.Itoa(end)
		}
		fmt.Fprintf(w, `{"servers":[%s],"metadata":{"nextCursor":%q}}`, strings.Join(list, ","), next)
	}))
	defer ts.Close()
	for _, c := range []struct {
		text  string
		fails map[string]int
		size  int
	}{
		{"", nil, 50},
		{"server", nil, 50},
		// A page that runs on into the next window, whose first read fails.
		{"", map[string]int{"500": 2}, 70},
		// A page in a window fails once, healed by the next page's read of
		// the window; the last page of the second window fails for the
		// rest of its window's pages, and the next window's first read.
		{"", map[string]int{"300": 1, "700": 5}, 50},
	} {
		mu.Lock()
		failures = maps.Clone(c.fails)
		if failures == nil {
			failures = map[string]int{}
		}
		mu.Unlock()
		m, _ := NewMCPRegistry("mcp", ts.URL, RemoteOptions{HTTP: &http.Client{}, Retries: -1})
		seen := map[string]bool{}
		pages, failed := 0, 0
		for tok := ""; ; pages++ {
			p, err := m.Search(context.Background(), Query{Text: c.text, PageSize: c.size, PageToken: tok})
			if err != nil {
				if failed++; failed > 3 {
					t.Fatalf("%q, page %d: %v", c.text, pages, err)
				}
				continue // a client asks again
			}
			for _, r := range p.Results {
				if seen[r.Identifier] {
					t.Fatalf("%q: page %d lists %s again", c.text, pages, r.Identifier)
				}
				seen[r.Identifier] = true
			}
			if tok = p.PageToken; tok == "" {
				break
			}
		}
		if len(seen) != servers {
			t.Errorf("%q, failing %v: listed %d of %d servers in %d pages", c.text, c.fails, len(seen), servers, pages)
		}
	}
}
