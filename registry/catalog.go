package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/ardgate/ardgate/config"
)

// Limits on catalog documents: a catalog is data from outside.
const (
	// MaxCatalogSize bounds one catalog document.
	MaxCatalogSize = 64 << 20
	// MaxNestingDepth bounds application/ai-catalog+json nesting.
	MaxNestingDepth = 4
)

// ParseCatalog decodes a catalog document. It is tolerant: unknown fields
// are ignored (ValidateCatalog reports them), and an entry that does not
// decode is returned in skipped rather than failing the document.
func ParseCatalog(data []byte) (c *Catalog, skipped []string, err error) {
	var doc struct {
		SpecVersion string            `json:"specVersion"`
		Host        json.RawMessage   `json:"host"`
		Entries     []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, config.JSONError(data, err)
	}
	if doc.Entries == nil {
		return nil, nil, errors.New(`catalog has no "entries" array`)
	}
	c = &Catalog{SpecVersion: doc.SpecVersion, Host: doc.Host, Entries: make([]Entry, 0, len(doc.Entries))}
	for i, raw := range doc.Entries {
		var e Entry
		if err := json.Unmarshal(raw, &e); err != nil {
			skipped = append(skipped, fmt.Sprintf("entries[%d]: %v", i, config.JSONTypeError(err)))
			continue
		}
		c.Entries = append(c.Entries, e)
	}
	return c, skipped, nil
}

// LoadCatalogFile reads a catalog file and the nested catalogs it points
// at, returning the flattened entries. Problems with single entries do not
// fail the load: the entry is left out and the problem is returned in
// skipped, one sentence each, for the operator's log.
func LoadCatalogFile(path string) (entries []Entry, skipped []string, err error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, nil, err
	}
	return loadCatalog(data, path, true)
}

// LoadCatalogBytes is LoadCatalogFile for a document not read from a file
// (the builtin catalog, one a host published), named name in what it
// says. Its nested catalogs must be inline: a path in a document fetched
// from a host would have the gateway read its own files (and publish
// them as the host's entries, or read its stdin for /dev/stdin).
func LoadCatalogBytes(data []byte, name string) (entries []Entry, skipped []string, err error) {
	return loadCatalog(data, name, false)
}

// loadCatalog flattens the catalog data, read from the file at path
// when fromFile is set, else named path.
func loadCatalog(data []byte, path string, fromFile bool) ([]Entry, []string, error) {
	entries, skipped, err := flattenCatalog(data, path, fromFile, 0)
	if err != nil {
		return nil, skipped, err
	}
	entries, again := Unseen(entries, map[string]Entry{})
	for _, urn := range again {
		skipped = append(skipped, fmt.Sprintf("%s: %s is listed more than once; the first entry is kept", path, urn))
	}
	return entries, skipped, nil
}

// Unseen keeps the entries whose URN seen does not hold, adding them to
// it; again lists the URNs of those left out that differ from the entry
// kept (the same entry twice, as a catalog nested twice gives, is left
// out without a word). An index keeps the first entry of a URN: with
// Unseen the others are said to be left out, not dropped silently.
func Unseen(entries []Entry, seen map[string]Entry) (kept []Entry, again []string) {
	kept = entries[:0:0]
	for _, e := range entries {
		k := CanonicalURN(e.Identifier)
		if first, ok := seen[k]; ok {
			if !reflect.DeepEqual(first, e) {
				again = append(again, e.Identifier)
			}
			continue
		}
		seen[k] = e
		kept = append(kept, e)
	}
	return kept, again
}

func flattenCatalog(data []byte, path string, fromFile bool, depth int) ([]Entry, []string, error) {
	c, bad, err := ParseCatalog(data)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	var out []Entry
	var skipped []string
	for _, b := range bad {
		skipped = append(skipped, path+": "+b)
	}
	for i, e := range c.Entries {
		where := fmt.Sprintf("%s: entries[%d] (%s)", path, i, e.Identifier)
		if err := checkEntry(&e); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		if e.Type != MediaCatalog {
			out = append(out, e)
			continue
		}
		if depth+1 > MaxNestingDepth {
			skipped = append(skipped, fmt.Sprintf("%s: nested deeper than %d catalogs", where, MaxNestingDepth))
			continue
		}
		nested, nestedPath, err := nestedCatalog(&e, path, fromFile)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		sub, subSkipped, err := flattenCatalog(nested, nestedPath, fromFile, depth+1)
		skipped = append(skipped, subSkipped...)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		out = append(out, sub...)
	}
	return out, skipped, nil
}

// nestedCatalog returns the document of a nested catalog entry: inline
// data, or, in a catalog read from the file at parent (fromFile), a file
// path relative to it. Remote nested catalogs are not fetched.
func nestedCatalog(e *Entry, parent string, fromFile bool) ([]byte, string, error) {
	if len(e.Data) > 0 {
		return e.Data, parent + "#" + e.Identifier, nil
	}
	ref := e.URL
	switch {
	case strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://"):
		return nil, "", fmt.Errorf("remote nested catalog %.200q is not fetched: nest it inline", ref)
	case !fromFile:
		return nil, "", fmt.Errorf("nested catalog %.200q is not inline: only a catalog file may nest one by path", ref)
	}
	ref = strings.TrimPrefix(ref, "file://")
	if !filepath.IsAbs(ref) {
		ref = filepath.Join(filepath.Dir(parent), ref)
	}
	data, err := readLimited(ref)
	return data, ref, err
}

// checkEntry holds the rules an entry must meet to be indexed at all.
func checkEntry(e *Entry) error {
	if _, err := ParseURN(e.Identifier); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(e.DisplayName) == "":
		return errors.New("displayName is missing")
	case e.Type == "":
		return errors.New("type is missing")
	case e.URL == "" && len(e.Data) == 0:
		return errors.New("has neither url nor data")
	case e.URL != "" && len(e.Data) > 0:
		return errors.New("has both url and data; an entry is a value or a reference, not both")
	case len(e.Data) > 0 && e.Data[0] != '{':
		return errors.New("data is not a JSON object")
	case e.URL != "" && e.Type != MediaCatalog && !httpURL(e.URL):
		return fmt.Errorf("url %q is not an absolute http(s) URL (only a nested catalog's may be a file path)", e.URL)
	}
	return nil
}

// httpURL reports whether s is an absolute http(s) URL with a host, as an
// entry's url must be but for a nested catalog's.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxCatalogSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxCatalogSize {
		return nil, fmt.Errorf("%s is larger than %d MiB", path, MaxCatalogSize>>20)
	}
	return data, nil
}
