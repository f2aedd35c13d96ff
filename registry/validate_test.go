package registry

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestValidateInvalidCatalog checks ValidateCatalog against the violations
// listed in invalid.expected.txt: one output line per listed violation,
// located at the same entry (index and identifier), saying the same thing
// (a key phrase), and nothing else. The wording of the output differs from
// the file's; the key phrases are what both say.
func TestValidateInvalidCatalog(t *testing.T) {
	data, err := os.ReadFile("../testdata/catalogs/invalid.json")
	if err != nil {
		t.Fatal(err)
	}
	expected, err := os.ReadFile("../testdata/catalogs/invalid.expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	// Key phrases, by location, of what each expected line says.
	phrases := map[string][]string{
		"$":            {"'extra'", "not allowed"},
		"$.entries[0]": {"displayName"},
		"$.entries[1]": {"both url and data"},
		"$.entries[2]": {"neither url nor data"},
		"$.entries[3]": {"identifier", "not an ARD URN"},
		"$.entries[4]": {"representativeQueries", "minItems", "got 1, want 2"},
		"$.entries[5]": {".type", "number", "string"},
		"$.entries[7]": {"identifier duplicates $.entries[6]"},
	}

	// Locate each expected line: "$ (top level): …" or "$.entries[N] (id): …".
	lineLoc := regexp.MustCompile(`^(\$\.entries\[\d+\])(?: \(([^)]*)\))?|^(\$)`)
	type want struct {
		loc, id, line string
		phrases       []string
	}
	var wants []want
	for _, line := range strings.Split(strings.TrimSpace(string(expected)), "\n") {
		m := lineLoc.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("expected line not understood: %q", line)
		}
		w := want{loc: m[1], id: m[2], line: line}
		if w.loc == "" {
			w.loc = m[3]
		}
		p, ok := phrases[w.loc]
		if !ok {
			t.Fatalf("no key phrase for expected line %q: update the table", line)
		}
		w.phrases = p
		wants = append(wants, w)
	}
	if len(wants) != len(phrases) {
		t.Fatalf("%d expected lines, %d key phrases: the table and the file disagree", len(wants), len(phrases))
	}

	got := ValidateCatalog(data)
	used := make([]bool, len(got))
	for _, w := range wants {
		prefix := w.loc
		if w.id != "" {
			prefix += " (" + w.id + ")"
		}
		found := -1
		for i, g := range got {
			if used[i] || !strings.HasPrefix(g, prefix) {
				continue
			}
			if w.loc == "$" && !strings.HasPrefix(g, "$:") && !strings.HasPrefix(g, "$ ") {
				continue // "$.entries…" also starts with "$"
			}
			ok := true
			for _, p := range w.phrases {
				ok = ok && strings.Contains(g, p)
			}
			if ok {
				found = i
				break
			}
		}
		if found < 0 {
			t.Errorf("no output line at %s saying %q (expected %q)", prefix, w.phrases, w.line)
			continue
		}
		used[found] = true
	}
	for i, g := range got {
		if !used[i] {
			t.Errorf("unexpected violation: %q", g)
		}
	}
	if t.Failed() {
		t.Logf("ValidateCatalog output:\n%s", strings.Join(got, "\n"))
	}
}

func TestValidateValidCatalogs(t *testing.T) {
	tests := []struct {
		name     string
		path     string // "" = builtin
		optional bool   // a shared file: skip when absent
	}{
		{"builtin", "", false},
		{"fixture", "../testdata/catalogs/fixture.json", false},
		{"nested", "../testdata/catalogs/nested.json", false},
		{"search-quality corpus", "../testdata/search-quality/corpus.json", false},
		{"ARD basic example", "../../shared/ard/example-basic-catalog.json", true},
		{"ARD local business example", "../../shared/ard/example-local-business-catalog.json", true},
		{"464-server corpus", corpusPath, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := BuiltinCatalog()
			if tt.path != "" {
				var err error
				data, err = os.ReadFile(tt.path)
				if err != nil {
					if tt.optional && os.IsNotExist(err) {
						t.Skipf("%s not available", tt.path)
					}
					t.Fatal(err)
				}
			}
			if v := ValidateCatalog(data); len(v) > 0 {
				t.Fatalf("%d violations:\n%s", len(v), strings.Join(v, "\n"))
			}
		})
	}
}

func TestValidateNotJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		line string
	}{
		{"prose", "not json", "line 1"},
		{"empty", "", "line 1"},
		{"whitespace only", "\n\n", "line 3"},
		{"error on line 3", "{\n\"entries\": [\n{\"a\":1,}\n]}", "line 3"},
		{"truncated", "{\n\"specVersion\": \"1.0\",\n\"entries\": [", "line 3"},
		{"trailing data", "{\"specVersion\":\"1.0\",\"entries\":[]}\n}", "line 2"},
		{"two documents", "{}\n{}", "line 2"},
		{"YAML", "specVersion: 1.0\nentries: []\n", "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateCatalog([]byte(tt.in))
			if len(got) != 1 || !strings.Contains(got[0], "not JSON") || !strings.Contains(got[0], tt.line) {
				t.Fatalf("ValidateCatalog(%q) = %q; want one line saying not JSON, %s", tt.in, got, tt.line)
			}
		})
	}
}

func TestValidateRules(t *testing.T) {
	const (
		head = `{"specVersion": "1.0", "entries": [`
		tail = `]}`
		ok1  = `{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "type": "t", "url": "https://acme.com/a"}`
	)
	tests := []struct {
		name string
		doc  string
		want [][]string // per expected line, the key phrases it holds
	}{
		{"minimal valid", head + ok1 + tail, nil},
		{"url not http", head + `{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "type": "t", "url": "ftp://x"}` + tail,
			[][]string{{"$.entries[0] (urn:air:acme.com:mcp:a)", `url "ftp://x" is not an absolute http(s) URL`}}},
		{"url relative", head + `{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "type": "t", "url": "a.json"}` + tail,
			[][]string{{`url "a.json" is not an absolute http(s) URL`}}},
		{"a nested catalog's url may be a path", head + `{"identifier": "urn:air:acme.com:c:a", "displayName": "A", "type": "application/ai-catalog+json", "url": "a.json"}` + tail, nil},
		{"no entries is valid", head + tail, nil},
		{"legacy urn:ai prefix accepted", head + `{"identifier": "urn:ai:acme.com:mcp:a", "displayName": "A", "type": "t", "url": "https://acme.com/a"}` + tail, nil},
		{"unknown entry field tolerated", head + `{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "type": "t", "url": "https://acme.com/a", "mediaType": "t"}` + tail, nil},
		{"top level not an object", `[]`, [][]string{{"want object"}}},
		{"entries missing", `{"specVersion": "1.0"}`, [][]string{{"entries"}}},
		{"specVersion wrong", `{"specVersion": "2.0", "entries": []}`, [][]string{{"specVersion"}}},
		{"host field unknown", `{"specVersion": "1.0", "host": {"displayName": "h", "bad": 1}, "entries": []}`, [][]string{{"$.host", "'bad'"}}},
		{"host without displayName", `{"specVersion": "1.0", "host": {}, "entries": []}`, [][]string{{"$.host", "displayName"}}},
		{"publisher passes the schema pattern but not the parser", head + `{"identifier": "urn:air:-x.com:a", "displayName": "A", "type": "t", "url": "https://a.example/u"}` + tail,
			[][]string{{"$.entries[0] (urn:air:-x.com:a): identifier: not an ARD URN"}}},
		{"empty segment", head + `{"identifier": "urn:air:acme.com::a", "displayName": "A", "type": "t", "url": "https://a.example/u"}` + tail,
			[][]string{{"$.entries[0] (urn:air:acme.com::a): identifier: not an ARD URN"}}},
		{"identifier not a string", head + `{"identifier": 7, "displayName": "A", "type": "t", "url": "https://a.example/u"}` + tail,
			[][]string{{"$.entries[0].identifier"}}},
		{"missing type", head + `{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "url": "https://a.example/u"}` + tail,
			[][]string{{"$.entries[0] (urn:air:acme.com:mcp:a): missing property 'type'"}}},
		{"tags not strings", head + `{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "type": "t", "url": "https://a.example/u", "tags": [1]}` + tail,
			[][]string{{"$.entries[0] (urn:air:acme.com:mcp:a).tags[0]"}}},
		{"data not an object", head + `{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "type": "t", "data": [1]}` + tail,
			[][]string{{"$.entries[0] (urn:air:acme.com:mcp:a).data"}}},
		{"metadata value an object", head + `{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "type": "t", "url": "https://a.example/u", "metadata": {"o": {}}}` + tail,
			[][]string{{"$.entries[0] (urn:air:acme.com:mcp:a).metadata.o"}}},
		{"too many representativeQueries", head + `{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "type": "t", "url": "https://a.example/u", "representativeQueries": ["1","2","3","4","5","6"]}` + tail,
			[][]string{{"representativeQueries", "maxItems"}}},
		{"attestation without uri", head + `{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "type": "t", "url": "https://a.example/u", "trustManifest": {"identity": "https://acme.com", "attestations": [{"type": "SOC2", "mediaType": "text/html"}]}}` + tail,
			[][]string{{"attestations[0]", "uri"}}},
		{"trustManifest without identity", head + `{"identifier": "urn:air:acme.com:mcp:a", "displayName": "A", "type": "t", "url": "https://a.example/u", "trustManifest": {}}` + tail,
			[][]string{{"trustManifest", "identity"}}},
		{"duplicate across prefix and publisher case", head + ok1 + `,{"identifier": "URN:AI:ACME.com:mcp:a", "displayName": "B", "type": "t", "url": "https://a.example/u"}` + tail,
			[][]string{{"$.entries[1] (URN:AI:ACME.com:mcp:a): identifier duplicates $.entries[0]"}}},
		{"duplicates each name the first", head + ok1 + `,` + ok1 + `,` + ok1 + tail,
			[][]string{{"$.entries[1] (urn:air:acme.com:mcp:a): identifier duplicates $.entries[0]"}, {"$.entries[2] (urn:air:acme.com:mcp:a): identifier duplicates $.entries[0]"}}},
		{"blank displayName, which the loaders drop", head + `{"identifier": "urn:air:acme.com:mcp:a", "displayName": " ", "type": "t", "url": "https://a.example/u"}` + tail,
			[][]string{{"$.entries[0] (urn:air:acme.com:mcp:a): displayName is blank"}}},
		{"several problems in one entry", head + `{"identifier": "urn:air:acme.com:mcp:a", "type": 1}` + tail,
			[][]string{{"displayName"}, {".type"}, {"neither url nor data"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateCatalog([]byte(tt.doc))
			if len(got) != len(tt.want) {
				t.Fatalf("%d violations, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for _, phrases := range tt.want {
				found := false
				for _, g := range got {
					all := true
					for _, p := range phrases {
						all = all && strings.Contains(g, p)
					}
					found = found || all
				}
				if !found {
					t.Errorf("no violation says %q:\n%s", phrases, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// The same catalog gives the same lines, in the same order, every run:
// properties not allowed were named in map order.
func TestValidateDeterministic(t *testing.T) {
	doc := `{"specVersion":"1.0","zeta":1,"alpha":2,"mid":3,"beta":4,"entries":[{"identifier":"urn:air:a.example:mcp:x","displayName":"x","type":"t","url":"https://a.example/x","q":1,"b":2,"k":3}]}`
	first := strings.Join(ValidateCatalog([]byte(doc)), "\n")
	if !strings.Contains(first, "'alpha', 'beta', 'mid', 'zeta'") {
		t.Fatalf("properties not in order: %s", first)
	}
	for range 20 {
		if again := strings.Join(ValidateCatalog([]byte(doc)), "\n"); again != first {
			t.Fatalf("a second run differs:\n%s\n%s", first, again)
		}
	}
}
