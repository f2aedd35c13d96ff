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
// in step with fieldValues.
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
	one := func(s string) []string {
		if s == "" || len(path) > 1 {
			return nil
		}
		return []string{s}
	}
	many := func(s []string) []string {
		if len(path) > 1 {
			return nil
		}
		return s
	}
	switch path[0] {
	case "identifier":
		return one(e.Identifier)
	case "displayName":
		return one(e.DisplayName)
	case "type":
		return one(e.Type)
	case "url":
		return one(e.URL)
	case "description":
		return one(e.Description)
	case "version":
		return one(e.Version)
	case "updatedAt":
		return one(e.UpdatedAt)
	case "publisher":
		return one(e.Publisher())
	case "tags":
		return many(e.Tags)
	case "capabilities":
		return many(e.Capabilities)
	case "representativeQueries":
		return many(e.RepresentativeQueries)
	case "metadata":
		return walk(map[string]any(e.Metadata), path[1:], nil)
	case "data":
		return walkRaw(e.Data, path[1:])
	case "trustManifest":
		return walkRaw(e.TrustManifest, path[1:])
	}
	return nil
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
