// Package registry holds ARD catalogs, the search index over them, and the
// registries the gateway queries.
package registry

import (
	"encoding/json"
	"errors"
)

// Media types of catalog entries that are not attachable artifacts.
const (
	MediaCatalog  = "application/ai-catalog+json"
	MediaRegistry = "application/ai-registry+json"
)

// Entry is one ARD catalog entry. Exactly one of URL and Data is set.
type Entry struct {
	Identifier            string          `json:"identifier"`
	DisplayName           string          `json:"displayName"`
	Type                  string          `json:"type"`
	URL                   string          `json:"url,omitempty"`
	Data                  json.RawMessage `json:"data,omitempty"`
	Description           string          `json:"description,omitempty"`
	Tags                  []string        `json:"tags,omitempty"`
	Capabilities          []string        `json:"capabilities,omitempty"`
	RepresentativeQueries []string        `json:"representativeQueries,omitempty"`
	Version               string          `json:"version,omitempty"`
	UpdatedAt             string          `json:"updatedAt,omitempty"`
	Metadata              map[string]any  `json:"metadata,omitempty"`
	TrustManifest         json.RawMessage `json:"trustManifest,omitempty"`
}

// Publisher returns the publisher domain derived from the identifier, or ""
// when the identifier is not a URN.
func (e *Entry) Publisher() string {
	u, err := ParseURN(e.Identifier)
	if err != nil {
		return ""
	}
	return u.Publisher
}

// Catalog is an ai-catalog.json document.
type Catalog struct {
	SpecVersion string          `json:"specVersion"`
	Host        json.RawMessage `json:"host,omitempty"`
	Entries     []Entry         `json:"entries"`
}

// Query is one search over a registry.
type Query struct {
	// Text is matched against names, descriptions, tags, capabilities and
	// representative queries.
	Text string
	// Filter maps dot paths into the entry to accepted values: OR within a
	// key, AND across keys. An array field matches if any element does.
	Filter map[string][]string
	// PageSize is the number of results wanted (1..100, default 10).
	PageSize int
	// PageToken continues an earlier search.
	PageToken string
}

// Result is one ranked entry.
type Result struct {
	Entry
	// Score is relevance from 0 to 100, never trust.
	Score int `json:"score"`
	// Source names where the entry was indexed.
	Source string `json:"source"`
}

// Page is one page of search results.
type Page struct {
	Results   []Result `json:"results"`
	Referrals []Entry  `json:"referrals,omitempty"`
	PageToken string   `json:"pageToken,omitempty"`
	// Matched is how many entries matched in all, on every page, where
	// the registry says (an Index does); 0 when it does not.
	Matched int `json:"-"`
	// Read holds the words of the query that no entry held and were read
	// as near ones, when the registry's ranking is ardgate's own.
	Read []Reading `json:"-"`
}

// Sentinel errors callers test for.
var (
	// ErrNotFound: no entry with that URN.
	ErrNotFound = errors.New("not found")
	// ErrInvalidArgument: the query is malformed (bad filter, page token…).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrTooLarge: a registry's answer was over the size cap.
	ErrTooLarge = errors.New("response over the size cap")
	// ErrUnreachable: a remote registry gave no answer (refused, reset,
	// timed out, or its answer broke off).
	ErrUnreachable = errors.New("did not answer")
)

// Page size bounds from the ARD registry API.
const (
	DefaultPageSize = 10
	MaxPageSize     = 100
)
