package ardserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func writeCatalog(t *testing.T, path string, extra ...string) {
	t.Helper()
	entries := append([]string{
		`{"identifier":"urn:air:acme.com:registry:public","displayName":"Public registry","type":"application/ai-registry+json","url":"https://registry.acme.com/search"}`,
		`{"identifier":"urn:air:acme.com:mcp:weather","displayName":"Weather","type":"application/mcp-server-card+json","url":"https://acme.com/w.json","tags":["weather","kubernetes-ops"],"updatedAt":"2026-01-02T00:00:00Z"}`,
	}, extra...)
	if err := os.WriteFile(path, []byte(`{"specVersion":"1.0","entries":[`+strings.Join(entries, ",")+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

// serve runs the registry as a real HTTP server over the fixture catalog
// (which nests another) and a temporary one.
func serve(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "extra.json")
	writeCatalog(t, tmp)
	s := &Server{Catalogs: []string{"../../testdata/catalogs/fixture.json", tmp}}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts, tmp
}

func do(t *testing.T, method, u, body string, header ...string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return resp.StatusCode, resp.Header, m
}

func ids(m map[string]any, key string) []string {
	var out []string
	list, _ := m[key].([]any)
	for _, r := range list {
		out = append(out, r.(map[string]any)["identifier"].(string))
	}
	return out
}

func TestSearch(t *testing.T) {
	ts, _ := serve(t)
	code, _, m := do(t, "POST", ts.URL+"/search", `{"query":{"text":"fixture echo"},"pageSize":3}`)
	if code != 200 || ids(m, "results")[0] != "urn:air:ardgate.test:mcp:fixture" {
		t.Fatalf("%d %v", code, m)
	}
	r0 := m["results"].([]any)[0].(map[string]any)
	if _, isInt := r0["score"].(float64); !isInt || r0["source"] != ts.URL+"/" {
		t.Fatalf("result fields: %v", r0)
	}
	if refs := ids(m, "referrals"); len(refs) != 1 || refs[0] != "urn:air:acme.com:registry:public" {
		t.Fatalf("referrals %v", refs)
	}
	if slices := ids(m, "results"); strings.Contains(strings.Join(slices, ","), "registry:public") {
		t.Fatal("a registry entry came back as a result")
	}
	_, _, none := do(t, "POST", ts.URL+"/search", `{"query":{"text":"weather"},"federation":"none"}`)
	if _, has := none["referrals"]; has {
		t.Fatal("federation none still lists referrals")
	}

	// Filters: a string or an array; OR within a key, AND across keys;
	// the derived publisher; nested catalogs are searched too.
	_, _, m = do(t, "POST", ts.URL+"/search", `{"query":{"text":"weather","filter":{"publisher":"acme.com","tags":["kubernetes-ops","nope"]}}}`)
	if got := ids(m, "results"); len(got) != 1 || got[0] != "urn:air:acme.com:mcp:weather" {
		t.Fatalf("filtered %v", got)
	}
	_, _, m = do(t, "POST", ts.URL+"/search", `{"query":{"text":"weather","filter":{"publisher":"ardgate.test"}}}`)
	if got := ids(m, "results"); len(got) != 1 || got[0] != "urn:air:ardgate.test:mcp:weather" {
		t.Fatalf("nested catalog entry: %v", got)
	}

	// Paging walks every match once.
	seen := map[string]bool{}
	token := ""
	for pages := 0; ; pages++ {
		body := `{"query":{"text":"fixture test server agent"},"pageSize":2`
		if token != "" {
			body += `,"pageToken":"` + token + `"`
		}
		_, _, m = do(t, "POST", ts.URL+"/search", body+`}`)
		for _, id := range ids(m, "results") {
			if seen[id] {
				t.Fatalf("%s on two pages", id)
			}
			seen[id] = true
		}
		token, _ = m["pageToken"].(string)
		if token == "" {
			break
		}
		if pages > 20 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) < 4 {
		t.Fatalf("paging saw only %d entries", len(seen))
	}
}

func TestExploreListLookup(t *testing.T) {
	ts, _ := serve(t)
	_, _, m := do(t, "POST", ts.URL+"/explore", `{"resultType":{"facets":[{"field":"type","limit":1},{"field":"publisher"}]}}`)
	facets := m["facets"].(map[string]any)
	typ := facets["type"].(map[string]any)
	if b := typ["buckets"].([]any); len(b) != 1 || b[0].(map[string]any)["value"] != "application/mcp-server-card+json" || typ["otherCount"].(float64) < 1 {
		t.Fatalf("type facet %v", typ)
	}
	if len(facets["publisher"].(map[string]any)["buckets"].([]any)) != 2 {
		t.Fatalf("publisher facet %v", facets["publisher"])
	}

	_, _, m = do(t, "GET", ts.URL+"/agents?pageSize=3&orderBy=identifier%20DESC", "")
	items := ids(m, "items")
	if len(items) != 3 || m["total"].(float64) < 8 || m["pageToken"] == nil || items[0] < items[1] {
		t.Fatalf("list %v", m)
	}
	_, _, m = do(t, "GET", ts.URL+"/agents?filter="+url.QueryEscape("type = 'application/a2a-agent-card+json' AND publisher = 'ardgate.test'"), "")
	if got := ids(m, "items"); len(got) != 2 {
		t.Fatalf("filtered list %v", got)
	}

	code, h, m := do(t, "GET", ts.URL+"/agents/"+url.PathEscape("urn:ai:ARDGATE.test:mcp:fixture"), "")
	if code != 200 || m["identifier"] != "urn:air:ardgate.test:mcp:fixture" || h.Get("ETag") == "" {
		t.Fatalf("lookup %d %v %v", code, h, m)
	}
	if code, _, _ = do(t, "GET", ts.URL+"/agents/urn:air:ardgate.test:mcp:fixture", "", "If-None-Match", h.Get("ETag")); code != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", code)
	}
}

func TestErrors(t *testing.T) {
	ts, _ := serve(t)
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"bad JSON", "POST", "/search", `{"query":`, 400, "INVALID_ARGUMENT"},
		{"unknown field", "POST", "/search", `{"query":{"text":"x"},"colour":1}`, 400, "INVALID_ARGUMENT"},
		{"missing text", "POST", "/search", `{"query":{"filter":{}}}`, 400, "INVALID_ARGUMENT"},
		{"page too big", "POST", "/search", `{"query":{"text":"x"},"pageSize":101}`, 400, "INVALID_ARGUMENT"},
		{"bad token", "POST", "/search", `{"query":{"text":"x"},"pageToken":"garbage"}`, 400, "INVALID_ARGUMENT"},
		{"bad filter value", "POST", "/search", `{"query":{"text":"x","filter":{"tags":3}}}`, 400, "INVALID_ARGUMENT"},
		{"bad federation", "POST", "/search", `{"query":{"text":"x"},"federation":"everywhere"}`, 400, "INVALID_ARGUMENT"},
		{"no facets", "POST", "/explore", `{"resultType":{"facets":[]}}`, 400, "INVALID_ARGUMENT"},
		{"bad list filter", "GET", "/agents?filter=" + url.QueryEscape("type != 'x'"), "", 400, "INVALID_ARGUMENT"},
		{"bad orderBy", "GET", "/agents?orderBy=colour", "", 400, "INVALID_ARGUMENT"},
		{"bad list token", "GET", "/agents?pageToken=zzz", "", 400, "INVALID_ARGUMENT"},
		{"unknown URN", "GET", "/agents/urn:air:nobody.example:mcp:ghost", "", 404, "NOT_FOUND"},
		{"malformed URN", "GET", "/agents/not-a-urn", "", 400, "INVALID_ARGUMENT"},
		{"wrong method", "GET", "/search", "", 405, "METHOD_NOT_ALLOWED"},
		{"too large", "POST", "/search", `{"query":{"text":"` + strings.Repeat("x", 2<<20) + `"}}`, 413, "PAYLOAD_TOO_LARGE"},
		{"unknown route", "GET", "/nope", "", 404, "NOT_FOUND"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, h, m := do(t, c.method, ts.URL+c.path, c.body)
			if code != c.status || m["errorCode"] != c.code || m["message"] == "" {
				t.Fatalf("%d %v, want %d %s", code, m, c.status, c.code)
			}
			if code == 405 && h.Get("Allow") == "" {
				t.Fatal("405 without Allow")
			}
		})
	}
}

// A changed catalog is picked up while searches keep being served.
func TestReloadWithoutDroppingRequests(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "c.json")
	writeCatalog(t, tmp)
	s := &Server{Catalogs: []string{tmp}, PollInterval: 20 * time.Millisecond}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.Watch(ctx) })
	var failed atomic.Int64
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Post(ts.URL+"/search", "application/json", strings.NewReader(`{"query":{"text":"weather"}}`))
				if err != nil || resp.StatusCode != 200 {
					failed.Add(1)
				}
				if resp != nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	writeCatalog(t, tmp, `{"identifier":"urn:air:acme.com:mcp:tides","displayName":"Tide tables","type":"application/mcp-server-card+json","url":"https://acme.com/t.json"}`)
	found := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !found; time.Sleep(20 * time.Millisecond) {
		_, _, m := do(t, "POST", ts.URL+"/search", `{"query":{"text":"tide tables"}}`)
		found = len(ids(m, "results")) == 1
	}
	// A broken file keeps the last good index serving.
	_ = os.WriteFile(tmp, []byte(`{not json`), 0o600)
	time.Sleep(100 * time.Millisecond)
	_, _, m := do(t, "POST", ts.URL+"/search", `{"query":{"text":"tide tables"}}`)
	close(stop)
	cancel()
	wg.Wait()
	http.DefaultClient.CloseIdleConnections()
	if !found {
		t.Fatal("the new entry was never served")
	}
	if len(ids(m, "results")) != 1 {
		t.Fatal("a broken catalog replaced the good index")
	}
	if failed.Load() != 0 {
		t.Fatalf("%d requests failed during reloads", failed.Load())
	}
}
