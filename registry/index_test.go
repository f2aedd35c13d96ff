package registry

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// corpusPath is the repository's copy of the 464 real servers, the one
// the quality test reads (the shared corpus is outside the repository,
// and the tests reading it skipped in any other clone).
const corpusPath = "../testdata/search-quality/corpus.json"

func builtinIndex(t testing.TB) *Index {
	t.Helper()
	entries, skipped, err := LoadCatalogBytes(BuiltinCatalog(), "builtin")
	if err != nil || len(skipped) > 0 {
		t.Fatalf("builtin catalog: %v %q", err, skipped)
	}
	return NewIndex("builtin", entries)
}

func corpusEntries(t testing.TB) []Entry {
	t.Helper()
	entries, skipped, err := LoadCatalogFile(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) > 0 {
		t.Fatalf("corpus entries skipped: %q", skipped)
	}
	return entries
}

func identifiers(results []Result) []string {
	out := make([]string, len(results))
	for i, r := range results {
		out[i] = r.Identifier
	}
	return out
}

func mcpEntry(id, name, desc string, tags ...string) Entry {
	return Entry{Identifier: id, DisplayName: name, Type: "application/mcp-server-card+json",
		URL: "https://example.com/card.json", Description: desc, Tags: tags}
}

// checkRanked asserts the invariants of a ranked page: scores in 1..100,
// best first, equal scores ordered by identifier.
func checkRanked(t *testing.T, query string, results []Result) {
	t.Helper()
	for i, r := range results {
		if r.Score < 1 || r.Score > 100 {
			t.Errorf("%q: %s has score %d, outside 1..100", query, r.Identifier, r.Score)
		}
		if i == 0 {
			continue
		}
		prev := results[i-1]
		if prev.Score < r.Score {
			t.Errorf("%q: not sorted by score: %s (%d) before %s (%d)", query, prev.Identifier, prev.Score, r.Identifier, r.Score)
		}
	}
}

func TestSearchRankingBuiltin(t *testing.T) {
	ix := builtinIndex(t)
	tests := []struct {
		query string
		first string
	}{
		{"echo test tools", "urn:air:modelcontextprotocol.io:mcp:everything"},
		{"read and write local files", "urn:air:modelcontextprotocol.io:mcp:filesystem"},
		{"knowledge graph memory", "urn:air:modelcontextprotocol.io:mcp:memory"},
		{"think step by step", "urn:air:modelcontextprotocol.io:mcp:sequential-thinking"},
		{"take a screenshot of a web page", "urn:air:microsoft.com:mcp:playwright"},
		{"up-to-date documentation for a library", "urn:air:upstash.com:mcp:context7"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			page, err := ix.Search(Query{Text: tt.query})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Results) == 0 {
				t.Fatalf("%q: no results", tt.query)
			}
			if got := page.Results[0].Identifier; got != tt.first {
				t.Errorf("%q: first is %s (score %d); want %s; all: %v", tt.query, got, page.Results[0].Score, tt.first, identifiers(page.Results))
			}
			checkRanked(t, tt.query, page.Results)
			for _, r := range page.Results {
				if r.Source != "builtin" {
					t.Errorf("%s: source %q; want builtin", r.Identifier, r.Source)
				}
			}
		})
	}
}

func TestSearchScoresAndTies(t *testing.T) {
	// Same words, same namespace and name: only the publisher differs, and
	// its organisation label (a, b, c) is a single letter, which is not
	// indexed, so the scores tie and the identifier decides.
	entries := []Entry{
		mcpEntry("urn:air:c.example:mcp:widget", "Widget", "makes widgets"),
		mcpEntry("urn:air:a.example:mcp:widget", "Widget", "makes widgets"),
		mcpEntry("urn:air:b.example:mcp:widget", "Widget", "makes widgets"),
		mcpEntry("urn:air:z.example:mcp:gadget", "Gadget and widget", "a gadget with one widget among many other words here"),
		mcpEntry("urn:air:y.example:mcp:other", "Other", "unrelated"),
	}
	ix := NewIndex("t", entries)
	page, err := ix.Search(Query{Text: "widget"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"urn:air:a.example:mcp:widget", "urn:air:b.example:mcp:widget", "urn:air:c.example:mcp:widget", "urn:air:z.example:mcp:gadget"}
	if got := identifiers(page.Results); !slices.Equal(got, want) {
		t.Fatalf("order %v; want %v", got, want)
	}
	if s := page.Results; s[0].Score != s[1].Score || s[1].Score != s[2].Score || s[2].Score <= s[3].Score {
		t.Fatalf("scores %d %d %d %d: want three equal, then lower", s[0].Score, s[1].Score, s[2].Score, s[3].Score)
	}
	checkRanked(t, "widget", page.Results)

	// Over the builtin catalog and the corpus, every ranked page holds
	// the invariants, ties included.
	for _, ix := range []*Index{builtinIndex(t), NewIndex("corpus", corpusEntriesOrNil(t))} {
		for _, q := range []string{"mcp", "server", "test", "files", "search the web", "database query", "xyzzy plugh"} {
			all, err := ix.Match(Query{Text: q})
			if err != nil {
				t.Fatal(err)
			}
			checkRanked(t, q, all)
			// On the unrounded scores, ties are broken by identifier.
			hits, ranked, _, err := ix.rank(Query{Text: q}, 0)
			if err != nil || !ranked && len(hits) > 0 {
				t.Fatalf("%q: rank: %v, ranked %v", q, err, ranked)
			}
			for i := 1; i < len(hits); i++ {
				a, b := hits[i-1], hits[i]
				ida, idb := ix.docs[a.doc].entry.Identifier, ix.docs[b.doc].entry.Identifier
				if a.score < b.score || a.score == b.score && ida > idb {
					t.Errorf("%q: %s (%v) ranked before %s (%v)", q, ida, a.score, idb, b.score)
				}
			}
		}
	}
}

func corpusEntriesOrNil(t *testing.T) []Entry {
	if _, err := os.Stat(corpusPath); err != nil {
		return nil
	}
	return corpusEntries(t)
}

func TestSearchStopWordsOnly(t *testing.T) {
	ix := builtinIndex(t)
	for _, text := range []string{"", "   ", "the", "what is the", "a an and of to", "?!", "I"} {
		t.Run(fmt.Sprintf("%q", text), func(t *testing.T) {
			page, err := ix.Search(Query{Text: text})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Results) != ix.Len() {
				t.Fatalf("%d results; want all %d", len(page.Results), ix.Len())
			}
			for i, r := range page.Results {
				if r.Score != 0 {
					t.Errorf("%s: score %d; want 0 for an unranked listing", r.Identifier, r.Score)
				}
				if i > 0 && page.Results[i-1].DisplayName > r.DisplayName {
					t.Errorf("not sorted by displayName: %q before %q", page.Results[i-1].DisplayName, r.DisplayName)
				}
			}
		})
	}
	// With a filter, only the matching entries, still by name.
	page, err := ix.Search(Query{Text: "the", Filter: map[string][]string{"publisher": {"modelcontextprotocol.io"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"urn:air:modelcontextprotocol.io:mcp:everything",          // Everything (MCP reference test server)
		"urn:air:modelcontextprotocol.io:mcp:filesystem",          // Filesystem
		"urn:air:modelcontextprotocol.io:mcp:memory",              // Memory (knowledge graph)
		"urn:air:modelcontextprotocol.io:mcp:sequential-thinking", // Sequential Thinking
	}
	if got := identifiers(page.Results); !slices.Equal(got, want) {
		t.Fatalf("filtered listing %v; want %v", got, want)
	}
}

func TestSearchTokenization(t *testing.T) {
	tests := []struct {
		name  string
		entry Entry
		query string
	}{
		{"camelCase capability", Entry{Capabilities: []string{"WeatherTool", "ForecastTool"}}, "weather"},
		{"camelCase second word", Entry{Capabilities: []string{"WeatherTool"}}, "tool"},
		{"camelCase in name", Entry{DisplayName: "GitHubActions"}, "actions"},
		{"snake_case capability", Entry{Capabilities: []string{"read_text_file"}}, "text"},
		{"kebab-case tag", Entry{Tags: []string{"knowledge-graph"}}, "graph"},
		{"plural query, singular text", Entry{Description: "reads a file"}, "files"},
		{"singular query, plural text", Entry{Description: "lists files"}, "file"},
		{"-ies plural", Entry{Description: "runs queries"}, "query"},
		{"-ing form", Entry{Description: "file filing"}, "filed"},
		{"-ed form", Entry{Description: "stored values"}, "store"},
		{"doubled consonant", Entry{Description: "running jobs"}, "run"},
		{"case-insensitive", Entry{DisplayName: "SLACK"}, "slack"},
		{"URN name", Entry{}, "zebra"}, // urn:air:t.example:mcp:zebra-<i>
		{"URN namespace", Entry{}, "mcp"},
		{"representative query", Entry{RepresentativeQueries: []string{"book a flight", "cancel a flight"}}, "flights"},
		{"digits", Entry{Description: "supports http2 and s3"}, "s3"},
		{"non-ASCII", Entry{Description: "Bücher verwalten"}, "bücher"},
		{"plural of an -ing noun", Entry{Description: "vector embeddings"}, "embedding"},
		{"-ies plural, long word", Entry{Description: "cryptocurrencies"}, "cryptocurrency"},
		{"-tion and the verb", Entry{Description: "browser automation"}, "automate"},
		{"-ment and the verb", Entry{Description: "manage projects"}, "management"},
		{"abbreviation in text", Entry{Description: "query a db"}, "database"},
		{"abbreviation in query", Entry{Description: "git repository"}, "repo"},
		{"synonym", Entry{Description: "list a directory"}, "folders"},
		{"stop words in text and query", Entry{Description: "other tools"}, "up other tools"},
		{"inline card tool", Entry{Data: []byte(`{"tools":[{"name":"get_forecast","description":"Hourly outlook."}]}`)}, "forecast"},
		{"inline card tool description", Entry{Data: []byte(`{"tools":[{"name":"get_forecast","description":"Hourly outlook."}]}`)}, "outlook"},
		{"inline agent card skill", Entry{Data: []byte(`{"skills":[{"name":"Itinerary","description":"Plans trips","tags":["travel"],"examples":["book a hotel in Rome"]}]}`)}, "hotel"},
	}
	var entries []Entry
	for i, tt := range tests {
		e := tt.entry
		e.Identifier = fmt.Sprintf("urn:air:t.example:mcp:zebra-%d", i)
		if e.DisplayName == "" {
			e.DisplayName = fmt.Sprintf("entry %d", i)
		}
		e.Type = "application/mcp-server-card+json"
		if e.Data == nil {
			e.URL = "https://t.example/card.json"
		}
		entries = append(entries, e)
	}
	// Filler so that idf stays positive and meaningful.
	for i := range 20 {
		entries = append(entries, mcpEntry(fmt.Sprintf("urn:air:filler.example:x:f%d", i), "filler", "nothing to see"))
	}
	ix := NewIndex("t", entries)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := ix.Search(Query{Text: tt.query, PageSize: MaxPageSize})
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("urn:air:t.example:mcp:zebra-%d", i)
			if !slices.Contains(identifiers(page.Results), want) {
				t.Fatalf("%q does not find %s (%+v); got %v", tt.query, want, tt.entry, identifiers(page.Results))
			}
		})
	}
}

// Inflections meet, and words that are not inflected stay whole.
func TestStem(t *testing.T) {
	for _, group := range [][]string{
		{"files", "filed", "filing", "file"},
		{"queries", "query"},
		{"embeddings", "embedding", "embedded"},
		{"settings", "setting"},
		{"cryptocurrencies", "cryptocurrency"},
		{"lights", "light"},
		{"papers", "paper"},
		{"automation", "automations", "automate", "automated", "automating"},
		{"collections", "collection", "collect", "collecting"},
		{"management", "manage", "managed", "managing"},
	} {
		for _, w := range group[1:] {
			if stem(w) != stem(group[0]) {
				t.Errorf("stem(%q) = %q, stem(%q) = %q; want equal", w, stem(w), group[0], stem(group[0]))
			}
		}
	}
	for _, w := range []string{"status", "address", "analysis", "document", "mention", "api", "s3"} {
		if got := stem(w); got != w {
			t.Errorf("stem(%q) = %q; want it whole", w, got)
		}
	}
}

// The publisher's organisation is searchable, for less than a name.
func TestSearchPublisher(t *testing.T) {
	entries := []Entry{
		mcpEntry("urn:air:acme.example:mcp:thing", "thing", "does things"),
		mcpEntry("urn:air:acme.github.io:mcp:gadget", "gadget", "does gadgets"),
		mcpEntry("urn:air:other.example:mcp:acme", "acme", "the acme tool"),
	}
	for i := range 20 {
		entries = append(entries, mcpEntry(fmt.Sprintf("urn:air:filler.example:x:f%d", i), "filler", "nothing to see"))
	}
	page, err := NewIndex("t", entries).Search(Query{Text: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"urn:air:other.example:mcp:acme", "urn:air:acme.example:mcp:thing", "urn:air:acme.github.io:mcp:gadget"}
	if got := identifiers(page.Results); !slices.Equal(got, want) {
		t.Errorf("%v; want %v", got, want)
	}
}

// The first k hits are those a full sort puts first, in the same order,
// and none is lost or repeated, ties included.
func TestSortFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	order := func(a, b hit) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.doc, b.doc)) }
	for _, n := range []int{0, 1, 2, 9, 10, 11, 100, 1000} {
		hits := make([]hit, n)
		for i := range hits {
			hits[i] = hit{doc: int32(i), score: float64(rng.IntN(20))} // many ties
		}
		rng.Shuffle(n, func(i, j int) { hits[i], hits[j] = hits[j], hits[i] })
		want := slices.Clone(hits)
		slices.SortFunc(want, order)
		for _, k := range []int{0, 1, 3, 10, n - 1, n, n + 5} {
			got := slices.Clone(hits)
			sortFirst(got, k, order)
			m := len(want)
			if k > 0 {
				m = min(k, n)
			}
			if !slices.Equal(got[:m], want[:m]) {
				t.Fatalf("n=%d k=%d: first %v; want %v", n, k, got[:m], want[:m])
			}
			slices.SortFunc(got, order)
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d k=%d: hits lost or repeated", n, k)
			}
		}
	}
}

func TestSearchPagination(t *testing.T) {
	entries := corpusEntriesOrNil(t)
	if entries == nil {
		// Without the corpus beside the checkout: entries the queries
		// below page through, half of them npm packages for the filter.
		for i := range 57 {
			e := mcpEntry(fmt.Sprintf("urn:air:p%d.example:mcp:server", i), fmt.Sprintf("server %d", i), "an mcp server for databases")
			if i%2 == 0 {
				e.URL, e.Data = "", json.RawMessage(`{"packages":[{"registryType":"npm","identifier":"p","version":"1.0.0"}]}`)
			}
			entries = append(entries, e)
		}
	}
	ix := NewIndex("corpus", entries)
	for _, q := range []Query{
		{Text: "database server"},
		{Text: "mcp server"}, // nearly everything, many ties
		{Text: "the"},        // unranked listing
		{Text: "server", Filter: map[string][]string{"data.packages.registryType": {"npm"}}},
	} {
		t.Run(fmt.Sprintf("%q %v", q.Text, q.Filter), func(t *testing.T) {
			all, err := ix.Match(q)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) < 5 {
				t.Fatalf("only %d matches: pick a broader query", len(all))
			}
			var got []Result
			seen := map[string]bool{}
			q := q
			q.PageSize = 2
			for pages := 0; ; pages++ {
				if pages > len(all) {
					t.Fatal("paging does not end")
				}
				page, err := ix.Search(q)
				if err != nil {
					t.Fatalf("page %d: %v", pages, err)
				}
				if len(page.Results) > 2 {
					t.Fatalf("page %d has %d results", pages, len(page.Results))
				}
				for _, r := range page.Results {
					if seen[r.Identifier] {
						t.Fatalf("page %d repeats %s", pages, r.Identifier)
					}
					seen[r.Identifier] = true
				}
				got = append(got, page.Results...)
				if page.PageToken == "" {
					break
				}
				if len(page.Results) != 2 {
					t.Fatalf("page %d is short (%d) but has a token", pages, len(page.Results))
				}
				q.PageToken = page.PageToken
			}
			if !slices.Equal(identifiers(got), identifiers(all)) {
				t.Fatalf("pages concatenated differ from one big listing:\n%v\n%v", identifiers(got), identifiers(all))
			}
			for i := range got {
				if got[i].Score != all[i].Score {
					t.Fatalf("%s: score %d paged, %d in one listing", got[i].Identifier, got[i].Score, all[i].Score)
				}
			}
			// One big page (when it fits) agrees too, and has no token.
			if len(all) <= MaxPageSize {
				q.PageToken, q.PageSize = "", MaxPageSize
				big, err := ix.Search(q)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(identifiers(big.Results), identifiers(all)) || big.PageToken != "" {
					t.Fatalf("one big page differs or has a token %q", big.PageToken)
				}
			}
		})
	}
}

func TestSearchPageTokenRefused(t *testing.T) {
	ix := builtinIndex(t)
	base := Query{Text: "mcp", PageSize: 1, Filter: map[string][]string{"tags": {"reference"}}}
	first, err := ix.Search(base)
	if err != nil || first.PageToken == "" {
		t.Fatalf("no token to reuse: %v %+v", err, first)
	}
	tok := first.PageToken
	// The same query, key order aside, with another page size: accepted.
	same := base
	same.PageToken, same.PageSize = tok, 3
	if _, err := ix.Search(same); err != nil {
		t.Fatalf("the token's own query refused: %v", err)
	}
	// Its text with other spaces, which rank alike: accepted.
	for _, text := range []string{"  mcp ", "mcp\t"} {
		same.Text = text
		if _, err := ix.Search(same); err != nil {
			t.Fatalf("the token's own query as %q refused: %v", text, err)
		}
	}
	fp := fingerprint(base)
	forged := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name string
		q    Query
	}{
		{"other text", Query{Text: "memory", Filter: base.Filter}},
		{"text differs in case", Query{Text: "MCP", Filter: base.Filter}},
		{"no filter", Query{Text: "mcp"}},
		{"other filter value", Query{Text: "mcp", Filter: map[string][]string{"tags": {"mcp"}}}},
		{"extra filter value", Query{Text: "mcp", Filter: map[string][]string{"tags": {"reference", "mcp"}}}},
		{"other filter key", Query{Text: "mcp", Filter: map[string][]string{"capabilities": {"reference"}}}},
		{"extra filter key", Query{Text: "mcp", Filter: map[string][]string{"tags": {"reference"}, "type": {"x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.PageToken = tok
			if _, err := ix.Search(tt.q); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("token of another query: %v; want ErrInvalidArgument", err)
			}
		})
	}
	for _, garbage := range []string{
		"garbage", "!!!", "o", "=", "bzE", // "o1" without a fingerprint
		forged("o1"), forged("x1." + fmt.Sprintf("%08x", fp)), forged("o-1." + fmt.Sprintf("%08x", fp)),
		forged("o1.00000000"), forged("oone." + fmt.Sprintf("%08x", fp)), forged("o1." + fmt.Sprintf("%08X", fp)),
		tok + "x", strings.ToUpper(tok),
	} {
		t.Run("garbage "+garbage, func(t *testing.T) {
			q := base
			q.PageToken = garbage
			if _, err := ix.Search(q); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("token %q: %v; want ErrInvalidArgument", garbage, err)
			}
		})
	}
	// A well-formed token past the end is an empty last page, not an error.
	q := base
	q.PageToken = forged("o999." + fmt.Sprintf("%08x", fp))
	page, err := ix.Search(q)
	if err != nil || len(page.Results) != 0 || page.PageToken != "" {
		t.Fatalf("token past the end: %v %+v", err, page)
	}
}

func TestSearchPageSize(t *testing.T) {
	var entries []Entry
	for i := range 150 {
		entries = append(entries, mcpEntry(fmt.Sprintf("urn:air:e%03d.example:mcp:widget", i), "Widget", "widget maker"))
	}
	ix := NewIndex("t", entries)
	tests := []struct {
		size    int
		want    int
		wantErr bool
	}{
		{0, DefaultPageSize, false},
		{1, 1, false},
		{10, 10, false},
		{MaxPageSize, MaxPageSize, false},
		{MaxPageSize + 1, 0, true},
		{-1, 0, true},
		{1 << 30, 0, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.size), func(t *testing.T) {
			page, err := ix.Search(Query{Text: "widget", PageSize: tt.size})
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("pageSize %d: %v; want ErrInvalidArgument", tt.size, err)
				}
				return
			}
			if err != nil || len(page.Results) != tt.want || page.PageToken == "" {
				t.Fatalf("pageSize %d: %v, %d results, token %q; want %d and a token", tt.size, err, len(page.Results), page.PageToken, tt.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	entries := []Entry{
		mcpEntry("urn:air:acme.com:mcp:weather", "First weather", "first"),
		mcpEntry("urn:ai:ACME.com:mcp:weather", "Second weather (duplicate, legacy prefix)", "second"),
		mcpEntry("urn:air:acme.com:mcp:weather", "Third weather (exact duplicate)", "third"),
		mcpEntry("urn:ai:Example.ORG:agent:Travel", "Travel", "legacy prefix, mixed case"),
		{Identifier: "urn:air:acme.com:registry:public", DisplayName: "Acme registry", Type: MediaRegistry, URL: "https://acme.com/ard"},
		{Identifier: "urn:air:acme.com:registry:public", DisplayName: "Acme registry again", Type: MediaRegistry, URL: "https://acme.com/ard2"},
	}
	ix := NewIndex("t", entries)
	if ix.Len() != 2 {
		t.Fatalf("Len %d; want 2 (duplicates and registries left out)", ix.Len())
	}
	tests := []struct {
		urn     string
		display string // "" = not found
	}{
		{"urn:air:acme.com:mcp:weather", "First weather"},
		{"urn:ai:acme.com:mcp:weather", "First weather"},
		{"URN:AIR:ACME.COM:mcp:weather", "First weather"},
		{"Urn:Ai:Acme.Com:mcp:weather", "First weather"},
		{"urn:air:example.org:agent:Travel", "Travel"},
		{"urn:ai:EXAMPLE.org:agent:Travel", "Travel"},
		// Namespace and name are case-sensitive.
		{"urn:air:acme.com:MCP:weather", ""},
		{"urn:air:acme.com:mcp:Weather", ""},
		{"urn:air:example.org:agent:travel", ""},
		{"urn:air:acme.com:mcp:rain", ""},
		{"urn:air:acme.com:weather", ""},
		{"urn:air:acme.com:registry:public", ""}, // referrals are not entries
		{"not a urn", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.urn, func(t *testing.T) {
			e, err := ix.Lookup(tt.urn)
			if tt.display == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("Lookup(%q) = %+v, %v; want ErrNotFound", tt.urn, e, err)
				}
				if tt.urn != "" && !strings.Contains(err.Error(), tt.urn) {
					t.Errorf("error %q does not name %q", err, tt.urn)
				}
				return
			}
			if err != nil || e.DisplayName != tt.display {
				t.Fatalf("Lookup(%q) = %q, %v; want %q", tt.urn, e.DisplayName, err, tt.display)
			}
		})
	}
	// Search sees the first of the duplicates only.
	page, err := ix.Search(Query{Text: "weather"})
	if err != nil || len(page.Results) != 1 || page.Results[0].DisplayName != "First weather" {
		t.Fatalf("duplicates in search: %v %+v", err, page.Results)
	}
	// Registries come back as referrals, on every page, never as results.
	if len(page.Referrals) != 2 || page.Referrals[0].URL != "https://acme.com/ard" {
		t.Fatalf("referrals %+v", page.Referrals)
	}
	page, err = ix.Search(Query{Text: "registry"})
	if err != nil || len(page.Results) != 0 || len(page.Referrals) != 2 {
		t.Fatalf("a registry entry surfaced as a result: %v %+v", err, page)
	}
	if got := ix.Referrals(); len(got) != 2 {
		t.Fatalf("Referrals() = %+v", got)
	}
	if got := ix.Entries(); len(got) != 2 || got[0].DisplayName != "First weather" || got[1].DisplayName != "Travel" {
		t.Fatalf("Entries() = %+v", got)
	}
}

func TestSearchEmptyIndex(t *testing.T) {
	for _, ix := range []*Index{NewIndex("empty", nil), NewIndex("empty", []Entry{})} {
		for _, text := range []string{"", "weather"} {
			page, err := ix.Search(Query{Text: text})
			if err != nil || page.Results == nil || len(page.Results) != 0 || page.PageToken != "" {
				t.Fatalf("empty index, %q: %v %+v", text, err, page)
			}
		}
	}
}

func TestSearchConcurrent(t *testing.T) {
	ix := builtinIndex(t)
	queries := []string{"echo test tools", "read and write local files", "knowledge graph memory", "think step by step", "browser"}
	want := map[string][]string{}
	for _, q := range queries {
		p, err := ix.Search(Query{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		want[q] = identifiers(p.Results)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				q := queries[(g+i)%len(queries)]
				p, err := ix.Search(Query{Text: q})
				if err != nil {
					t.Error(err)
					return
				}
				if got := identifiers(p.Results); !slices.Equal(got, want[q]) {
					t.Errorf("%q concurrently: %v; want %v", q, got, want[q])
					return
				}
			}
		})
	}
	wg.Wait()
}

// The 464 real servers of the corpus: obvious queries find the obvious
// server in the top 3. Expectations were checked by reading the corpus
// (it holds no Postgres server; MySQL stands in for it).
func TestCorpusSearchSmoke(t *testing.T) {
	ix := NewIndex("corpus", corpusEntries(t))
	if ix.Len() != 464 {
		t.Fatalf("corpus has %d entries; want 464", ix.Len())
	}
	tests := []struct {
		query  string
		expect []string
	}{
		{"run and monitor github actions workflows", []string{"urn:air:ko1ynnky.github.io:mcp:github-actions-mcp-server"}},
		{"github enterprise repositories", []string{"urn:air:ddukbg.github.io:mcp:github-enterprise-mcp"}},
		{"send a message to a slack channel", []string{"urn:air:korotovsky.github.io:mcp:slack-mcp-server"}},
		{"query a mysql database", []string{"urn:air:benborla.github.io:mcp:mcp-server-mysql", "urn:air:designcomputer.github.io:mcp:mysql_mcp_server"}},
		{"manage a kubernetes cluster", []string{"urn:air:razvanmacovei.github.io:mcp:k8s-multicluster-mcp",
			"urn:air:flux159.github.io:mcp:mcp-server-kubernetes", "urn:air:manusa.github.io:mcp:kubernetes-mcp-server",
			"urn:air:strowk.github.io:mcp:mcp-k8s-go", "urn:air:yanmxa.github.io:mcp:multicluster-mcp-server"}},
		{"cache keys in redis", []string{"urn:air:redis.github.io:mcp:mcp-redis", "urn:air:redis.github.io:mcp:mcp-redis-cloud",
			"urn:air:gongrzhe.github.io:mcp:redis-mcp-server", "urn:air:prajwalnayak7.github.io:mcp:mcp-server-redis"}},
		{"play music on spotify", []string{"urn:air:varunneal.github.io:mcp:spotify-mcp"}},
		{"mongodb collections", []string{"urn:air:mongodb-js.github.io:mcp:mongodb-mcp-server", "urn:air:kiliczsh.github.io:mcp:mcp-mongo-server", "urn:air:furey.github.io:mcp:mongodb-lens"}},
		{"send emails with gmail", []string{"urn:air:gongrzhe.github.io:mcp:gmail-mcp-server", "urn:air:baryhuang.github.io:mcp:mcp-headless-gmail"}},
		{"jira and confluence", []string{"urn:air:sooperset.github.io:mcp:mcp-atlassian"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			page, err := ix.Search(Query{Text: tt.query, PageSize: 10})
			if err != nil {
				t.Fatal(err)
			}
			checkRanked(t, tt.query, page.Results)
			rank := slices.IndexFunc(page.Results, func(r Result) bool { return slices.Contains(tt.expect, r.Identifier) })
			if rank < 0 || rank >= 3 {
				top := page.Results[:min(3, len(page.Results))]
				var desc []string
				for _, r := range top {
					desc = append(desc, fmt.Sprintf("%s (%d)", r.Identifier, r.Score))
				}
				t.Errorf("%q: expected one of %v in the top 3, rank %d; top: %v", tt.query, tt.expect, rank, desc)
			}
		})
	}
}

// Queries of the corpus that put the wrong server first, now answered
// with the right one.
func TestCorpusSearchFirst(t *testing.T) {
	ix := NewIndex("corpus", corpusEntries(t))
	for _, c := range []struct{ query, first, was string }{
		// A name word the URN repeated counted twice: a fitting name
		// with no description, or another tool's, came first.
		{"create a jira ticket", "urn:air:sooperset.github.io:mcp:mcp-atlassian", "urn:air:tesla0225.github.io:mcp:mcp-create"},
		{"post a tweet", "urn:air:enescinr.github.io:mcp:twitter-mcp", "urn:air:zilongxue.github.io:mcp:claude-post"},
		// "remember", in no entry, was read as rember, two letters off.
		{"remember things between conversations", "urn:air:unibaseio.github.io:mcp:membase-mcp", "urn:air:rember.github.io:mcp:rember-mcp"},
	} {
		res, err := ix.Match(Query{Text: c.query})
		if err != nil || len(res) == 0 || res[0].Identifier != c.first {
			t.Errorf("%q: %v, first %v; want %s (it was %s)", c.query, err, identifiers(res[:min(3, len(res))]), c.first, c.was)
		}
	}
}

// benchEntries replicates the corpus to n entries: each copy gets unique
// identifiers, and a few words dropped from or added to its description
// and name, drawn from the corpus's own vocabulary.
func benchEntries(b *testing.B, n int) []Entry {
	b.Helper()
	base := corpusEntries(b)
	var vocab []string
	seen := map[string]bool{}
	for _, e := range base {
		for _, w := range strings.Fields(strings.ToLower(e.Description)) {
			w = strings.Trim(w, `.,;:!?"'()`)
			if len(w) > 3 && !seen[w] {
				seen[w] = true
				vocab = append(vocab, w)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]Entry, 0, n)
	for i := 0; len(out) < n; i++ {
		e := base[i%len(base)]
		copyNo := i / len(base)
		if copyNo > 0 {
			u, err := ParseURN(e.Identifier)
			if err != nil {
				b.Fatal(err)
			}
			u.Publisher = fmt.Sprintf("r%d.%s", copyNo, u.Publisher)
			e.Identifier = u.String()
			words := strings.Fields(e.Description)
			if len(words) > 3 {
				j := rng.IntN(len(words))
				words = slices.Delete(words, j, j+1)
			}
			for range 1 + rng.IntN(3) {
				words = append(words, vocab[rng.IntN(len(vocab))])
			}
			e.Description = strings.Join(words, " ")
			if rng.IntN(4) == 0 {
				e.DisplayName += " " + vocab[rng.IntN(len(vocab))]
			}
		}
		out = append(out, e)
	}
	return out
}

func BenchmarkSearch(b *testing.B) {
	queries := []Query{
		{Text: "send a message to my team's slack channel"},
		{Text: "query a mysql database"},
		{Text: "kubernetes"},
		{Text: "automate a web browser to click buttons and fill forms"},
		{Text: "mcp server"},                   // matches nearly everything
		{Text: "find an mcp server for slack"}, // a natural phrasing with those words
		{Text: "database", Filter: map[string][]string{"data.packages.registryType": {"npm"}}},
		{Text: "the"}, // unranked listing sorted by name
	}
	names := []string{"slack", "mysql", "kubernetes", "browser", "mcp-server", "mcp-server-slack", "filter-data", "stopwords"}
	for _, n := range []int{1_000, 10_000, 100_000} {
		ix := NewIndex("bench", benchEntries(b, n))
		if ix.Len() != n {
			b.Fatalf("%d unique entries; want %d", ix.Len(), n)
		}
		for i, q := range queries {
			b.Run(fmt.Sprintf("n=%d/%s", n, names[i]), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ix.Search(q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkNewIndex(b *testing.B) {
	entries := benchEntries(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		NewIndex("bench", entries)
	}
}

// A word the index does not hold is taken as one it does, an edit away,
// at less weight, and the page says so: "filesytem", "databse" and
// "slakc" found nothing. Short words and words the index holds are left
// alone, and so are words an edit or two from another word, which were
// read as it: "play" as plan, "currency" as current, "remember" as
// rember (a flashcards app).
func TestSearchTypos(t *testing.T) {
	ix := NewIndex("test", []Entry{
		{Identifier: "urn:air:a.example:mcp:fs", DisplayName: "Filesystem", Type: "t", URL: "https://a.example/fs", Description: "read and write files on disk"},
		{Identifier: "urn:air:a.example:mcp:db", DisplayName: "Postgres", Type: "t", URL: "https://a.example/db", Description: "query a database"},
		{Identifier: "urn:air:a.example:mcp:chat", DisplayName: "Slack", Type: "t", URL: "https://a.example/chat", Description: "send messages to channels"},
		{Identifier: "urn:air:a.example:mcp:k8s", DisplayName: "Kubernetes", Type: "t", URL: "https://a.example/k8s", Description: "manage clusters"},
		{Identifier: "urn:air:a.example:mcp:jira", DisplayName: "Jira", Type: "t", URL: "https://a.example/jira", Description: "track issues"},
		{Identifier: "urn:air:a.example:mcp:rember", DisplayName: "Rember", Type: "t", URL: "https://a.example/rember", Description: "plan your current flashcards"},
	})
	for _, c := range []struct{ text, want, as string }{
		{"filesytem", "urn:air:a.example:mcp:fs", "filesystem"},   // a letter left out
		{"databse", "urn:air:a.example:mcp:db", "database"},       // and stemmed
		{"slakc", "urn:air:a.example:mcp:chat", "slack"},          // two swapped
		{"kuberentes", "urn:air:a.example:mcp:k8s", "kubernetes"}, // swapped, in a long word
		{"kubernetse", "urn:air:a.example:mcp:k8s", "kubernetes"}, // stemmed, one off
		{"jria", "urn:air:a.example:mcp:jira", "jira"},            // four letters, two swapped
	} {
		page, err := ix.Search(Query{Text: "the " + c.text})
		if err != nil || len(page.Results) == 0 || page.Results[0].Identifier != c.want {
			t.Errorf("%q: %v %+v; want %s first", c.text, err, page.Results, c.want)
		}
		if want := []Reading{{Word: c.text, As: c.as}}; !slices.Equal(page.Read, want) {
			t.Errorf("%q: read %+v; want %+v", c.text, page.Read, want)
		}
	}
	exact, _ := ix.Search(Query{Text: "filesystem"})
	typo, _ := ix.Search(Query{Text: "filesytem"})
	if len(exact.Results) == 0 || len(typo.Results) == 0 || typo.Results[0].Score >= exact.Results[0].Score || exact.Read != nil {
		t.Errorf("a typo scored %+v, the word %+v; want less, and the word read as itself", typo, exact)
	}
	for _, text := range []string{
		"sla", "xyzzyplugh",
		"play",     // plan: a letter changed in a short word
		"slak",     // slack: a letter added to a short word
		"currency", // current: two edits
		"remember", // rember: two edits
		"postgrez", // postgr, the stem of postgres: two edits
	} {
		if page, _ := ix.Search(Query{Text: text}); len(page.Results) != 0 || page.Read != nil {
			t.Errorf("%q matched %+v, read %+v", text, page.Results, page.Read)
		}
	}
	for _, c := range []struct {
		a, b string
		most int
		want int
	}{
		{"abc", "abc", 1, 0}, {"abc", "acb", 1, 1}, {"abc", "ab", 1, 1}, {"abc", "xyz", 1, 2}, {"kitten", "sitting", 2, 3}, {"ca", "abc", 2, 3}, // a swap, then an insertion between, is not one edit (optimal string alignment)
	} {
		if got := editDistance(c.a, c.b, c.most); got != c.want {
			t.Errorf("editDistance(%q, %q, %d) = %d; want %d", c.a, c.b, c.most, got, c.want)
		}
	}
}
