package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/config"
)

// leaf is a valid entry whose artifact is a reference.
func leaf(id string) string {
	return fmt.Sprintf(`{"identifier": %q, "displayName": "leaf %s", "type": "application/mcp-server-card+json", "url": "https://example.com/%s.json"}`, id, id, id)
}

// nestedRef is a catalog entry pointing at another catalog by URL.
func nestedRef(id, url string) string {
	return fmt.Sprintf(`{"identifier": %q, "displayName": "nested %s", "type": "application/ai-catalog+json", "url": %q}`, id, id, url)
}

// nestedInline is a catalog entry holding another catalog as data.
func nestedInline(id, doc string) string {
	return fmt.Sprintf(`{"identifier": %q, "displayName": "nested %s", "type": "application/ai-catalog+json", "data": %s}`, id, id, doc)
}

func catalogDoc(entries ...string) string {
	return `{"specVersion": "1.0", "host": {"displayName": "test"}, "entries": [` + strings.Join(entries, ",\n") + `]}`
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func entryIDs(entries []Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Identifier
	}
	return out
}

// skippedSaying returns the messages holding every phrase.
func skippedSaying(skipped []string, phrases ...string) []string {
	var out []string
	for _, s := range skipped {
		all := true
		for _, p := range phrases {
			all = all && strings.Contains(s, p)
		}
		if all {
			out = append(out, s)
		}
	}
	return out
}

func TestLoadCatalogFileFixture(t *testing.T) {
	entries, skipped, err := LoadCatalogFile("../testdata/catalogs/fixture.json")
	if err != nil || len(skipped) > 0 {
		t.Fatalf("%v %q", err, skipped)
	}
	want := []string{
		"urn:air:ardgate.test:mcp:fixture",
		"urn:air:ardgate.test:mcp:fixture-exits",
		"urn:air:ardgate.test:mcp:tools-only",
		"urn:air:ardgate.test:mcp:remote-fixture",
		"urn:air:ardgate.test:agent:helper",
		"urn:air:ardgate.test:mcp:weather", // from nested.json, in place of the catalog entry
		"urn:air:ardgate.test:mcp:calendar",
		"urn:air:ardgate.test:agent:v1-only",
	}
	if got := entryIDs(entries); !slices.Equal(got, want) {
		t.Fatalf("entries %v; want %v", got, want)
	}
	for _, e := range entries {
		if e.Type == MediaCatalog {
			t.Errorf("nested catalog entry %s kept as an entry", e.Identifier)
		}
	}
}

func TestLoadCatalogNested(t *testing.T) {
	dir := t.TempDir()
	// Relative paths resolve against the catalog that names them, at
	// every level; file:// and absolute paths work too.
	writeFile(t, dir, "sub/deeper/grandchild.json", catalogDoc(leaf("urn:air:t.example:x:grandchild")))
	writeFile(t, dir, "sub/child.json", catalogDoc(leaf("urn:air:t.example:x:child"), nestedRef("urn:air:t.example:c:gc", "deeper/grandchild.json")))
	abs := writeFile(t, dir, "elsewhere/abs.json", catalogDoc(leaf("urn:air:t.example:x:absolute")))
	fileURL := writeFile(t, dir, "elsewhere/fileurl.json", catalogDoc(leaf("urn:air:t.example:x:fileurl")))
	inner := catalogDoc(leaf("urn:air:t.example:x:inline-leaf"),
		nestedInline("urn:air:t.example:c:inline2", catalogDoc(leaf("urn:air:t.example:x:inline-inline"))),
		// A relative path inside inline data resolves against the file
		// holding the data.
		nestedRef("urn:air:t.example:c:inline-ref", "sub/child.json"))
	rootEntries := []string{
		leaf("urn:air:t.example:x:top"),
		nestedRef("urn:air:t.example:c:child", "sub/child.json"),
		nestedRef("urn:air:t.example:c:abs", abs),
		nestedRef("urn:air:t.example:c:fileurl", "file://"+fileURL),
		nestedInline("urn:air:t.example:c:inline", inner),
		leaf("urn:air:t.example:x:bottom"),
	}
	root := writeFile(t, dir, "root.json", catalogDoc(rootEntries...))
	entries, skipped, err := LoadCatalogFile(root)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("%v %q", err, skipped)
	}
	want := []string{
		"urn:air:t.example:x:top",
		"urn:air:t.example:x:child", "urn:air:t.example:x:grandchild",
		"urn:air:t.example:x:absolute",
		"urn:air:t.example:x:fileurl",
		"urn:air:t.example:x:inline-leaf", "urn:air:t.example:x:inline-inline",
		// child.json, named again from the inline catalog, adds nothing
		// new: the same entries again are left out without a word.
		"urn:air:t.example:x:bottom",
	}
	if got := entryIDs(entries); !slices.Equal(got, want) {
		t.Fatalf("entries\n%v\nwant\n%v", got, want)
	}

	// A document not read from a file (one a well-known host published)
	// nests inline catalogs only: its paths, relative, absolute or
	// file://, are not read, and each is said; so are /dev/stdin (which
	// would read the gateway's own input) and a remote one.
	data := catalogDoc(append(rootEntries,
		nestedRef("urn:air:t.example:c:stdin", "/dev/stdin"),
		nestedRef("urn:air:t.example:c:remote", "http://127.0.0.1:1/c.json"))...)
	fromBytes, skipped, err := LoadCatalogBytes([]byte(data), "http://127.0.0.1:1")
	wantInline := []string{"urn:air:t.example:x:top", "urn:air:t.example:x:inline-leaf", "urn:air:t.example:x:inline-inline", "urn:air:t.example:x:bottom"}
	if err != nil || !slices.Equal(entryIDs(fromBytes), wantInline) {
		t.Fatalf("LoadCatalogBytes: %v %q %v", err, skipped, entryIDs(fromBytes))
	}
	var said []string
	for _, s := range skipped {
		switch {
		case strings.Contains(s, "is not inline: only a catalog file may nest one by path"), strings.Contains(s, "is not fetched: nest it inline"):
			said = append(said, s[strings.Index(s, "(")+1:strings.Index(s, ")")])
		}
	}
	if want := []string{"urn:air:t.example:c:child", "urn:air:t.example:c:abs", "urn:air:t.example:c:fileurl", "urn:air:t.example:c:inline-ref", "urn:air:t.example:c:stdin", "urn:air:t.example:c:remote"}; !slices.Equal(said, want) {
		t.Fatalf("skipped %q", skipped)
	}
}

func TestLoadCatalogNestingDepth(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			dir := t.TempDir()
			// level i holds leaf i and a catalog entry for level i+1.
			const levels = MaxNestingDepth + 3
			var doc string
			for i := levels - 1; i >= 0; i-- {
				entries := []string{leaf(fmt.Sprintf("urn:air:t.example:x:level%d", i))}
				if i < levels-1 {
					id := fmt.Sprintf("urn:air:t.example:c:to%d", i+1)
					if inline {
						entries = append(entries, nestedInline(id, doc))
					} else {
						entries = append(entries, nestedRef(id, fmt.Sprintf("level%d.json", i+1)))
					}
				}
				doc = catalogDoc(entries...)
				writeFile(t, dir, fmt.Sprintf("level%d.json", i), doc)
			}
			entries, skipped, err := LoadCatalogFile(filepath.Join(dir, "level0.json"))
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for i := 0; i <= MaxNestingDepth; i++ {
				want = append(want, fmt.Sprintf("urn:air:t.example:x:level%d", i))
			}
			if got := entryIDs(entries); !slices.Equal(got, want) {
				t.Fatalf("entries %v; want %v (levels 0..%d)", got, want, MaxNestingDepth)
			}
			tooDeep := fmt.Sprintf("urn:air:t.example:c:to%d", MaxNestingDepth+1)
			if len(skipped) != 1 || len(skippedSaying(skipped, tooDeep, "nested deeper than")) != 1 {
				t.Fatalf("skipped %q; want one message naming %s as nested too deep", skipped, tooDeep)
			}
		})
	}
}

func TestLoadCatalogCycle(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "self.json", catalogDoc(leaf("urn:air:t.example:x:self"), nestedRef("urn:air:t.example:c:self", "self.json")))
	writeFile(t, dir, "a.json", catalogDoc(leaf("urn:air:t.example:x:a"), nestedRef("urn:air:t.example:c:b", "b.json")))
	writeFile(t, dir, "b.json", catalogDoc(leaf("urn:air:t.example:x:b"), nestedRef("urn:air:t.example:c:a", "./a.json")))
	for _, tt := range []struct{ file, leaf string }{{"self.json", "urn:air:t.example:x:self"}, {"a.json", "urn:air:t.example:x:a"}} {
		t.Run(tt.file, func(t *testing.T) {
			type result struct {
				entries []Entry
				skipped []string
				err     error
			}
			done := make(chan result, 1)
			go func() {
				e, s, err := LoadCatalogFile(filepath.Join(dir, tt.file))
				done <- result{e, s, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("loading a catalog cycle does not terminate")
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if !slices.Contains(entryIDs(r.entries), tt.leaf) {
				t.Fatalf("entries %v lack %s", entryIDs(r.entries), tt.leaf)
			}
			if len(skippedSaying(r.skipped, "nested deeper than")) == 0 {
				t.Fatalf("skipped %q: the cycle is not reported", r.skipped)
			}
			// The index keeps one of each, whatever the loader repeats.
			if ix := NewIndex("t", r.entries); tt.file == "self.json" && ix.Len() != 1 {
				t.Fatalf("index of a self-nesting catalog has %d entries", ix.Len())
			}
		})
	}
}

func TestLoadCatalogNestedProblems(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "broken.json", "{\n  \"entries\": [\n    oops\n  ]\n}")
	writeFile(t, dir, "big.json", "")
	if err := os.Truncate(filepath.Join(dir, "big.json"), MaxCatalogSize+1); err != nil {
		t.Fatal(err)
	}
	root := writeFile(t, dir, "root.json", catalogDoc(
		leaf("urn:air:t.example:x:first"),
		nestedRef("urn:air:t.example:c:https", "https://remote.example/catalog.json"),
		nestedRef("urn:air:t.example:c:http", "http://remote.example/catalog.json"),
		nestedRef("urn:air:t.example:c:missing", "missing.json"),
		nestedRef("urn:air:t.example:c:broken", "broken.json"),
		nestedRef("urn:air:t.example:c:big", "big.json"),
		nestedInline("urn:air:t.example:c:inline-bad", `{"specVersion": "1.0"}`),
		leaf("urn:air:t.example:x:last"),
	))
	entries, skipped, err := LoadCatalogFile(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := entryIDs(entries), []string{"urn:air:t.example:x:first", "urn:air:t.example:x:last"}; !slices.Equal(got, want) {
		t.Fatalf("entries %v; want %v", got, want)
	}
	tests := []struct {
		id      string
		phrases []string
	}{
		{"urn:air:t.example:c:https", []string{"remote nested catalog", "https://remote.example/catalog.json"}},
		{"urn:air:t.example:c:http", []string{"remote nested catalog", "http://remote.example/catalog.json"}},
		{"urn:air:t.example:c:missing", []string{"missing.json"}},
		{"urn:air:t.example:c:broken", []string{"line 3"}},
		{"urn:air:t.example:c:big", []string{"larger than"}},
		{"urn:air:t.example:c:inline-bad", []string{`no "entries"`}},
	}
	for _, tt := range tests {
		if got := skippedSaying(skipped, append([]string{tt.id}, tt.phrases...)...); len(got) != 1 {
			t.Errorf("%s: want one message saying %q; skipped:\n%s", tt.id, tt.phrases, strings.Join(skipped, "\n"))
		}
	}
	if len(skipped) != len(tests) {
		t.Errorf("%d messages, want %d:\n%s", len(skipped), len(tests), strings.Join(skipped, "\n"))
	}
}

func TestLoadCatalogBadEntries(t *testing.T) {
	good := leaf("urn:air:t.example:x:good")
	tests := []struct {
		name    string
		entry   string
		phrases []string // the message names the entry and says why
	}{
		{"bad URN", `{"identifier": "urn:x:foo", "displayName": "A", "type": "t", "url": "https://a.example/u"}`, []string{"entries[0]", "urn:x:foo", "not an ARD URN"}},
		{"bad publisher", `{"identifier": "urn:air:a..b:x", "displayName": "A", "type": "t", "url": "https://a.example/u"}`, []string{"entries[0]", "urn:air:a..b:x", "publisher"}},
		{"no identifier", `{"displayName": "A", "type": "t", "url": "https://a.example/u"}`, []string{"entries[0]", "not an ARD URN"}},
		{"missing displayName", `{"identifier": "urn:air:t.example:x:a", "type": "t", "url": "https://a.example/u"}`, []string{"entries[0]", "urn:air:t.example:x:a", "displayName is missing"}},
		{"blank displayName", `{"identifier": "urn:air:t.example:x:a", "displayName": "  ", "type": "t", "url": "https://a.example/u"}`, []string{"entries[0]", "urn:air:t.example:x:a", "displayName is missing"}},
		{"missing type", `{"identifier": "urn:air:t.example:x:a", "displayName": "A", "url": "https://a.example/u"}`, []string{"entries[0]", "urn:air:t.example:x:a", "type is missing"}},
		{"both url and data", `{"identifier": "urn:air:t.example:x:a", "displayName": "A", "type": "t", "url": "https://a.example/u", "data": {}}`, []string{"entries[0]", "urn:air:t.example:x:a", "both url and data"}},
		{"neither url nor data", `{"identifier": "urn:air:t.example:x:a", "displayName": "A", "type": "t"}`, []string{"entries[0]", "urn:air:t.example:x:a", "neither url nor data"}},
		{"data not an object", `{"identifier": "urn:air:t.example:x:a", "displayName": "A", "type": "t", "data": [1, 2]}`, []string{"entries[0]", "urn:air:t.example:x:a", "not a JSON object"}},
		{"data null", `{"identifier": "urn:air:t.example:x:a", "displayName": "A", "type": "t", "data": null}`, []string{"entries[0]", "urn:air:t.example:x:a"}},
		{"type a number", `{"identifier": "urn:air:t.example:x:a", "displayName": "A", "type": 42, "url": "https://a.example/u"}`, []string{"entries[0]", "type"}},
		{"url not http", `{"identifier": "urn:air:t.example:x:a", "displayName": "A", "type": "t", "url": "ftp://x"}`, []string{"entries[0]", "urn:air:t.example:x:a", `url "ftp://x" is not an absolute http(s) URL`}},
		{"tags a string", `{"identifier": "urn:air:t.example:x:a", "displayName": "A", "type": "t", "url": "https://a.example/u", "tags": "x"}`, []string{"entries[0]", "tags"}},
		{"entry not an object", `"urn:air:t.example:x:a"`, []string{"entries[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "c.json", catalogDoc(tt.entry, good))
			entries, skipped, err := LoadCatalogFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := entryIDs(entries); !slices.Equal(got, []string{"urn:air:t.example:x:good"}) {
				t.Fatalf("entries %v; want only the good one", got)
			}
			if len(skipped) != 1 || len(skippedSaying(skipped, append([]string{path}, tt.phrases...)...)) != 1 {
				t.Fatalf("skipped %q; want one message naming %s and saying %q", skipped, path, tt.phrases)
			}
		})
	}
}

// The repository's invalid catalog loads its good entries and names each
// bad one.
func TestLoadCatalogInvalidFixture(t *testing.T) {
	entries, skipped, err := LoadCatalogFile("../testdata/catalogs/invalid.json")
	if err != nil {
		t.Fatal(err)
	}
	// one-query breaks the schema, not the loader's rules; of the two
	// dups the first loads, the second is said to be left out.
	want := []string{"urn:air:ardgate.test:mcp:one-query", "urn:air:ardgate.test:mcp:dup"}
	if len(skippedSaying(skipped, "urn:air:ardgate.test:mcp:dup is listed more than once; the first entry is kept")) != 1 {
		t.Errorf("skipped %q: the second dup not named", skipped)
	}
	if got := entryIDs(entries); !slices.Equal(got, want) {
		t.Fatalf("entries %v; want %v", got, want)
	}
	for _, phrases := range [][]string{
		{"entries[0]", "urn:air:ardgate.test:mcp:no-name", "displayName"},
		{"entries[1]", "urn:air:ardgate.test:mcp:both", "both url and data"},
		{"entries[2]", "urn:air:ardgate.test:mcp:neither", "neither url nor data"},
		{"entries[3]", "urn:x:foo", "not an ARD URN"},
		{"entries[5]", `"type" is a JSON number; it must be a string`},
	} {
		if len(skippedSaying(skipped, phrases...)) != 1 {
			t.Errorf("no message saying %q:\n%s", phrases, strings.Join(skipped, "\n"))
		}
	}
	if len(skipped) != 6 {
		t.Errorf("%d messages; want 6:\n%s", len(skipped), strings.Join(skipped, "\n"))
	}
	ix := NewIndex("t", entries)
	if e, err := ix.Lookup("urn:air:ardgate.test:mcp:dup"); err != nil || e.DisplayName != "First of a duplicate pair" {
		t.Fatalf("duplicate: %+v %v; want the first", e, err)
	}
}

func TestLoadCatalogFileErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content string
		phrase  string
	}{
		{"malformed JSON", "{\n  \"specVersion\": \"1.0\",\n  \"entries\": [\n    {\"identifier\": \"x\",}\n  ]\n}", "line 4"},
		{"malformed on line 1", "{oops}", "line 1"},
		{"truncated", "{\n\"entries\": [\n", "line 3"},
		{"trailing data", "{\"entries\": []}\n\n]", "line 3"},
		{"empty file", "", "line 1"},
		{"not an object", "[]", "cannot unmarshal"},
		{"no entries", `{"specVersion": "1.0"}`, `no "entries"`},
		{"entries null", `{"specVersion": "1.0", "entries": null}`, `no "entries"`},
		{"entries not an array", `{"specVersion": "1.0", "entries": {}}`, "entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "-")+".json", tt.content)
			entries, _, err := LoadCatalogFile(path)
			if err == nil {
				t.Fatalf("loaded %d entries from %q", len(entries), tt.content)
			}
			if !strings.Contains(err.Error(), tt.phrase) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file and say %q", err, tt.phrase)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		if _, _, err := LoadCatalogFile(filepath.Join(dir, "nope.json")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%v; want fs.ErrNotExist", err)
		}
	})
	t.Run("a directory", func(t *testing.T) {
		if _, _, err := LoadCatalogFile(dir); err == nil {
			t.Fatal("a directory loaded as a catalog")
		}
	})
}

func TestLoadCatalogFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: cheap to make, over the cap by one byte.
	if err := f.Truncate(MaxCatalogSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, _, err = LoadCatalogFile(path)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("%v; want a refusal over %d bytes", err, MaxCatalogSize)
	}
}

func TestLoadCatalogBytesBuiltin(t *testing.T) {
	entries, skipped, err := LoadCatalogBytes(BuiltinCatalog(), ".")
	if err != nil || len(skipped) > 0 {
		t.Fatalf("%v %q", err, skipped)
	}
	if len(entries) != 6 {
		t.Fatalf("%d builtin entries; want 6", len(entries))
	}
	for _, e := range entries {
		if err := checkEntry(&e); err != nil || len(e.Data) == 0 || !json.Valid(e.Data) {
			t.Errorf("%s: %v", e.Identifier, err)
		}
	}
}

func TestParseCatalogTolerant(t *testing.T) {
	doc := `{"specVersion": "1.0", "unknown": 1, "host": {"displayName": "h", "x": 2},
	  "entries": [{"identifier": "urn:air:a.example:x", "displayName": "A", "type": "t", "url": "https://a.example/u", "mediaType": "t", "future": {"a": 1}},
	              {"identifier": "urn:air:b.example:x", "displayName": "B", "type": "t", "url": "https://a.example/u", "metadata": {"n": 1.5}}]}`
	c, skipped, err := ParseCatalog([]byte(doc))
	if err != nil || len(skipped) > 0 || len(c.Entries) != 2 || c.SpecVersion != "1.0" || len(c.Host) == 0 {
		t.Fatalf("%v %q %+v", err, skipped, c)
	}
	if c.Entries[1].Metadata["n"] != 1.5 {
		t.Fatalf("metadata %v", c.Entries[1].Metadata)
	}
}

// A catalog file's results name it by its file name, not its path: the
// results go to clients, who learnt where the operator keeps files.
func TestCatalogSource(t *testing.T) {
	abs, err := filepath.Abs("../testdata/catalogs/fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{abs: "catalog:fixture.json", "": "builtin:ai-catalog.json"} {
		r, err := Open(config.Registry{ID: "c", Kind: config.KindCatalog, Path: path}, OpenOptions{Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		page, err := r.Search(context.Background(), Query{Text: "echo"})
		if err != nil || len(page.Results) == 0 {
			t.Fatalf("%q: %v %v", path, err, page)
		}
		if got := page.Results[0].Source; got != want {
			t.Errorf("%q: source %q, want %q", path, got, want)
		}
	}
}

// An operator's catalog that holds a builtin entry again (a copy with its
// own arguments) is warned of at start: attach_resource takes the first.
func TestShadowedURNsWarned(t *testing.T) {
	mine := filepath.Join(t.TempDir(), "mine.json")
	if err := os.WriteFile(mine, builtinCatalog, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	regs, err := OpenAll([]config.Registry{{ID: config.BuiltinRegistryID, Kind: config.KindCatalog}, {ID: "mine", Kind: config.KindCatalog, Path: mine}}, OpenOptions{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	n := len(regs[0].(*Local).Index().Entries())
	if got := strings.Count(logs.String(), "taken_from=builtin passed_over=mine"); got != n || !strings.Contains(logs.String(), "urn=urn:air:modelcontextprotocol.io:mcp:filesystem") {
		t.Fatalf("%d warnings of %d shadowed entries:\n%s", got, n, logs.String())
	}
}
