package tools

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/registry/ardserver"
	"github.com/ardgate/ardgate/testdata/registryfixture"

	"log/slog"
)

// An ARD registry answering every search with one entry.
func fakeARD(t *testing.T, urn string, status int) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != 200 {
			_, _ = io.WriteString(w, `{"errorCode":"INTERNAL","message":"registry exploded"}`)
			return
		}
		_, _ = io.WriteString(w, `{"results":[{"identifier":"`+urn+`","displayName":"Remote weather","type":"application/mcp-server-card+json","url":"https://weather.example/card.json","description":"weather forecasts","score":77.5}]}`)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestDiscoverAcrossRegistries(t *testing.T) {
	remote := fakeARD(t, "urn:air:weather.example:mcp:forecast", 200)
	referred := fakeARD(t, "urn:air:other.example:mcp:rain", 200)
	broken := fakeARD(t, "", 500)
	hc := (&guard.Dialer{AllowLocal: true}).Client()
	ard := func(id, url string) registry.Registry {
		r, err := registry.NewARD(id, url, "", registry.RemoteOptions{HTTP: hc, Retries: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	local := registry.NewLocal("local", registry.NewIndex("local", []registry.Entry{
		{Identifier: "urn:air:acme.com:mcp:weather-local", DisplayName: "Local weather", Type: config.MediaMCPServerCard, URL: "https://acme.com/w.json", Description: "weather here"},
		{Identifier: "urn:air:acme.com:registry:other", DisplayName: "Other registry", Type: registry.MediaRegistry, URL: referred.URL + "/search"},
		{Identifier: "urn:air:acme.com:registry:stranger", DisplayName: "Not configured", Type: registry.MediaRegistry, URL: "https://stranger.example/search"},
	}))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := &attach.Manager{
		Registries: []registry.Registry{local, ard("remote", remote.URL), ard("broken", broken.URL), ard("other", referred.URL)},
		HTTP:       hc, AllowTypes: config.DefaultAllowAttachTypes, MaxAttachments: 5, CallTimeout: time.Second, StartTimeout: time.Second, Log: log,
	}
	g := New(m, log, Options{Version: "test"})
	h := g.NewHTTP(HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(t.Context()); ts.Close(); g.Close(); hc.CloseIdleConnections() })
	s := (&testGateway{g: g, h: h, url: ts.URL + "/mcp"}).connect(t)

	type out struct {
		Count   int
		Results []struct {
			URN        string
			Score      int
			RegistryID string `json:"registry_id"`
		}
		Referrals []struct{ URN, URL string }
		Note      string
		Errors    []struct {
			RegistryID string `json:"registry_id"`
			Error      string
		}
	}
	var all out
	res := s.call("discover_resources", map[string]any{"text": "weather"})
	if res.IsError {
		t.Fatalf("one broken registry failed the call: %s", firstText(res))
	}
	_ = json.Unmarshal(res.RawStructuredContent, &all)
	ids := map[string]bool{}
	for _, r := range all.Results {
		ids[r.RegistryID] = true
	}
	if !ids["local"] || !ids["remote"] || !ids["other"] {
		t.Fatalf("results from %v, want local, remote and other: %+v", ids, all.Results)
	}
	if len(all.Errors) != 1 || all.Errors[0].RegistryID != "broken" {
		t.Fatalf("errors %+v, want broken reported", all.Errors)
	}
	for i := 1; i < len(all.Results); i++ {
		if all.Results[i].Score > all.Results[i-1].Score {
			t.Fatalf("not merged by score: %+v", all.Results)
		}
	}

	// Only the local registry, but following its referrals: "other" is
	// configured, so it is searched; "stranger" is not, so it is only
	// reported.
	var followed out
	_ = json.Unmarshal(s.call("discover_resources", map[string]any{"text": "weather", "registry_id": "local", "follow_referrals": true}).RawStructuredContent, &followed)
	got := map[string]bool{}
	for _, r := range followed.Results {
		got[r.RegistryID] = true
	}
	if !got["local"] || !got["other"] || got["remote"] || len(followed.Referrals) != 2 {
		t.Fatalf("follow_referrals: results from %v, referrals %+v", got, followed.Referrals)
	}
	// The one not followed is said to be, and why.
	if !strings.Contains(followed.Note, " Referrals not followed, not being configured registries (only those are searched): 1.") {
		t.Fatalf("follow_referrals, the note: %s", followed.Note)
	}
	// A referral's URN is a registry's, not an unknown one.
	res = s.call("attach_resource", map[string]any{"urn": "urn:air:acme.com:registry:stranger"})
	if s.code(res) != "not_attachable" || !strings.Contains(firstText(res), "it is a registry, not an MCP server or A2A agent: search it with discover_resources") {
		t.Fatalf("attach a referral: %s %s", s.code(res), firstText(res))
	}
	// Text of no searchable word, one of skipped words, lists the
	// entries unranked and says so (a blank one too: TestDiscoverWithoutText).
	var listed out
	_ = json.Unmarshal(s.call("discover_resources", map[string]any{"text": "C#", "registry_id": "local"}).RawStructuredContent, &listed)
	if listed.Count == 0 || listed.Results[0].Score != 0 || !strings.Contains(listed.Note, "The text holds no word the catalogs search on") {
		t.Fatalf("text of no searchable word: %+v", listed)
	}
}

// A registry that does not answer is a registry_error that names it, on
// discover and on attach alike: an attach is not told the URN is unknown
// when a registry that may hold it could not be asked, nor that
// registries were searched that were not.
func TestRegistryDown(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // its port now refuses
	hc := (&guard.Dialer{AllowLocal: true}).Client()
	ard, err := registry.NewARD("down", down.URL, "", registry.RemoteOptions{HTTP: hc, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	local := registry.NewLocal("local", registry.NewIndex("local", []registry.Entry{
		{Identifier: "urn:air:acme.com:mcp:weather-local", DisplayName: "Local weather", Type: config.MediaMCPServerCard, URL: "https://acme.com/w.json", Description: "weather here"},
	}))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := &attach.Manager{Registries: []registry.Registry{ard, local}, HTTP: hc, AllowTypes: config.DefaultAllowAttachTypes,
		MaxAttachments: 5, CallTimeout: time.Second, StartTimeout: time.Second, Log: log}
	g := New(m, log, Options{Version: "test"})
	h := g.NewHTTP(HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(t.Context()); ts.Close(); g.Close(); hc.CloseIdleConnections() })
	s := (&testGateway{g: g, h: h, url: ts.URL + "/mcp"}).connect(t)

	for _, c := range []struct {
		tool      string
		args      map[string]any
		want, not string
	}{
		{"discover_resources", map[string]any{"text": "weather", "registry_id": "down"}, "registry down did not answer", ""},
		{"attach_resource", map[string]any{"urn": "urn:air:acme.com:mcp:weather-local", "registry_id": "down"}, "registry down did not answer", "searched"},
		{"attach_resource", map[string]any{"urn": "urn:air:acme.com:mcp:elsewhere"}, "registry down did not answer: Get", ""},
	} {
		res := s.call(c.tool, c.args)
		msg := firstText(res)
		if s.code(res) != "registry_error" || !strings.Contains(msg, c.want) || (c.not != "" && strings.Contains(msg, c.not)) {
			t.Errorf("%s %v: %s %s", c.tool, c.args, s.code(res), msg)
		}
	}
	// Its health says it failed, and claims no count of entries, which a
	// registry's searches do not tell (it said "entries": 0).
	if h := string(s.call("gateway_health", map[string]any{}).RawStructuredContent); !strings.Contains(h, `"id":"down","reachable":false`) || strings.Contains(h, `"entries"`) {
		t.Errorf("gateway_health: %s", h)
	}
	// Searched without a registry_id, the registries that answered are
	// named, once each.
	if msg := firstText(s.call("attach_resource", map[string]any{"urn": "urn:air:acme.com:mcp:elsewhere"})); !strings.HasSuffix(msg, "it is not in [local]") ||
		strings.Count(msg, "registry down") != 1 {
		t.Errorf("the URN in no registry that answered: %s", msg)
	}
}

// A page token given with another text, or another registry_id, is
// refused in the tool's words, not the registry API's ("pageToken").
func TestPageTokenOfAnotherQuery(t *testing.T) {
	var entries []registry.Entry
	for _, n := range []string{"one", "two", "three"} {
		entries = append(entries, registry.Entry{Identifier: "urn:air:acme.com:mcp:weather-" + n, DisplayName: "Weather " + n,
			Type: config.MediaMCPServerCard, URL: "https://acme.com/" + n + ".json", Description: "weather"})
	}
	tg := newGateway(t, time.Second, entries...)
	tg.g.manager.Registries = append(tg.g.manager.Registries, registry.NewLocal("other", registry.NewIndex("other", entries)))
	s := tg.connect(t)
	var first struct {
		PageToken string `json:"page_token"`
	}
	_ = json.Unmarshal(s.call("discover_resources", map[string]any{"text": "weather", "page_size": 1, "registry_id": "test"}).RawStructuredContent, &first)
	if first.PageToken == "" {
		t.Fatal("no page token for a second page")
	}
	res := s.call("discover_resources", map[string]any{"text": "weather one", "page_token": first.PageToken})
	if s.code(res) != "invalid_arguments" || !strings.Contains(firstText(res), `"page_token" is not one discover_resources returned for this text and filter`) {
		t.Fatalf("a page token of another query: %s %s", s.code(res), firstText(res))
	}
	// Nor is it taken for another registry's: it asked "test" again.
	res = s.call("discover_resources", map[string]any{"text": "weather", "page_size": 1, "registry_id": "other", "page_token": first.PageToken})
	if s.code(res) != "invalid_arguments" || !strings.Contains(firstText(res), `"page_token" continues a search of registry "test", not of "other"`) {
		t.Fatalf("a page token of another registry: %s %s", s.code(res), firstText(res))
	}
	// A token of a search of every registry is not one registry's.
	var all struct {
		PageToken string `json:"page_token"`
	}
	_ = json.Unmarshal(s.call("discover_resources", map[string]any{"text": "weather", "page_size": 1}).RawStructuredContent, &all)
	res = s.call("discover_resources", map[string]any{"text": "weather", "page_size": 1, "registry_id": "test", "page_token": all.PageToken})
	if s.code(res) != "invalid_arguments" || !strings.Contains(firstText(res), `continues a search of every registry (no registry_id), not of "test"`) {
		t.Fatalf("a page token of every registry's search: %s %s", s.code(res), firstText(res))
	}
	if res := s.call("discover_resources", map[string]any{"text": "weather", "page_size": 1, "registry_id": "test", "page_token": first.PageToken}); res.IsError {
		t.Fatalf("the page token of the same query: %s", firstText(res))
	}
}

// A search that finds nothing says what to try next, naming the
// registries searched; so does a tool_search.
func TestEmptyResultsSayWhatNext(t *testing.T) {
	const urn = "urn:air:ardgate.test:mcp:one"
	s := newGateway(t, 5*time.Second, remoteEntry(urn, "http://127.0.0.1:1/mcp")).connect(t)
	var found struct {
		Count int
		Note  string
	}
	res := s.call("discover_resources", map[string]any{"text": "weather forecast for Paris"})
	if err := json.Unmarshal(res.RawStructuredContent, &found); err != nil || found.Count != 0 ||
		!strings.Contains(found.Note, "Nothing matched in test: describe what the capability does in other words") {
		t.Fatalf("discover with no match: %v %s", err, res.RawStructuredContent)
	}
	res = s.call("tool_search", map[string]any{"query": "remember a fact"})
	if err := json.Unmarshal(res.RawStructuredContent, &found); err != nil || found.Count != 0 ||
		!strings.Contains(found.Note, "No tool of the 0 this session has attached matched") {
		t.Fatalf("tool_search with no match: %v %s", err, res.RawStructuredContent)
	}
}

// A registry's referrals and page token are its own data: a referral to
// what is no http(s) registry is not passed on, one given twice is given
// once, and a page token of 10,000 characters, which made the gateway's
// own 13 KB, ends that registry's pages, saying so.
func TestDiscoverHostileRegistryData(t *testing.T) {
	ref := func(url string) string {
		return `{"identifier":"urn:air:acme.com:registry:r","displayName":"R","type":"application/ard-registry+json","url":"` + url + `"}`
	}
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"results":[{"identifier":"urn:air:weather.example:mcp:forecast","displayName":"Remote weather","type":"application/mcp-server-card+json","url":"https://weather.example/card.json","description":"weather","score":50}],`+
			`"referrals":[`+ref("https://r.example/search")+`,`+ref("https://r.example/search")+`,`+ref("javascript:alert(1)")+`],"pageToken":"`+strings.Repeat("p", 10000)+`"}`)
	}))
	t.Cleanup(hostile.Close)
	hc := (&guard.Dialer{AllowLocal: true}).Client()
	reg, err := registry.NewARD("hostile", hostile.URL, "", registry.RemoteOptions{HTTP: hc})
	if err != nil {
		t.Fatal(err)
	}
	m := &attach.Manager{Registries: []registry.Registry{reg}, HTTP: hc, AllowTypes: config.DefaultAllowAttachTypes, MaxAttachments: 5,
		CallTimeout: time.Second, StartTimeout: time.Second, Log: quietLog}
	g := New(m, quietLog, Options{Version: "test"})
	h := g.NewHTTP(HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(t.Context()); ts.Close(); g.Close(); hc.CloseIdleConnections() })
	s := (&testGateway{g: g, h: h, url: ts.URL + "/mcp"}).connect(t)
	res := s.call("discover_resources", map[string]any{"text": "weather"})
	var out struct {
		Count     int
		Referrals []struct{ URL string }
		PageToken string `json:"page_token"`
		Note      string
	}
	if err := json.Unmarshal(res.RawStructuredContent, &out); err != nil || res.IsError {
		t.Fatalf("discover: %s", firstText(res))
	}
	if out.Count != 1 || len(out.Referrals) != 1 || out.Referrals[0].URL != "https://r.example/search" {
		t.Errorf("results %d, referrals %+v; want 1, and the one http(s) referral once", out.Count, out.Referrals)
	}
	if out.PageToken != "" || !strings.Contains(out.Note, "Registry hostile gave a page token of over 2048 bytes") {
		t.Errorf("page token of %d bytes; note %q", len(out.PageToken), out.Note)
	}
}

// searchGateway is a gateway over the builtin catalog, the recorded MCP
// Registry (as "mcp") and the corpus of 464 real servers as a catalog
// (as "corpus"), whose entries any registry may launch, as an operator's
// stdio.allow_from lets them.
func searchGateway(t *testing.T) *clientSession {
	t.Helper()
	load := func(id string, data []byte) registry.Registry {
		t.Helper()
		entries, _, err := registry.LoadCatalogBytes(data, id)
		if err != nil {
			t.Fatal(err)
		}
		return registry.NewLocal(id, registry.NewIndex(id, entries))
	}
	corpus, err := os.ReadFile("../testdata/search-quality/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	h, err := registryfixture.MCPRegistry("../testdata/mcpregistry/servers.json")
	if err != nil {
		t.Fatal(err)
	}
	fixture := httptest.NewServer(h)
	t.Cleanup(fixture.Close)
	hc := (&guard.Dialer{AllowLocal: true}).Client()
	mcpReg, err := registry.NewMCPRegistry("mcp", fixture.URL, registry.RemoteOptions{HTTP: hc})
	if err != nil {
		t.Fatal(err)
	}
	tg := newGateway(t, time.Second)
	m := tg.g.manager
	m.Registries = []registry.Registry{load("builtin", registry.BuiltinCatalog()), mcpReg, load("corpus", corpus)}
	m.Stdio = guard.Stdio{AllowFrom: []string{"builtin", "mcp", "corpus"}, Launchers: config.DefaultLaunchers}
	t.Cleanup(hc.CloseIdleConnections)
	return tg.connect(t)
}

type discovered struct {
	Count   int
	Results []struct {
		URN        string
		Score      int
		RegistryID string `json:"registry_id"`
		Attachable bool
	}
	PageToken string `json:"page_token"`
	Note      string
}

func (s *clientSession) discover(args map[string]any) discovered {
	s.t.Helper()
	res := s.call("discover_resources", args)
	var d discovered
	if err := json.Unmarshal(res.RawStructuredContent, &d); err != nil || res.IsError {
		s.t.Fatalf("discover %v: %v %s", args, err, firstText(res))
	}
	return d
}

// scoreOf is the score of urn in d, or -1.
func (d discovered) scoreOf(urn string) int {
	for _, r := range d.Results {
		if r.URN == urn {
			return r.Score
		}
	}
	return -1
}

// An MCP Registry's window of servers, drawn by the query's words from
// their names, is ranked as drawn from the whole registry: ranked as a
// collection of its own, the words in nearly every server it held
// weighed nothing, fetch-mcp scored 8 for "fetch a url", and the builtin
// catalog's loose matches (28, 22) came before it. Its scores are now
// those a catalog of the same servers gives, within 6 points: the pool's
// own field lengths make 4 (at the fixture's true size of 464), and the
// registry's size taken as 2,000 one more.
func TestDiscoverMergesMCPRegistryScores(t *testing.T) {
	s := searchGateway(t)
	d := s.discover(map[string]any{"text": "fetch a url", "page_size": 5})
	if len(d.Results) == 0 || d.Results[0].URN != "urn:air:zcaceres.github.io:mcp:fetch-mcp" || d.Results[0].RegistryID != "mcp" {
		t.Fatalf("fetch a url: %+v", d.Results)
	}
	mcp := s.discover(map[string]any{"text": "kubernetes pods", "registry_id": "mcp", "page_size": 5})
	corpus := s.discover(map[string]any{"text": "kubernetes pods", "registry_id": "corpus", "page_size": 5})
	for _, urn := range []string{"urn:air:flux159.github.io:mcp:mcp-server-kubernetes", "urn:air:manusa.github.io:mcp:kubernetes-mcp-server"} {
		a, b := mcp.scoreOf(urn), corpus.scoreOf(urn)
		if a < 0 || b < 0 || a-b > 6 || b-a > 6 {
			t.Fatalf("kubernetes pods, %s: %d in the MCP Registry, %d in the catalog", urn, a, b)
		}
	}
}

// An entry the gateway cannot attach, or one with no description, ranks
// below an attachable, described one whose score is close: its shown
// score is its registry's times 0.9, and times 0.95.
func TestDiscoverRanksAttachableFirst(t *testing.T) {
	s := searchGateway(t)
	entries, _, err := registry.LoadCatalogFile("../testdata/search-quality/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	ix := registry.NewIndex("corpus", entries)
	for _, c := range []struct{ text, first, over string }{
		{"automate a browser", "urn:air:executeautomation.github.io:mcp:mcp-playwright", "urn:air:co-browser.github.io:mcp:browser-use-mcp-server"},
		{"neo4j graph", "urn:air:da-okazaki.github.io:mcp:mcp-neo4j-server", "urn:air:neo4j-contrib.github.io:mcp:mcp-neo4j"},
		{"send an email", "urn:air:zilongxue.github.io:mcp:claude-post", "urn:air:shy2593666979.github.io:mcp:mcp-server-email"}, // no description, no package
	} {
		d := s.discover(map[string]any{"text": c.text, "registry_id": "corpus", "page_size": 5})
		if len(d.Results) < 2 || d.Results[0].URN != c.first || !d.Results[0].Attachable || d.scoreOf(c.over) < 0 {
			t.Fatalf("%q: %+v; want %s first, then %s", c.text, d.Results, c.first, c.over)
		}
		raw, err := ix.Match(registry.Query{Text: c.text})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range d.Results {
			j := slices.IndexFunc(raw, func(x registry.Result) bool { return x.Identifier == r.URN })
			want := float64(raw[j].Score)
			if !r.Attachable {
				want *= 0.9
			}
			if raw[j].Description == "" {
				want *= 0.95
			}
			if r.Score != int(math.Round(want)) || i > 0 && r.Score > d.Results[i-1].Score {
				t.Fatalf("%q: %s shows %d, its registry's %d (attachable %v); want %.1f, in order: %+v", c.text, r.URN, r.Score, raw[j].Score, r.Attachable, want, d.Results)
			}
		}
	}
}

// A word in no entry, read as a near one, is said to be, naming the
// registries that read it so, so that a word taken for another can be
// put otherwise; a word in no entry and near none is not read as any
// ("currency" was read as current, silently).
func TestDiscoverSaysWhatItReadAs(t *testing.T) {
	s := searchGateway(t)
	d := s.discover(map[string]any{"text": "wether forcast", "page_size": 3})
	if len(d.Results) == 0 || d.Results[0].URN != "urn:air:isdaniel.github.io:mcp:mcp_weather_server" ||
		!strings.Contains(d.Note, ` "wether" is in no entry of corpus; read as "weather". If that is not what you meant, say it in other words.`) {
		t.Fatalf("wether forcast: %+v %s", d.Results, d.Note)
	}
	if d = s.discover(map[string]any{"text": "convert currency", "page_size": 3}); strings.Contains(d.Note, "read as") {
		t.Fatalf("convert currency: %s", d.Note)
	}
}

// A prefix glob filter, which an ARD registry is not sent, is applied to
// the pages it returns; a page it leaves short goes on into the
// registry's next pages, up to five of 100 in one call. Against
// ardgate's own registry server: "mcp server" with publisher kukapay*
// came back empty, said "Nothing matched", for 30 pages of 5, the first
// match on page 31.
func TestDiscoverGlobFillsPages(t *testing.T) {
	ard := func(t *testing.T, catalog string) *clientSession {
		srv := &ardserver.Server{Catalogs: []string{catalog}}
		if err := srv.Load(); err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		hc := (&guard.Dialer{AllowLocal: true}).Client()
		t.Cleanup(hc.CloseIdleConnections)
		r, err := registry.NewARD("ard", ts.URL, "", registry.RemoteOptions{HTTP: hc})
		if err != nil {
			t.Fatal(err)
		}
		tg := newGateway(t, time.Second)
		tg.g.manager.Registries = []registry.Registry{r}
		return tg.connect(t)
	}
	// pages lists every page's results for args, checking each page's note.
	pages := func(s *clientSession, args map[string]any) [][]string {
		var out [][]string
		for len(out) < 50 {
			d := s.discover(args)
			var urns []string
			for _, r := range d.Results {
				urns = append(urns, r.URN)
			}
			out = append(out, urns)
			if d.PageToken != "" && strings.Contains(d.Note, "Nothing matched") || d.Count == 0 && d.PageToken != "" && !strings.Contains(d.Note, "This page held no match, and ard have more to look through: pass page_token for the next page.") {
				t.Fatalf("page %d: %+v, token %q, note %s", len(out), d.Results, d.PageToken, d.Note)
			}
			if d.PageToken == "" {
				return out
			}
			args["page_token"] = d.PageToken
		}
		t.Fatal("no end of pages")
		return nil
	}

	t.Run("corpus", func(t *testing.T) {
		const corpus = "../testdata/search-quality/corpus.json"
		s := ard(t, corpus)
		filter := map[string][]string{"publisher": {"kukapay*"}}
		entries, _, err := registry.LoadCatalogFile(corpus)
		if err != nil {
			t.Fatal(err)
		}
		matches, err := registry.NewIndex("corpus", entries).Match(registry.Query{Text: "mcp server", Filter: filter})
		if err != nil || len(matches) < 10 {
			t.Fatalf("%v: %d matches", err, len(matches))
		}
		var want, got []string
		for _, m := range matches {
			want = append(want, m.Identifier)
		}
		listed := pages(s, map[string]any{"text": "mcp server", "filter": filter, "page_size": 5, "registry_id": "ard"})
		for i, p := range listed {
			if len(p) != 5 && i < len(listed)-1 || len(p) == 0 {
				t.Fatalf("page %d of %d holds %d: %v", i, len(listed), len(p), listed)
			}
			got = append(got, p...)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("pages listed %v\nwant %v", got, want)
		}
	})

	// 600 entries before the one match: the first call reads five pages
	// of 100 and gives none, saying to go on; the second finds it.
	t.Run("bounded", func(t *testing.T) {
		var entries []map[string]any
		for i := range 600 {
			entries = append(entries, map[string]any{"identifier": fmt.Sprintf("urn:air:many.example:mcp:weather-%03d", i), "displayName": "Weather",
				"type": config.MediaMCPServerCard, "url": "https://many.example/card.json", "description": "weather forecasts"})
		}
		entries = append(entries, map[string]any{"identifier": "urn:air:rare.example:mcp:weather", "displayName": "Rare",
			"type": config.MediaMCPServerCard, "url": "https://rare.example/card.json", "description": "weather, among other things"})
		catalog := filepath.Join(t.TempDir(), "catalog.json")
		data, _ := json.Marshal(map[string]any{"specVersion": "1.0", "host": map[string]any{"displayName": "many", "identifier": "did:web:many.example"}, "entries": entries})
		if err := os.WriteFile(catalog, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got := pages(ard(t, catalog), map[string]any{"text": "weather", "filter": map[string]any{"publisher": "rare*"}, "page_size": 5, "registry_id": "ard"})
		if len(got) != 2 || len(got[0]) != 0 || !slices.Equal(got[1], []string{"urn:air:rare.example:mcp:weather"}) {
			t.Fatalf("pages %v; want none, then the match", got)
		}
	})
}

// A registry's answer is cut to the page asked for: asked for one, a
// registry sent 40,000 results and 20,000 referrals, and the gateway
// wrote a frame of 19 MB.
func TestDiscoverCutsARegistryToThePage(t *testing.T) {
	t.Parallel()
	flood := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		b.WriteString(`{"results":[`)
		for i := range 40000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"identifier":"urn:air:f.test:mcp:s%d","displayName":"S","type":"t","url":"https://f.test/","score":5}`, i)
		}
		b.WriteString(`],"referrals":[`)
		for i := range 20000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"identifier":"urn:air:f.test:r:r%d","displayName":"R","type":"r","url":"https://r%d.f.test/"}`, i, i)
		}
		b.WriteString(`]}`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, b.String())
	}))
	t.Cleanup(flood.Close)
	hc := (&guard.Dialer{AllowLocal: true}).Client()
	reg, err := registry.NewARD("flood", flood.URL, "", registry.RemoteOptions{HTTP: hc})
	if err != nil {
		t.Fatal(err)
	}
	m := &attach.Manager{Registries: []registry.Registry{reg}, HTTP: hc, AllowTypes: config.DefaultAllowAttachTypes, MaxAttachments: 5,
		CallTimeout: time.Second, StartTimeout: time.Second, Log: quietLog}
	g := New(m, quietLog, Options{Version: "test"})
	h := g.NewHTTP(HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Shutdown(t.Context()); ts.Close(); g.Close(); hc.CloseIdleConnections() })
	s := (&testGateway{g: g, h: h, url: ts.URL + "/mcp"}).connect(t)
	res := s.call("discover_resources", map[string]any{"text": "weather", "page_size": 1})
	var out struct {
		Count     int
		Results   []json.RawMessage
		Referrals []json.RawMessage
	}
	if err := json.Unmarshal(res.RawStructuredContent, &out); err != nil || res.IsError {
		t.Fatalf("discover: %s", firstText(res))
	}
	if out.Count != 1 || len(out.Results) != 1 || len(out.Referrals) > 20 {
		t.Errorf("%d results (count %d), %d referrals; want 1 result and at most 20 referrals", len(out.Results), out.Count, len(out.Referrals))
	}
}

// McpAgenticServer's flows (../shared/seeds/mcp-agentic-server.txt,
// "Pass capability to agents_discover"): a discover with no text lists
// entries by name, filtered by type and by capability (singular or
// plural); an entry two registries give comes back once, naming both; an
// attached entry says its status, and gateway_health lists it.
func TestDiscoverWithoutText(t *testing.T) {
	t.Parallel()
	const urn = "urn:air:ardgate.test:mcp:remote"
	agent := func(id, capability string) registry.Entry {
		return registry.Entry{Identifier: "urn:air:ardgate.test:agent:" + id, DisplayName: id, Type: config.MediaA2AAgentCard,
			URL: "https://agents.example/" + id + ".json", Description: id + " agent", Capabilities: []string{capability}}
	}
	tg := newGateway(t, time.Minute, remoteEntry(urn, upstream(t).URL+"/mcp"), agent("reviewer", "code-analysis"), agent("writer", "writing"))
	m := tg.g.manager
	m.Registries = append(m.Registries, registry.NewLocal("mirror", registry.NewIndex("mirror", []registry.Entry{agent("reviewer", "code-analysis")})))
	s := tg.connect(t)
	if res := s.call("attach_resource", map[string]any{"urn": urn}); res.IsError {
		t.Fatalf("attach: %s", firstText(res))
	}
	type listed struct {
		Results []struct {
			URN        string
			Score      int
			RegistryID string   `json:"registry_id"`
			AlsoIn     []string `json:"also_in"`
			Attached   string
			AttachedAs string `json:"attached_as"`
		}
		Note string
	}
	list := func(args map[string]any) listed {
		t.Helper()
		res := s.call("discover_resources", args)
		var l listed
		if err := json.Unmarshal(res.RawStructuredContent, &l); err != nil || res.IsError {
			t.Fatalf("discover %v: %v %s", args, err, firstText(res))
		}
		return l
	}
	urns := func(l listed) []string {
		var out []string
		for _, r := range l.Results {
			out = append(out, r.URN)
		}
		return out
	}
	all := list(map[string]any{})
	if got := urns(all); len(got) != 3 || !strings.Contains(all.Note, "No text was given: results are a listing by name") {
		t.Fatalf("no text: %v, note %q", got, all.Note)
	}
	for _, r := range all.Results {
		switch r.URN {
		case urn:
			if r.Attached != attach.StatusUp || r.AttachedAs != "remote" {
				t.Errorf("the attached server: %+v", r)
			}
		case "urn:air:ardgate.test:agent:reviewer":
			if r.RegistryID != "test" || !slices.Equal(r.AlsoIn, []string{"mirror"}) || r.Attached != "" {
				t.Errorf("the agent in two registries: %+v", r)
			}
		}
	}
	for _, args := range []map[string]any{
		{"text": "", "filter": map[string]any{"capability": "code-analysis"}},
		{"text": "  ", "filter": map[string]any{"capabilities": []string{"code-analysis"}}},
		{"filter": map[string]any{"type": config.MediaA2AAgentCard, "capability": "code-analysis"}},
	} {
		if got := urns(list(args)); !slices.Equal(got, []string{"urn:air:ardgate.test:agent:reviewer"}) {
			t.Errorf("%v: %v, want the reviewer alone", args, got)
		}
	}
	if got := urns(list(map[string]any{"filter": map[string]any{"type": config.MediaA2AAgentCard}})); len(got) != 2 {
		t.Errorf("agents only: %v", got)
	}
	res := s.call("gateway_health", map[string]any{})
	var health struct {
		Attached []struct{ Name, URN, Kind, Status string }
	}
	if err := json.Unmarshal(res.RawStructuredContent, &health); err != nil || len(health.Attached) != 1 ||
		health.Attached[0].URN != urn || health.Attached[0].Status != attach.StatusUp || health.Attached[0].Name != "remote" {
		t.Fatalf("gateway_health's attached: %+v (%v) %s", health.Attached, err, firstText(res))
	}
}
