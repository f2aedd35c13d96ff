package registry

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/ardgate/ardgate/config"
)

//go:embed schema/ai-catalog.schema.json
var catalogSchemaJSON []byte

const catalogSchemaURL = "https://ardgate.local/schema/ai-catalog.schema.json"

var catalogSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(catalogSchemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(catalogSchemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(catalogSchemaURL)
})

// ValidateCatalog checks a catalog document against the ARD catalog JSON
// Schema and the rules the schema cannot say: URN syntax, value or
// reference, unique identifiers. It returns one sentence per violation,
// located by JSON path; none means valid.
func ValidateCatalog(data []byte) []string {
	inst, bad := decodeCatalog(data)
	if bad != nil {
		return bad
	}
	sch, err := catalogSchema()
	if err != nil {
		return []string{"internal error: catalog schema does not compile: " + err.Error()}
	}
	entries := looseEntries(data)
	out := schemaViolations(sch, inst, entries)
	out = append(out, entryViolations(entries)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// decodeCatalog decodes data for the schema, or says where it is not JSON.
func decodeCatalog(data []byte) (any, []string) {
	// encoding/json locates every syntax error (empty, truncated, trailing
	// data too), which the schema library's decoder does not.
	if !json.Valid(data) {
		var v any
		return nil, []string{"$: not JSON: " + config.JSONError(data, json.Unmarshal(data, &v)).Error()}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, []string{"$: not JSON: " + config.JSONError(data, err).Error()}
	}
	return inst, nil
}

// catalogEntries holds a catalog's entries decoded loosely, so that every
// message names its entry by identifier, even when one of the entry's
// fields is of the wrong type.
type catalogEntries struct {
	raw []map[string]json.RawMessage
	ids []string
}

func looseEntries(data []byte) catalogEntries {
	var loose struct {
		Entries []map[string]json.RawMessage `json:"entries"`
	}
	_ = json.Unmarshal(data, &loose)
	ids := make([]string, len(loose.Entries))
	for i, e := range loose.Entries {
		_ = json.Unmarshal(e["identifier"], &ids[i])
	}
	return catalogEntries{raw: loose.Entries, ids: ids}
}

// where renders an instance location as a JSON path, naming the entry by
// its identifier when it has one.
func (c catalogEntries) where(loc []string) string {
	if len(loc) >= 2 && loc[0] == "entries" {
		if i, err := strconv.Atoi(loc[1]); err == nil && i < len(c.ids) && c.ids[i] != "" {
			return fmt.Sprintf("$.entries[%d] (%s)%s", i, c.ids[i], strings.TrimPrefix(jsonPath(loc[2:]), "$"))
		}
	}
	return jsonPath(loc)
}

// schemaViolations says each leaf failure of the schema, less those the
// entry rules say better.
func schemaViolations(sch *jsonschema.Schema, inst any, entries catalogEntries) []string {
	var verr *jsonschema.ValidationError
	if err := sch.Validate(inst); !errors.As(err, &verr) {
		return nil
	}
	var out []string
	for _, leaf := range leaves(verr) {
		if saidByEntryRules(leaf) {
			continue
		}
		if extra, ok := leaf.ErrorKind.(*kind.AdditionalProperties); ok {
			slices.Sort(extra.Properties) // named in map order: a line differed from run to run
		}
		out = append(out, fmt.Sprintf("%s: %s", entries.where(leaf.InstanceLocation), leaf.ErrorKind.LocalizedString(printer)))
	}
	return out
}

// saidByEntryRules reports a failure the entry rules say in words: the
// oneOf over url/data reads badly from the schema, and the identifier
// pattern says less than the URN parser.
func saidByEntryRules(leaf *jsonschema.ValidationError) bool {
	if _, isOneOf := leaf.ErrorKind.(*kind.OneOf); isOneOf || strings.Contains(leaf.SchemaURL, "/oneOf/") {
		return true
	}
	_, isPattern := leaf.ErrorKind.(*kind.Pattern)
	loc := leaf.InstanceLocation
	return isPattern && len(loc) == 3 && loc[2] == "identifier"
}

// entryViolations applies the rules the schema cannot say to each entry.
func entryViolations(entries catalogEntries) []string {
	var out []string
	seen := map[string]int{}
	for i, e := range entries.raw {
		at := entries.where([]string{"entries", strconv.Itoa(i)})
		out = append(out, identifierViolations(at, i, entries.ids[i], seen)...)
		out = append(out, displayNameViolations(at, e)...)
		out = append(out, locationViolations(at, e)...)
	}
	return out
}

// identifierViolations checks an identifier's URN syntax and that no
// earlier entry has it; seen maps canonical identifiers to their entries.
func identifierViolations(at string, i int, id string, seen map[string]int) []string {
	if id == "" {
		return nil
	}
	var out []string
	if _, err := ParseURN(id); err != nil {
		out = append(out, fmt.Sprintf("%s: identifier: %v", at, err))
	}
	key := CanonicalURN(id)
	if prev, dup := seen[key]; dup {
		return append(out, fmt.Sprintf("%s: identifier duplicates $.entries[%d]", at, prev))
	}
	seen[key] = i
	return out
}

// displayNameViolations flags a blank name. The schema asks only that it
// be there; the loaders drop an entry whose name is blank.
func displayNameViolations(at string, e map[string]json.RawMessage) []string {
	name, ok := e["displayName"]
	if !ok {
		return nil
	}
	var dn string
	if json.Unmarshal(name, &dn) == nil && strings.TrimSpace(dn) == "" {
		return []string{at + ": displayName is blank; the catalog loaders leave such an entry out"}
	}
	return nil
}

// locationViolations checks that an entry is a value or a reference, and
// that a reference is an http(s) URL unless it names a nested catalog.
func locationViolations(at string, e map[string]json.RawMessage) []string {
	var out []string
	rawURL, hasURL := e["url"]
	_, hasData := e["data"]
	var u, typ string
	_ = json.Unmarshal(rawURL, &u)
	_ = json.Unmarshal(e["type"], &typ)
	if u != "" && typ != MediaCatalog && !httpURL(u) {
		out = append(out, fmt.Sprintf("%s: url %q is not an absolute http(s) URL (only a nested catalog's may be a file path)", at, u))
	}
	switch {
	case hasURL && hasData:
		out = append(out, at+": has both url and data; an entry is a value (data) or a reference (url), not both")
	case !hasURL && !hasData:
		out = append(out, at+": has neither url nor data; give the artifact inline (data) or by reference (url)")
	}
	return out
}

var printer = message.NewPrinter(language.English)

func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func jsonPath(loc []string) string {
	var b strings.Builder
	b.WriteString("$")
	for _, seg := range loc {
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
		} else {
			b.WriteString("." + seg)
		}
	}
	return b.String()
}
