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
	// encoding/json locates every syntax error (empty, truncated, trailing
	// data too), which the schema library's decoder does not.
	if !json.Valid(data) {
		var v any
		return []string{"$: not JSON: " + config.JSONError(data, json.Unmarshal(data, &v)).Error()}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return []string{"$: not JSON: " + config.JSONError(data, err).Error()}
	}
	sch, err := catalogSchema()
	if err != nil {
		return []string{"internal error: catalog schema does not compile: " + err.Error()}
	}
	// A loose decode names entries by identifier in every message, even
	// when one of their fields is of the wrong type.
	var loose struct {
		Entries []map[string]json.RawMessage `json:"entries"`
	}
	_ = json.Unmarshal(data, &loose)
	ids := make([]string, len(loose.Entries))
	for i, e := range loose.Entries {
		_ = json.Unmarshal(e["identifier"], &ids[i])
	}
	where := func(loc []string) string {
		if len(loc) >= 2 && loc[0] == "entries" {
			if i, err := strconv.Atoi(loc[1]); err == nil && i < len(ids) && ids[i] != "" {
				return fmt.Sprintf("$.entries[%d] (%s)%s", i, ids[i], strings.TrimPrefix(jsonPath(loc[2:]), "$"))
			}
		}
		return jsonPath(loc)
	}

	var out []string
	var verr *jsonschema.ValidationError
	if err := sch.Validate(inst); errors.As(err, &verr) {
		for _, leaf := range leaves(verr) {
			// The oneOf over url/data reads badly from the schema, and the
			// identifier pattern says less than the URN parser: the entry
			// rules below say both in words.
			_, isOneOf := leaf.ErrorKind.(*kind.OneOf)
			_, isPattern := leaf.ErrorKind.(*kind.Pattern)
			if isOneOf || strings.Contains(leaf.SchemaURL, "/oneOf/") || isPattern && len(leaf.InstanceLocation) == 3 && leaf.InstanceLocation[2] == "identifier" {
				continue
			}
			if extra, ok := leaf.ErrorKind.(*kind.AdditionalProperties); ok {
				slices.Sort(extra.Properties) // named in map order: a line differed from run to run
			}
			out = append(out, fmt.Sprintf("%s: %s", where(leaf.InstanceLocation), leaf.ErrorKind.LocalizedString(printer)))
		}
	}

	seen := map[string]int{}
	for i, e := range loose.Entries {
		at := where([]string{"entries", strconv.Itoa(i)})
		if id := ids[i]; id != "" {
			if _, err := ParseURN(id); err != nil {
				out = append(out, fmt.Sprintf("%s: identifier: %v", at, err))
			}
			key := CanonicalURN(id)
			if prev, dup := seen[key]; dup {
				out = append(out, fmt.Sprintf("%s: identifier duplicates $.entries[%d]", at, prev))
			} else {
				seen[key] = i
			}
		}
		// The schema asks only that it be there; the loaders drop an entry
		// whose name is blank, and validate said nothing of it.
		if name, ok := e["displayName"]; ok {
			var dn string
			if json.Unmarshal(name, &dn) == nil && strings.TrimSpace(dn) == "" {
				out = append(out, at+": displayName is blank; the catalog loaders leave such an entry out")
			}
		}
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
	}
	slices.Sort(out)
	return slices.Compact(out)
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
