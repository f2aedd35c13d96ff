package ardserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	fixtureCatalog = "../../testdata/catalogs/fixture.json"
	builtinCatalog = "../builtin/ai-catalog.json"
	mcpType        = "application/mcp-server-card+json"
	a2aType        = "application/a2a-agent-card+json"
)

// Entries of the temporary catalog: one registry (a referral, never a
// result), one searchable entry, and one registry without a URL.
const (
	registryEntry = `{"identifier":"urn:air:acme.example:registry:public","displayName":"Acme public registry","type":"application/ai-registry+json","url":"https://registry.acme.example/","description":"tide registry"}`
	tidesEntry    = `{"identifier":"urn:air:acme.example:mcp:tides","displayName":"Tide tables","type":"application/mcp-server-card+json","url":"https://acme.example/tides.json","tags":["tides","ocean"],"updatedAt":"2030-01-01T00:00:00Z","metadata":{"owner":"harbour"}}`
)

func writeCatalog(t *testing.T, path string, entries ...string) {
	t.Helper()
	replaceFile(t, path, `{"specVersion":"1.0","entries":[`+strings.Join(entries, ",")+`]}`)
}

// replaceFile writes data to a file beside path, then renames it to path,
// so that a polling reader never sees half a file, nor one truncated.
func replaceFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

type fixture struct {
	ts  *httptest.Server
	srv *Server
	tmp string // the temporary catalog's path
}

// serve runs a Server over the fixture catalog (which nests another), the
// builtin catalog and a temporary catalog, behind a real HTTP server.
func serve(t *testing.T) *fixture {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "ai-catalog.json")
	writeCatalog(t, tmp, registryEntry, tidesEntry)
	s := &Server{Catalogs: []string{fixtureCatalog, builtinCatalog, tmp}}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return &fixture{ts: ts, srv: s, tmp: tmp}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixture) do(t *testing.T, method, path, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, data}
}

// decode fails the test unless the response has the status wanted, then
// decodes its JSON body into v.
func (r response) decode(t *testing.T, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

type searchResult struct {
	Identifier  string          `json:"identifier"`
	DisplayName string          `json:"displayName"`
	Type        string          `json:"type"`
	Tags        []string        `json:"tags"`
	Data        json.RawMessage `json:"data"`
	Score       int             `json:"score"`
	Source      string          `json:"source"`
}

type searchPage struct {
	Results   []searchResult `json:"results"`
	Referrals []referral     `json:"referrals"`
	PageToken *string        `json:"pageToken"`
}

func (f *fixture) search(t *testing.T, body string) searchPage {
	t.Helper()
	var p searchPage
	f.do(t, http.MethodPost, "/search", body).decode(t, http.StatusOK, &p)
	return p
}

func ids[T interface{ id() string }](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.id()
	}
	return out
}

func (r searchResult) id() string { return r.Identifier }
func (r referral) id() string     { return r.Identifier }
func (e listItem) id() string     { return e.Identifier }

func TestSearchRanksAndFillsResultFields(t *testing.T) {
	f := serve(t)
	p := f.search(t, `{"query":{"text":"fixture echo"}}`)
	if len(p.Results) == 0 || p.Results[0].Identifier != "urn:air:ardgate.test:mcp:fixture" {
		t.Fatalf("first result %v, want urn:air:ardgate.test:mcp:fixture", ids(p.Results))
	}
	for i, r := range p.Results {
		if r.Score < 1 || r.Score > 100 {
			t.Errorf("%s: score %d outside 1..100", r.Identifier, r.Score)
		}
		if i > 0 && r.Score > p.Results[i-1].Score {
			t.Errorf("results not best first: %d after %d", r.Score, p.Results[i-1].Score)
		}
		if r.Source != f.ts.URL+"/" {
			t.Errorf("source %q, want %q", r.Source, f.ts.URL+"/")
		}
	}
	// A result is a catalog entry plus score and source, flat.
	first := p.Results[0]
	if first.DisplayName == "" || first.Type != mcpType || len(first.Data) == 0 || len(first.Tags) == 0 {
		t.Fatalf("result lacks entry fields: %+v", first)
	}
	var raw []map[string]any
	if err := json.Unmarshal(f.do(t, http.MethodPost, "/search", `{"query":{"text":"fixture echo"}}`).body, &struct {
		Results *[]map[string]any `json:"results"`
	}{&raw}); err != nil {
		t.Fatal(err)
	}
	if _, nested := raw[0]["Entry"]; nested || raw[0]["identifier"] == nil {
		t.Fatalf("result is not flat: %v", raw[0])
	}

	// An explicit Source wins over the request's base URL.
	f.srv.Source = "https://registry.example/api/"
	if got := f.search(t, `{"query":{"text":"echo"}}`).Results[0].Source; got != "https://registry.example/api/" {
		t.Fatalf("source %q with Server.Source set", got)
	}
}

func TestSearchFilters(t *testing.T) {
	f := serve(t)
	cases := []struct {
		name, filter string
		want         func(searchResult) bool
		atLeast      int
	}{
		{"type as string", `{"type":"application/a2a-agent-card+json"}`, func(r searchResult) bool { return r.Type == a2aType }, 2},
		{"type as array", `{"type":["application/a2a-agent-card+json"]}`, func(r searchResult) bool { return r.Type == a2aType }, 2},
		{"tags OR within a key", `{"tags":["weather","calendar"]}`, func(r searchResult) bool {
			return slices.Contains(r.Tags, "weather") || slices.Contains(r.Tags, "calendar")
		}, 2},
		{"publisher", `{"publisher":"modelcontextprotocol.io"}`, func(r searchResult) bool {
			return strings.HasPrefix(r.Identifier, "urn:air:modelcontextprotocol.io:")
		}, 4},
		{"AND across keys", `{"publisher":"ardgate.test","tags":"remote"}`, func(r searchResult) bool {
			return strings.HasPrefix(r.Identifier, "urn:air:ardgate.test:") && slices.Contains(r.Tags, "remote")
		}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// "test server mcp agent" matches widely, so the filter decides.
			p := f.search(t, `{"query":{"text":"test server mcp agent echo weather calendar","filter":`+c.filter+`},"pageSize":100}`)
			if len(p.Results) < c.atLeast {
				t.Fatalf("%d results, want at least %d: %v", len(p.Results), c.atLeast, ids(p.Results))
			}
			for _, r := range p.Results {
				if !c.want(r) {
					t.Errorf("%s does not satisfy the filter", r.Identifier)
				}
			}
		})
	}
	// A filter that excludes everything is an empty page, not an error.
	if p := f.search(t, `{"query":{"text":"echo","filter":{"publisher":"nobody.example"}}}`); len(p.Results) != 0 || p.Results == nil {
		t.Fatalf("want results: [], got %v", p.Results)
	}
}

func TestSearchPaging(t *testing.T) {
	f := serve(t)
	query := `"query":{"text":"test server tools agent"}`
	all := f.search(t, `{`+query+`,"pageSize":100}`)
	if len(all.Results) < 5 || all.PageToken != nil {
		t.Fatalf("want one full page of 5+ results, got %d (token %v)", len(all.Results), all.PageToken)
	}
	var walked []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > len(all.Results) {
			t.Fatal("paging does not end")
		}
		body := `{` + query + `,"pageSize":2`
		if token != "" {
			body += `,"pageToken":"` + token + `"`
		}
		p := f.search(t, body+`}`)
		if len(p.Results) > 2 {
			t.Fatalf("page of %d with pageSize 2", len(p.Results))
		}
		walked = append(walked, ids(p.Results)...)
		if p.PageToken == nil {
			break
		}
		token = *p.PageToken
	}
	if !slices.Equal(walked, ids(all.Results)) {
		t.Fatalf("pages walked %v\nwant %v", walked, ids(all.Results))
	}
	// A token belongs to its query.
	first := f.search(t, `{`+query+`,"pageSize":2}`)
	r := f.do(t, http.MethodPost, "/search", `{"query":{"text":"weather"},"pageToken":"`+*first.PageToken+`"}`)
	if r.status != http.StatusBadRequest {
		t.Fatalf("token reused with another query: %d %s", r.status, r.body)
	}
}

func TestSearchReferrals(t *testing.T) {
	f := serve(t)
	want := referral{"urn:air:acme.example:registry:public", "Acme public registry", "application/ai-registry+json", "https://registry.acme.example/"}
	for _, fed := range []string{"", "auto", "referrals"} {
		body := `{"query":{"text":"acme public registry tide"}`
		if fed != "" {
			body += `,"federation":"` + fed + `"`
		}
		p := f.search(t, body+`}`)
		if len(p.Referrals) != 1 || p.Referrals[0] != want {
			t.Errorf("federation %q: referrals %+v, want %+v", fed, p.Referrals, want)
		}
		if slices.Contains(ids(p.Results), want.Identifier) {
			t.Errorf("federation %q: the registry entry came back as a result", fed)
		}
	}
	r := f.do(t, http.MethodPost, "/search", `{"query":{"text":"tide"},"federation":"none"}`)
	var m map[string]json.RawMessage
	r.decode(t, http.StatusOK, &m)
	if _, ok := m["referrals"]; ok {
		t.Fatalf("federation none still lists referrals: %s", r.body)
	}
	if _, ok := m["pageToken"]; ok {
		t.Fatalf("pageToken present on the only page: %s", r.body)
	}
}

type facetResponse struct {
	ResultType string `json:"resultType"`
	Facets     map[string]struct {
		Buckets    []bucket `json:"buckets"`
		OtherCount int      `json:"otherCount"`
	} `json:"facets"`
}

func TestExploreFacets(t *testing.T) {
	f := serve(t)
	var resp facetResponse
	f.do(t, http.MethodPost, "/explore",
		`{"resultType":{"facets":[{"field":"type"},{"field":"publisher","limit":1},{"field":"tags","minCount":3},{"field":"metadata.owner"}]}}`).
		decode(t, http.StatusOK, &resp)
	if resp.ResultType != "facets" || len(resp.Facets) != 4 {
		t.Fatalf("response %+v", resp)
	}
	// 8 fixture entries (2 of them A2A), 6 builtin, 1 temporary; the
	// registry and nested-catalog entries are not entries of the index.
	typ := resp.Facets["type"]
	wantType := []bucket{{mcpType, 13}, {a2aType, 2}}
	if !slices.Equal(typ.Buckets, wantType) || typ.OtherCount != 0 {
		t.Fatalf("type facet %+v, want %+v", typ, wantType)
	}
	// Sorted by count, cut at the limit; the rest is summed into otherCount.
	pub := resp.Facets["publisher"]
	if !slices.Equal(pub.Buckets, []bucket{{"ardgate.test", 8}}) || pub.OtherCount != 7 {
		t.Fatalf("publisher facet %+v", pub)
	}
	for _, b := range resp.Facets["tags"].Buckets {
		if b.Count < 3 {
			t.Fatalf("tags bucket %+v under minCount 3", b)
		}
	}
	if tags := resp.Facets["tags"].Buckets; len(tags) == 0 || tags[0] != (bucket{"test", 9}) {
		t.Fatalf("tags facet %+v, want test×9 first", tags)
	}
	if owner := resp.Facets["metadata.owner"].Buckets; !slices.Equal(owner, []bucket{{"harbour", 1}}) {
		t.Fatalf("metadata.owner facet %+v", owner)
	}

	// Counted over what the query matches.
	resp = facetResponse{}
	f.do(t, http.MethodPost, "/explore",
		`{"query":{"text":"weather","filter":{"publisher":"ardgate.test"}},"resultType":{"facets":[{"field":"type"}]}}`).
		decode(t, http.StatusOK, &resp)
	if got := resp.Facets["type"].Buckets; !slices.Equal(got, []bucket{{mcpType, 1}}) {
		t.Fatalf("type facet for weather@ardgate.test: %+v", got)
	}
}

type listItem struct {
	Identifier  string `json:"identifier"`
	DisplayName string `json:"displayName"`
	Type        string `json:"type"`
	UpdatedAt   string `json:"updatedAt"`
	Score       *int   `json:"score"`
}

type listPage struct {
	Items     []listItem `json:"items"`
	Total     int        `json:"total"`
	PageToken *string    `json:"pageToken"`
}

// listAll walks every page of GET /agents with the given query string.
func (f *fixture) listAll(t *testing.T, params url.Values, pageSize int) ([]listItem, int) {
	t.Helper()
	var out []listItem
	total := -1
	params.Set("pageSize", fmt.Sprint(pageSize))
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("listing does not end")
		}
		var p listPage
		f.do(t, http.MethodGet, "/agents?"+params.Encode(), "").decode(t, http.StatusOK, &p)
		if len(p.Items) > pageSize {
			t.Fatalf("page of %d with pageSize %d", len(p.Items), pageSize)
		}
		if total >= 0 && p.Total != total {
			t.Fatalf("total changed between pages: %d then %d", total, p.Total)
		}
		total = p.Total
		out = append(out, p.Items...)
		if p.PageToken == nil {
			return out, total
		}
		params.Set("pageToken", *p.PageToken)
	}
}

func TestList(t *testing.T) {
	f := serve(t)
	all, total := f.listAll(t, url.Values{}, 4)
	if total != 15 || len(all) != 15 {
		t.Fatalf("listed %d of total %d, want 15", len(all), total)
	}
	seen := map[string]bool{}
	for _, e := range all {
		if seen[e.Identifier] {
			t.Fatalf("%s listed twice", e.Identifier)
		}
		seen[e.Identifier] = true
		if e.Score != nil {
			t.Fatalf("list item carries a score: %+v", e)
		}
	}
	// Index order: fixture catalog first, then nested, builtin, temporary.
	if all[0].Identifier != "urn:air:ardgate.test:mcp:fixture" || all[14].Identifier != "urn:air:acme.example:mcp:tides" {
		t.Fatalf("not in catalog order: first %s, last %s", all[0].Identifier, all[14].Identifier)
	}
	var def listPage
	f.do(t, http.MethodGet, "/agents", "").decode(t, http.StatusOK, &def)
	if len(def.Items) != 15 || def.PageToken != nil {
		t.Fatalf("default page size: %d items, token %v", len(def.Items), def.PageToken)
	}

	orders := []struct {
		orderBy string
		less    func(a, b listItem) bool
	}{
		{"displayName", func(a, b listItem) bool { return a.DisplayName <= b.DisplayName }},
		{"identifier DESC", func(a, b listItem) bool { return a.Identifier >= b.Identifier }},
		{"updatedAt desc", func(a, b listItem) bool { return a.UpdatedAt >= b.UpdatedAt }},
		{"updatedAt ASC", func(a, b listItem) bool { return a.UpdatedAt <= b.UpdatedAt }},
	}
	for _, o := range orders {
		got, _ := f.listAll(t, url.Values{"orderBy": {o.orderBy}}, 3)
		if len(got) != 15 {
			t.Fatalf("orderBy %q listed %d", o.orderBy, len(got))
		}
		for i := 1; i < len(got); i++ {
			if !o.less(got[i-1], got[i]) {
				t.Fatalf("orderBy %q: %+v before %+v", o.orderBy, got[i-1], got[i])
			}
		}
	}
	newest, _ := f.listAll(t, url.Values{"orderBy": {"updatedAt DESC"}}, 1)
	if newest[0].Identifier != "urn:air:acme.example:mcp:tides" {
		t.Fatalf("newest first: %s", newest[0].Identifier)
	}

	filters := []struct {
		expr string
		want []string
	}{
		{"type = 'application/a2a-agent-card+json' and publisher = 'ARDGATE.test'", []string{"urn:air:ardgate.test:agent:helper", "urn:air:ardgate.test:agent:v1-only"}},
		{"tags='weather'", []string{"urn:air:ardgate.test:mcp:weather"}},
		{"  tags = 'test'  AND  tags = 'calendar'  ", []string{"urn:air:ardgate.test:mcp:calendar"}},
		{"metadata.owner = 'Harbour'", []string{"urn:air:acme.example:mcp:tides"}},
		{"displayName = 'Helper agent' AND tags = 'it''s not there'", nil},
		{"", nil}, // empty: everything
	}
	for _, c := range filters {
		got, total := f.listAll(t, url.Values{"filter": {c.expr}}, 100)
		if c.expr == "" {
			if total != 15 {
				t.Fatalf("empty filter listed %d", total)
			}
			continue
		}
		if !slices.Equal(ids(got), c.want) || total != len(c.want) {
			t.Fatalf("filter %q: %v (total %d), want %v", c.expr, ids(got), total, c.want)
		}
	}
}

func TestLookup(t *testing.T) {
	f := serve(t)
	for _, urn := range []string{"urn:air:ardgate.test:mcp:fixture", "urn:ai:ARDGATE.test:mcp:fixture"} {
		r := f.do(t, http.MethodGet, "/agents/"+url.PathEscape(urn), "")
		var e listItem
		r.decode(t, http.StatusOK, &e)
		if e.Identifier != "urn:air:ardgate.test:mcp:fixture" || e.Score != nil {
			t.Fatalf("lookup %s: %+v", urn, e)
		}
		etag := r.header.Get("ETag")
		if !strings.HasPrefix(etag, `"`) || len(etag) != 66 || r.header.Get("Cache-Control") != "max-age=60" {
			t.Fatalf("headers %v", r.header)
		}
		for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
			nm := f.do(t, http.MethodGet, "/agents/"+url.PathEscape(urn), "", "If-None-Match", inm)
			if nm.status != http.StatusNotModified || len(nm.body) != 0 || nm.header.Get("ETag") != etag {
				t.Fatalf("If-None-Match %s: %d %q", inm, nm.status, nm.body)
			}
		}
		if r := f.do(t, http.MethodGet, "/agents/"+url.PathEscape(urn), "", "If-None-Match", `"stale"`); r.status != http.StatusOK {
			t.Fatalf("stale If-None-Match: %d", r.status)
		}
	}
	// Unescaped colons are fine in a path too, and HEAD works like GET.
	if r := f.do(t, http.MethodHead, "/agents/urn:air:ardgate.test:mcp:weather", ""); r.status != http.StatusOK || r.header.Get("ETag") == "" {
		t.Fatalf("HEAD: %d %v", r.status, r.header)
	}
}

func TestErrors(t *testing.T) {
	f := serve(t)
	big := `{"query":{"text":"` + strings.Repeat("x", MaxBodySize) + `"}}`
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"bad JSON", "POST", "/search", `{"query":`, 400, codeInvalidArgument},
		{"empty body", "POST", "/search", ``, 400, codeInvalidArgument},
		{"trailing data", "POST", "/search", `{"query":{"text":"x"}} {}`, 400, codeInvalidArgument},
		{"unknown field", "POST", "/search", `{"query":{"text":"x"},"colour":1}`, 400, codeInvalidArgument},
		{"unknown query field", "POST", "/search", `{"query":{"text":"x","lang":"en"}}`, 400, codeInvalidArgument},
		{"missing query", "POST", "/search", `{"pageSize":1}`, 400, codeInvalidArgument},
		{"missing text", "POST", "/search", `{"query":{"filter":{"type":"x"}}}`, 400, codeInvalidArgument},
		{"null text", "POST", "/search", `{"query":{"text":null}}`, 400, codeInvalidArgument},
		{"pageSize 101", "POST", "/search", `{"query":{"text":"x"},"pageSize":101}`, 400, codeInvalidArgument},
		{"pageSize 0", "POST", "/search", `{"query":{"text":"x"},"pageSize":0}`, 400, codeInvalidArgument},
		{"bad token", "POST", "/search", `{"query":{"text":"x"},"pageToken":"garbage"}`, 400, codeInvalidArgument},
		{"filter value number", "POST", "/search", `{"query":{"text":"x","filter":{"tags":3}}}`, 400, codeInvalidArgument},
		{"filter value null", "POST", "/search", `{"query":{"text":"x","filter":{"tags":null}}}`, 400, codeInvalidArgument},
		{"filter no values", "POST", "/search", `{"query":{"text":"x","filter":{"tags":[]}}}`, 400, codeInvalidArgument},
		{"filter bad path", "POST", "/search", `{"query":{"text":"x","filter":{"a..b":"x"}}}`, 400, codeInvalidArgument},
		{"bad federation", "POST", "/search", `{"query":{"text":"x"},"federation":"everywhere"}`, 400, codeInvalidArgument},
		{"explore no resultType", "POST", "/explore", `{"query":{"text":"x"}}`, 400, codeInvalidArgument},
		{"explore no facets", "POST", "/explore", `{"resultType":{"facets":[]}}`, 400, codeInvalidArgument},
		{"explore missing field", "POST", "/explore", `{"resultType":{"facets":[{"limit":3}]}}`, 400, codeInvalidArgument},
		{"explore unknown field", "POST", "/explore", `{"resultType":{"facets":[{"field":"colour"}]}}`, 400, codeInvalidArgument},
		{"explore bad limit", "POST", "/explore", `{"resultType":{"facets":[{"field":"type","limit":1001}]}}`, 400, codeInvalidArgument},
		{"explore bad minCount", "POST", "/explore", `{"resultType":{"facets":[{"field":"type","minCount":-1}]}}`, 400, codeInvalidArgument},
		{"explore facet twice", "POST", "/explore", `{"resultType":{"facets":[{"field":"type"},{"field":"type"}]}}`, 400, codeInvalidArgument},
		{"explore unknown facet key", "POST", "/explore", `{"resultType":{"facets":[{"field":"type","size":3}]}}`, 400, codeInvalidArgument},
		{"list pageSize 101", "GET", "/agents?pageSize=101", "", 400, codeInvalidArgument},
		{"list pageSize word", "GET", "/agents?pageSize=ten", "", 400, codeInvalidArgument},
		{"list bad token", "GET", "/agents?pageToken=zzz", "", 400, codeInvalidArgument},
		{"list filter operator", "GET", "/agents?filter=" + url.QueryEscape("type != 'x'"), "", 400, codeInvalidArgument},
		{"list filter unquoted", "GET", "/agents?filter=" + url.QueryEscape("type = MCP"), "", 400, codeInvalidArgument},
		{"list filter OR", "GET", "/agents?filter=" + url.QueryEscape("tags = 'a' OR tags = 'b'"), "", 400, codeInvalidArgument},
		{"list filter unterminated", "GET", "/agents?filter=" + url.QueryEscape("tags = 'a"), "", 400, codeInvalidArgument},
		{"list filter unknown field", "GET", "/agents?filter=" + url.QueryEscape("colour = 'red'"), "", 400, codeInvalidArgument},
		{"list filter dangling AND", "GET", "/agents?filter=" + url.QueryEscape("tags = 'a' AND"), "", 400, codeInvalidArgument},
		{"list bad orderBy", "GET", "/agents?orderBy=colour", "", 400, codeInvalidArgument},
		{"list bad order direction", "GET", "/agents?orderBy=" + url.QueryEscape("identifier SIDEWAYS"), "", 400, codeInvalidArgument},
		{"unknown URN", "GET", "/agents/" + url.PathEscape("urn:air:nobody.example:mcp:ghost"), "", 404, codeNotFound},
		{"registry entry is no agent", "GET", "/agents/" + url.PathEscape("urn:air:acme.example:registry:public"), "", 404, codeNotFound},
		{"malformed URN", "GET", "/agents/not-a-urn", "", 400, codeInvalidArgument},
		{"URN with encoded slash", "GET", "/agents/urn%3Aair%3Aa.example%3Ab%2Fc", "", 400, codeInvalidArgument},
		{"search by GET", "GET", "/search", "", 405, codeMethodNotAllowed},
		{"explore by PUT", "PUT", "/explore", "{}", 405, codeMethodNotAllowed},
		{"agents by POST", "POST", "/agents", "{}", 405, codeMethodNotAllowed},
		{"lookup by DELETE", "DELETE", "/agents/urn:air:ardgate.test:mcp:fixture", "", 405, codeMethodNotAllowed},
		{"body over 1 MiB", "POST", "/search", big, 413, codeTooLarge},
		{"unknown route", "GET", "/nope", "", 404, codeNotFound},
		{"root", "GET", "/", "", 404, codeNotFound},
		{"trailing slash", "POST", "/search/", `{"query":{"text":"x"}}`, 404, codeNotFound},
		{"lookup sub-path", "GET", "/agents/urn:air:a.example:b/extra", "", 404, codeNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.do(t, c.method, c.path, c.body)
			var e errorBody
			r.decode(t, c.status, &e)
			if e.ErrorCode != c.code || e.Message == "" {
				t.Fatalf("error %+v, want code %s", e, c.code)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if allow := r.header.Get("Allow"); (c.status == 405) != (allow != "") {
				t.Fatalf("status %d with Allow %q", c.status, allow)
			}
		})
	}
	// The filter error says what is supported.
	var e errorBody
	f.do(t, http.MethodGet, "/agents?filter="+url.QueryEscape("type ~ 'x'"), "").decode(t, 400, &e)
	if !strings.Contains(e.Message, "field = 'value'") || !strings.Contains(e.Message, "AND") {
		t.Fatalf("filter error does not explain the syntax: %s", e.Message)
	}
	// A value of the wrong type names its field and what it must be, in
	// JSON's words, not Go's.
	for body, want := range map[string]string{
		`{"query":{"text":"x"},"pageSize":"5"}`: `malformed request body: "pageSize" is a JSON string; it must be a whole number`,
		`{"query":{"text":"x"},"pageSize":2.5}`: `malformed request body: "pageSize" is a JSON number 2.5; it must be a whole number`,
		`{"query":{"text":7}}`:                  `malformed request body: "query.text" is a JSON number; it must be a string`,
		`{"query":{"text":"x"},"colour":1}`:     `malformed request body: unknown field "colour"`,
		// Not the server's own type's name ("ardserver.searchRequest").
		`[{"query":{"text":"x"}}]`: `malformed request body: a JSON object is expected, not array`,
		`"x"`:                      `malformed request body: a JSON object is expected, not string`,
	} {
		f.do(t, http.MethodPost, "/search", body).decode(t, 400, &e)
		if e.Message != want {
			t.Errorf("%s: %q, want %q", body, e.Message, want)
		}
	}
	// A whole number however written: 2.0 was refused, "is a JSON number
	// 2.0; it must be a whole number".
	var two struct{ Results []json.RawMessage }
	f.do(t, http.MethodPost, "/search", `{"query":{"text":""},"pageSize":2.0}`).decode(t, 200, &two)
	if len(two.Results) != 2 {
		t.Errorf("pageSize 2.0: %d results", len(two.Results))
	}
	// A load balancer's readiness check.
	var health struct {
		Status  string
		Entries int
	}
	f.do(t, http.MethodGet, "/healthz", "").decode(t, 200, &health)
	if health.Status != "ok" || health.Entries == 0 {
		t.Errorf("healthz: %+v", health)
	}
	// A 413 is also given when the body is streamed without a length.
	req, _ := http.NewRequest(http.MethodPost, f.ts.URL+"/search", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked oversize body: %d", resp.StatusCode)
	}
}

func TestNotLoaded(t *testing.T) {
	ts := httptest.NewServer(&Server{Catalogs: []string{fixtureCatalog}})
	defer ts.Close()
	resp, err := ts.Client().Post(ts.URL+"/search", "application/json", strings.NewReader(`{"query":{"text":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e errorBody
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 500 || e.ErrorCode != codeInternal {
		t.Fatalf("%d %+v %v", resp.StatusCode, e, err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte(`{"entries": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, files := range [][]string{
		{fixtureCatalog, filepath.Join(dir, "missing.json")},
		{broken},
		nil,
	} {
		if err := (&Server{Catalogs: files}).Load(); err == nil {
			t.Errorf("Load(%v) succeeded", files)
		}
	}
	// Entries that break the rules are logged and left out; the rest load.
	logs := &syncWriter{w: &bytes.Buffer{}}
	s := &Server{Catalogs: []string{"../../testdata/catalogs/invalid.json"}, Log: slog.New(slog.NewTextHandler(logs, nil))}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "displayName is missing") {
		t.Fatalf("skipped entries not logged:\n%s", logs.String())
	}
	// A URN in two catalogs: the first catalog's entry is served, and the
	// second is said to be left out.
	dir = t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	writeCatalog(t, a, tidesEntry)
	writeCatalog(t, b, strings.Replace(tidesEntry, "Tide tables", "Other tides", 1))
	logs = &syncWriter{w: &bytes.Buffer{}}
	s = &Server{Catalogs: []string{a, b}, Log: slog.New(slog.NewTextHandler(logs, nil))}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if e, err := s.index.Load().Lookup("urn:air:acme.example:mcp:tides"); err != nil || e.DisplayName != "Tide tables" ||
		!strings.Contains(logs.String(), "urn:air:acme.example:mcp:tides is in an earlier catalog too; that entry is kept") {
		t.Fatalf("a URN in two catalogs: %+v %v\n%s", e, err, logs.String())
	}
}

// A changed catalog is picked up while searches keep being served; a
// broken one is logged and the last good index kept.
func TestWatchReloads(t *testing.T) {
	f := serve(t)
	logs := &syncWriter{w: &bytes.Buffer{}}
	f.srv.Log = slog.New(slog.NewTextHandler(logs, nil))
	f.srv.PollInterval = 50 * time.Millisecond

	ctx, cancel := context.WithCancel(context.Background())
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); f.srv.Watch(ctx) }()
	defer func() {
		cancel()
		select {
		case <-watchDone:
		case <-time.After(5 * time.Second):
			t.Error("Watch did not return after its context was cancelled")
		}
	}()

	var failed, served atomic.Int64
	var errs sync.Map
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := f.ts.Client()
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Post(f.ts.URL+"/search", "application/json", strings.NewReader(`{"query":{"text":"tide echo"}}`))
				if err != nil {
					failed.Add(1)
					errs.Store(err.Error(), true)
					continue
				}
				var p searchPage
				if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&p) != nil || len(p.Results) == 0 {
					failed.Add(1)
					errs.Store(fmt.Sprint(resp.StatusCode), true)
				}
				served.Add(1)
				resp.Body.Close()
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
		if failed.Load() != 0 {
			var why []string
			errs.Range(func(k, _ any) bool { why = append(why, k.(string)); return true })
			t.Errorf("%d of %d concurrent searches failed during reloads: %v", failed.Load(), served.Load(), why)
		}
	}()

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	found := func(text, urn string) func() bool {
		return func() bool {
			return slices.Contains(ids(f.search(t, `{"query":{"text":"`+text+`"}}`).Results), urn)
		}
	}

	const lighthouse = `{"identifier":"urn:air:acme.example:mcp:lighthouse","displayName":"Lighthouse keeper","type":"application/mcp-server-card+json","url":"https://acme.example/lh.json"}`
	writeCatalog(t, f.tmp, registryEntry, tidesEntry, lighthouse)
	waitFor("the new entry", found("lighthouse keeper", "urn:air:acme.example:mcp:lighthouse"))

	// A broken file is logged once; the previous index keeps serving.
	replaceFile(t, f.tmp, `{not json`)
	waitFor("the reload error to be logged", func() bool { return strings.Contains(logs.String(), "reload failed") })
	if !found("lighthouse keeper", "urn:air:acme.example:mcp:lighthouse")() {
		t.Fatal("a broken catalog replaced the last good index")
	}
	// /healthz says so, still 200: the registry serves.
	var health struct {
		Status      string
		ReloadError string `json:"reload_error"`
		Entries     int
	}
	f.do(t, http.MethodGet, "/healthz", "").decode(t, 200, &health)
	if health.Status != "stale" || !strings.Contains(health.ReloadError, f.tmp) || health.Entries == 0 {
		t.Errorf("healthz after a failed reload: %+v", health)
	}

	// Fixing the file reloads again.
	writeCatalog(t, f.tmp, registryEntry, tidesEntry)
	waitFor("the entry to go", func() bool { return !found("lighthouse keeper", "urn:air:acme.example:mcp:lighthouse")() })
	if n := strings.Count(logs.String(), "reload failed"); n != 1 {
		t.Fatalf("reload failure logged %d times, want once:\n%s", n, logs.String())
	}
	health.Status, health.ReloadError = "", ""
	f.do(t, http.MethodGet, "/healthz", "").decode(t, 200, &health)
	if health.Status != "ok" || health.ReloadError != "" {
		t.Errorf("healthz after a good reload: %+v", health)
	}
}

// syncWriter lets the Watch goroutine log while the test reads the buffer.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}
