package registry

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// filter is a compiled ARD filter: every clause must match (AND across
// keys); a clause matches when any value at its path equals any accepted
// value (OR within a key, any element of an array).
type filter []clause

type clause struct {
	path   []string
	values []string // lower-cased; a trailing "*" is a prefix glob
}

// Limits on filters: they come from the model, which may be steered by
// injected text.
const (
	maxFilterKeys   = 16
	maxFilterValues = 64
)

// CheckFilter refuses a filter that no registry would take (an unknown
// field, too many keys or values), with ErrInvalidArgument and a sentence,
// so that a caller can say so once rather than once per registry.
func CheckFilter(m map[string][]string) error {
	_, err := compileFilter(m)
	return err
}

func compileFilter(m map[string][]string) (filter, error) {
	if len(m) > maxFilterKeys {
		return nil, fmt.Errorf("%w: filter has %d keys, at most %d are allowed", ErrInvalidArgument, len(m), maxFilterKeys)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	f := make(filter, 0, len(m))
	for _, k := range keys {
		vals := m[k]
		if err := CheckFieldPath(k); err != nil {
			return nil, fmt.Errorf("filter: %w", err)
		}
		path := strings.Split(k, ".")
		if len(vals) == 0 {
			return nil, fmt.Errorf("%w: filter key %q has no values", ErrInvalidArgument, k)
		}
		if len(vals) > maxFilterValues {
			return nil, fmt.Errorf("%w: filter key %q has %d values, at most %d are allowed", ErrInvalidArgument, k, len(vals), maxFilterValues)
		}
		c := clause{path: path}
		for _, v := range vals {
			c.values = append(c.values, strings.ToLower(v))
		}
		f = append(f, c)
	}
	return f, nil
}

func (f filter) match(e *Entry) bool {
	for _, c := range f {
		if !c.match(e) {
			return false
		}
	}
	return true
}

// matching returns the results whose entries f matches, in order.
func (f filter) matching(results []Result) []Result {
	var kept []Result
	for _, r := range results {
		if f.match(&r.Entry) {
			kept = append(kept, r)
		}
	}
	return kept
}

func (c clause) match(e *Entry) bool {
	for _, got := range fieldValues(e, c.path) {
		got = strings.ToLower(got)
		for _, want := range c.values {
			if prefix, ok := strings.CutSuffix(want, "*"); ok {
				if strings.HasPrefix(got, prefix) {
					return true
				}
			} else if got == want {
				return true
			}
		}
	}
	return false
}

// Field paths an entry has: fields holding scalars or lists of them, and
// fields holding objects, under which any dot path is allowed. Keep them
// in step with fieldReaders.
var (
	scalarFields = []string{"identifier", "displayName", "type", "url", "description", "version", "updatedAt",
		"publisher", "tags", "capabilities", "representativeQueries"}
	objectFields = []string{"metadata", "data", "trustManifest"}
)

// CheckFieldPath refuses dot paths that name no field of an entry, with
// ErrInvalidArgument and a sentence listing what exists.
func CheckFieldPath(path string) error {
	parts := strings.Split(path, ".")
	switch {
	case slices.Contains(parts, ""):
		return fmt.Errorf("%w: %q is not a dot path like \"tags\" or \"trustManifest.identity\"", ErrInvalidArgument, path)
	case slices.Contains(scalarFields, parts[0]) && len(parts) == 1, slices.Contains(objectFields, parts[0]) && len(parts) > 1:
		return nil
	}
	return fmt.Errorf("%w: field %q does not exist; use one of %s, or a path under %s (e.g. \"metadata.owner\")",
		ErrInvalidArgument, path, strings.Join(scalarFields, ", "), strings.Join(objectFields, ", "))
}

// Values returns the scalar values at a dot path in the entry (as a filter
// or facet reads them), flattening arrays; "publisher" is derived from the
// identifier.
func (e *Entry) Values(path string) []string {
	parts := strings.Split(path, ".")
	if slices.Contains(parts, "") {
		return nil
	}
	return fieldValues(e, parts)
}

// fieldValues returns the scalar values found at path in e, flattening
// arrays on the way. Fields that hold no typed Go value (data,
// trustManifest, metadata) are walked as JSON.
func fieldValues(e *Entry, path []string) []string {
	if read, ok := fieldReaders[path[0]]; ok {
		return read(e, path[1:])
	}
	return nil
}

// fieldReaders read each field of an entry: the values at rest, a path
// under it, which only an object field has. They hold scalarFields and
// objectFields.
var fieldReaders = map[string]func(e *Entry, rest []string) []string{
	"identifier":            scalarField(func(e *Entry) string { return e.Identifier }),
	"displayName":           scalarField(func(e *Entry) string { return e.DisplayName }),
	"type":                  scalarField(func(e *Entry) string { return e.Type }),
	"url":                   scalarField(func(e *Entry) string { return e.URL }),
	"description":           scalarField(func(e *Entry) string { return e.Description }),
	"version":               scalarField(func(e *Entry) string { return e.Version }),
	"updatedAt":             scalarField(func(e *Entry) string { return e.UpdatedAt }),
	"publisher":             scalarField((*Entry).Publisher),
	"tags":                  listField(func(e *Entry) []string { return e.Tags }),
	"capabilities":          listField(func(e *Entry) []string { return e.Capabilities }),
	"representativeQueries": listField(func(e *Entry) []string { return e.RepresentativeQueries }),
	"metadata":              func(e *Entry, rest []string) []string { return walk(map[string]any(e.Metadata), rest, nil) },
	"data":                  func(e *Entry, rest []string) []string { return walkRaw(e.Data, rest) },
	"trustManifest":         func(e *Entry, rest []string) []string { return walkRaw(e.TrustManifest, rest) },
}

// scalarField reads a string field, which holds nothing under it.
func scalarField(get func(*Entry) string) func(*Entry, []string) []string {
	return func(e *Entry, rest []string) []string {
		if s := get(e); s != "" && len(rest) == 0 {
			return []string{s}
		}
		return nil
	}
}

// listField reads a list of strings, which holds nothing under it.
func listField(get func(*Entry) []string) func(*Entry, []string) []string {
	return func(e *Entry, rest []string) []string {
		if len(rest) > 0 {
			return nil
		}
		return get(e)
	}
}

func walkRaw(raw json.RawMessage, path []string) []string {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return walk(v, path, nil)
}

func walk(v any, path []string, out []string) []string {
	switch t := v.(type) {
	case []any:
		for _, el := range t {
			out = walk(el, path, out)
		}
		return out
	case map[string]any:
		if len(path) == 0 {
			return out
		}
		return walk(t[path[0]], path[1:], out)
	}
	if len(path) > 0 {
		return out
	}
	switch t := v.(type) {
	case string:
		return append(out, t)
	case float64:
		return append(out, strconv.FormatFloat(t, 'f', -1, 64))
	case bool:
		return append(out, strconv.FormatBool(t))
	}
	return out
}
