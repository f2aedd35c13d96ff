package registry

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// filterCatalog is decoded from JSON, as catalogs are, so metadata numbers
// and booleans have their JSON types.
const filterCatalog = `{"specVersion": "1.0", "entries": [
  {"identifier": "urn:air:acme.com:mcp:weather", "displayName": "Weather",
   "type": "application/mcp-server-card+json", "description": "Live weather.",
   "tags": ["weather", "forecast"], "capabilities": ["WeatherTool", "ForecastTool"],
   "representativeQueries": ["rain in Paris", "wind in Chicago"], "version": "2.1.0",
   "updatedAt": "2026-01-02T03:04:05Z",
   "metadata": {"owner": "Team-Sky", "tier": 2, "public": true, "note": null},
   "trustManifest": {"identity": "https://acme.com",
     "attestations": [{"type": "SOC2-Type2", "uri": "https://acme.com/soc2.pdf", "mediaType": "application/pdf"},
                      {"type": "HIPAA", "uri": "https://acme.com/hipaa", "mediaType": "text/html"}]},
   "data": {"name": "com.acme/weather",
     "packages": [{"registryType": "npm", "identifier": "@acme/weather", "transport": {"type": "stdio"}}],
     "remotes": [{"type": "streamable-http", "url": "https://acme.com/mcp"}]}},
  {"identifier": "urn:ai:Example.ORG:agent:travel", "displayName": "Travel agent",
   "type": "application/a2a-agent-card+json", "url": "https://example.org/.well-known/agent-card.json",
   "tags": ["travel", "booking"], "capabilities": ["BookFlight"],
   "metadata": {"owner": "team-travel"},
   "trustManifest": {"identity": "did:web:example.org",
     "attestations": [{"type": "ISO27001", "uri": "https://example.org/iso", "mediaType": "text/html"}]}},
  {"identifier": "urn:air:tools.acme.com:mcp:pytool", "displayName": "Py tool",
   "type": "application/mcp-server-card+json",
   "tags": ["weather", "python"],
   "data": {"packages": [{"registryType": "pypi", "identifier": "pytool"}, {"registryType": "oci", "identifier": "docker.io/acme/pytool"}]}},
  {"identifier": "urn:air:other.net:mcp:notes", "displayName": "Notes",
   "type": "application/mcp-server-card+json", "version": "1.0.0", "tags": [],
   "data": {"packages": []}}
]}`

const (
	fA = "urn:air:acme.com:mcp:weather"
	fB = "urn:ai:Example.ORG:agent:travel"
	fC = "urn:air:tools.acme.com:mcp:pytool"
	fD = "urn:air:other.net:mcp:notes"
)

func filterIndex(t *testing.T) *Index {
	t.Helper()
	c, skipped, err := ParseCatalog([]byte(filterCatalog))
	if err != nil || len(skipped) > 0 || len(c.Entries) != 4 {
		t.Fatalf("fixture: %v %q", err, skipped)
	}
	return NewIndex("t", c.Entries)
}

func TestFilter(t *testing.T) {
	ix := filterIndex(t)
	mcp, a2a := "application/mcp-server-card+json", "application/a2a-agent-card+json"
	tests := []struct {
		name   string
		filter map[string][]string
		want   []string
	}{
		{"no filter", nil, []string{fA, fB, fC, fD}},
		{"empty filter", map[string][]string{}, []string{fA, fB, fC, fD}},
		{"type", map[string][]string{"type": {mcp}}, []string{fA, fC, fD}},
		{"OR within a key", map[string][]string{"type": {mcp, a2a}}, []string{fA, fB, fC, fD}},
		{"OR, one value matches nothing", map[string][]string{"type": {a2a, "application/nope"}}, []string{fB}},
		{"AND across keys", map[string][]string{"type": {mcp}, "tags": {"python"}}, []string{fC}},
		{"AND across keys, none", map[string][]string{"type": {a2a}, "tags": {"weather"}}, nil},
		{"any array element", map[string][]string{"tags": {"forecast"}}, []string{fA}},
		{"array element shared", map[string][]string{"tags": {"weather"}}, []string{fA, fC}},
		{"OR over array elements", map[string][]string{"tags": {"travel", "python"}}, []string{fB, fC}},
		{"capabilities, case-insensitive", map[string][]string{"capabilities": {"weathertool"}}, []string{fA}},
		{"capabilities upper-case value", map[string][]string{"capabilities": {"BOOKFLIGHT"}}, []string{fB}},
		{"representativeQueries", map[string][]string{"representativeQueries": {"Rain in Paris"}}, []string{fA}},
		{"publisher", map[string][]string{"publisher": {"acme.com"}}, []string{fA}},
		{"publisher is exact, not a suffix", map[string][]string{"publisher": {"tools.acme.com"}}, []string{fC}},
		{"publisher from a legacy mixed-case URN", map[string][]string{"publisher": {"example.org"}}, []string{fB}},
		{"publisher value case-insensitive", map[string][]string{"publisher": {"EXAMPLE.Org"}}, []string{fB}},
		{"publisher OR", map[string][]string{"publisher": {"acme.com", "other.net"}}, []string{fA, fD}},
		{"identifier", map[string][]string{"identifier": {fA}}, []string{fA}},
		{"displayName case-insensitive", map[string][]string{"displayName": {"WEATHER"}}, []string{fA}},
		{"displayName is exact, not a word match", map[string][]string{"displayName": {"travel"}}, nil},
		{"version", map[string][]string{"version": {"1.0.0"}}, []string{fD}},
		{"updatedAt", map[string][]string{"updatedAt": {"2026-01-02T03:04:05Z"}}, []string{fA}},
		{"url", map[string][]string{"url": {"https://example.org/.well-known/agent-card.json"}}, []string{fB}},
		{"data path into array of objects", map[string][]string{"data.packages.registryType": {"npm"}}, []string{fA}},
		{"data path, second array element", map[string][]string{"data.packages.registryType": {"oci"}}, []string{fC}},
		{"data path OR", map[string][]string{"data.packages.registryType": {"npm", "pypi"}}, []string{fA, fC}},
		{"data path, deeper", map[string][]string{"data.packages.transport.type": {"stdio"}}, []string{fA}},
		{"data path, scalar", map[string][]string{"data.name": {"com.acme/weather"}}, []string{fA}},
		{"data path, remotes", map[string][]string{"data.remotes.type": {"streamable-http"}}, []string{fA}},
		{"data path that no entry has", map[string][]string{"data.nope": {"x"}}, nil},
		{"data path ending at an object", map[string][]string{"data.packages": {"npm"}}, nil},
		{"data path on an entry without data", map[string][]string{"data.packages.registryType": {"*"}}, []string{fA, fC}},
		{"trustManifest attestation type", map[string][]string{"trustManifest.attestations.type": {"SOC2-Type2"}}, []string{fA}},
		{"attestation type case-insensitive", map[string][]string{"trustManifest.attestations.type": {"hipaa"}}, []string{fA}},
		{"attestation type OR", map[string][]string{"trustManifest.attestations.type": {"iso27001", "soc2-type2"}}, []string{fA, fB}},
		{"trustManifest identity", map[string][]string{"trustManifest.identity": {"did:web:example.org"}}, []string{fB}},
		{"metadata string", map[string][]string{"metadata.owner": {"team-sky"}}, []string{fA}},
		{"metadata number", map[string][]string{"metadata.tier": {"2"}}, []string{fA}},
		{"metadata boolean", map[string][]string{"metadata.public": {"TRUE"}}, []string{fA}},
		{"metadata null matches nothing", map[string][]string{"metadata.note": {"null", ""}}, nil},
		{"metadata missing key", map[string][]string{"metadata.nope": {"x"}}, nil},
		// "*" suffix: a prefix glob (our extension).
		{"glob", map[string][]string{"capabilities": {"Book*"}}, []string{fB}},
		{"glob on a data path", map[string][]string{"data.packages.registryType": {"py*"}}, []string{fC}},
		{"glob on publisher", map[string][]string{"publisher": {"tools.*"}}, []string{fC}},
		{"glob on attestation", map[string][]string{"trustManifest.attestations.type": {"soc2*"}}, []string{fA}},
		{"glob on metadata", map[string][]string{"metadata.owner": {"team-*"}}, []string{fA, fB}},
		{"glob on identity", map[string][]string{"trustManifest.identity": {"did:web:*"}}, []string{fB}},
		{"lone star matches any value present", map[string][]string{"tags": {"*"}}, []string{fA, fB, fC}},
		{"star only as a suffix", map[string][]string{"tags": {"*ther"}}, nil},
		{"glob OR exact", map[string][]string{"tags": {"trav*", "python"}}, []string{fB, fC}},
		{"glob AND", map[string][]string{"tags": {"weath*"}, "type": {mcp}, "publisher": {"acme.*"}}, []string{fA}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all, err := ix.Match(Query{Filter: tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			got := identifiers(all)
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("filter %v: %v; want %v", tt.filter, got, want)
			}
			// Search applies the same filter, with or without text.
			page, err := ix.Search(Query{Filter: tt.filter, PageSize: MaxPageSize})
			if err != nil || len(page.Results) != len(want) {
				t.Fatalf("Search with filter %v: %v, %d results; want %d", tt.filter, err, len(page.Results), len(want))
			}
		})
	}
}

func TestFilterWithText(t *testing.T) {
	ix := filterIndex(t)
	tests := []struct {
		text   string
		filter map[string][]string
		want   []string
	}{
		{"weather", nil, []string{fA, fC}},
		{"weather", map[string][]string{"tags": {"python"}}, []string{fC}},
		{"weather", map[string][]string{"type": {"application/a2a-agent-card+json"}}, nil},
		{"weather", map[string][]string{"data.packages.registryType": {"npm"}}, []string{fA}},
		{"flight", map[string][]string{"publisher": {"example.org"}}, []string{fB}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.text, tt.filter), func(t *testing.T) {
			page, err := ix.Search(Query{Text: tt.text, Filter: tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			if got := identifiers(page.Results); !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Fatalf("%v; want %v", got, tt.want)
			}
			for _, r := range page.Results {
				if r.Score < 1 {
					t.Errorf("%s: score %d for a text match", r.Identifier, r.Score)
				}
			}
		})
	}
}

func TestFilterRefused(t *testing.T) {
	ix := filterIndex(t)
	tooManyKeys := map[string][]string{}
	for i := range maxFilterKeys + 1 {
		tooManyKeys[fmt.Sprintf("metadata.k%d", i)] = []string{"x"}
	}
	tooManyValues := make([]string, maxFilterValues+1)
	for i := range tooManyValues {
		tooManyValues[i] = fmt.Sprintf("v%d", i)
	}
	tests := []struct {
		name   string
		filter map[string][]string
		phrase string
	}{
		{"empty key", map[string][]string{"": {"x"}}, "dot path"},
		{"empty segment", map[string][]string{"a..b": {"x"}}, "dot path"},
		{"empty segment under data", map[string][]string{"data..name": {"x"}}, "dot path"},
		{"leading dot", map[string][]string{".tags": {"x"}}, "dot path"},
		{"trailing dot", map[string][]string{"tags.": {"x"}}, "dot path"},
		{"unknown field", map[string][]string{"nope": {"x"}}, "does not exist"},
		{"field name is case-sensitive", map[string][]string{"Tags": {"x"}}, "does not exist"},
		{"path under a scalar field", map[string][]string{"tags.x": {"x"}}, "does not exist"},
		{"object field without a path", map[string][]string{"metadata": {"x"}}, "does not exist"},
		{"data without a path", map[string][]string{"data": {"x"}}, "does not exist"},
		{"no values", map[string][]string{"tags": {}}, "no values"},
		{"nil values", map[string][]string{"tags": nil}, "no values"},
		{"too many keys", tooManyKeys, "keys"},
		{"too many values", map[string][]string{"tags": tooManyValues}, "values"},
		{"one bad key among good ones", map[string][]string{"tags": {"x"}, "type": {"y"}, "bogus": {"z"}}, "bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, text := range []string{"", "weather"} {
				_, err := ix.Search(Query{Text: text, Filter: tt.filter})
				if !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("Search(%q, %v): %v; want ErrInvalidArgument", text, tt.filter, err)
				}
				if !strings.Contains(err.Error(), tt.phrase) {
					t.Errorf("error %q does not say %q", err, tt.phrase)
				}
				if _, err := ix.Match(Query{Text: text, Filter: tt.filter}); !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("Match(%q, %v): %v; want ErrInvalidArgument", text, tt.filter, err)
				}
			}
		})
	}
	// The limits themselves are allowed.
	atMostKeys := map[string][]string{}
	for i := range maxFilterKeys {
		atMostKeys[fmt.Sprintf("metadata.k%d", i)] = []string{"x"}
	}
	if _, err := ix.Search(Query{Filter: atMostKeys}); err != nil {
		t.Errorf("%d keys refused: %v", maxFilterKeys, err)
	}
	if _, err := ix.Search(Query{Filter: map[string][]string{"tags": tooManyValues[:maxFilterValues]}}); err != nil {
		t.Errorf("%d values refused: %v", maxFilterValues, err)
	}
}

func TestCheckFieldPath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"identifier", true}, {"displayName", true}, {"type", true}, {"url", true}, {"description", true},
		{"version", true}, {"updatedAt", true}, {"publisher", true}, {"tags", true}, {"capabilities", true},
		{"representativeQueries", true}, {"metadata.x", true}, {"data.a.b.c", true}, {"trustManifest.identity", true},
		{"", false}, {".", false}, {"a..b", false}, {"metadata", false}, {"trustManifest", false},
		{"tags.0", false}, {"score", false}, {"publisher.x", false}, {"metadata.", false},
	}
	for _, tt := range tests {
		err := CheckFieldPath(tt.path)
		if tt.ok != (err == nil) || err != nil && !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("CheckFieldPath(%q) = %v; want ok=%v", tt.path, err, tt.ok)
		}
	}
}

func TestEntryValues(t *testing.T) {
	ix := filterIndex(t)
	a, err := ix.Lookup(fA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ix.Lookup(fB)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		e    Entry
		path string
		want []string
	}{
		{a, "publisher", []string{"acme.com"}},
		{b, "publisher", []string{"example.org"}},
		{a, "tags", []string{"weather", "forecast"}},
		{a, "data.packages.registryType", []string{"npm"}},
		{a, "trustManifest.attestations.type", []string{"SOC2-Type2", "HIPAA"}},
		{a, "metadata.tier", []string{"2"}},
		{a, "metadata.public", []string{"true"}},
		{a, "url", nil},
		{a, "a..b", nil},
		{a, "", nil},
		{a, "nope", nil},
		{a, "tags.x", nil},
	}
	for _, tt := range tests {
		if got := tt.e.Values(tt.path); !slices.Equal(got, tt.want) {
			t.Errorf("%s Values(%q) = %q; want %q", tt.e.Identifier, tt.path, got, tt.want)
		}
	}
}

// The field names CheckFieldPath allows and the readers fieldValues uses
// are two lists; a name in one only would be allowed and match nothing,
// or be read and refused.
func TestFieldReadersMatchFieldNames(t *testing.T) {
	readers := slices.Sorted(maps.Keys(fieldReaders))
	names := slices.Sorted(slices.Values(slices.Concat(scalarFields, objectFields)))
	if !slices.Equal(readers, names) {
		t.Errorf("fieldReaders read %v; scalarFields and objectFields name %v", readers, names)
	}
}
