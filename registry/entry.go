// Package registry holds ARD catalogs, the search index over them, and the
// registries the gateway queries.
package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/ardgate/ardgate/guard"
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

	// Status is what its registry says of an entry it still lists but
	// no longer recommends: "deprecated" (the MCP Registry's word), with
	// the registry's StatusMessage; "" while it is active. No ARD field.
	Status        string `json:"-"`
	StatusMessage string `json:"-"`
}

// StatusDeprecated is the Status of an entry its registry deprecated.
const StatusDeprecated = "deprecated"

// Withheld returns why discovery does not offer e for attaching, nil
// when it does: its registry deprecated it. attach_resource still takes
// it by its URN, as the registry still serves it.
func (e *Entry) Withheld() error {
	if e.Status == "" {
		return nil
	}
	why := "it gave no reason"
	if e.StatusMessage != "" {
		why = fmt.Sprintf("%q", e.StatusMessage)
	}
	return fmt.Errorf("%s by its registry (%s); attach_resource with its urn attaches it all the same", e.Status, why)
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

// Bounds on what the gateway keeps of an entry a third party sent (a
// remote registry's results, referrals and lookups, a well-known host's
// catalog and card), applied as it is decoded: its text is cut to what
// the gateway ever shows of it, and cleaned as shown, so that a
// description of 1 MiB is not kept to show 600 runes of it.
const (
	// MaxNameRunes bounds a name, a media type, a source, a version.
	MaxNameRunes = 120
	// MaxDescriptionRunes bounds a description.
	MaxDescriptionRunes = 600
	// maxListItems bounds tags, capabilities and representative
	// queries, which filters match on and no result shows.
	maxListItems = 32
	// maxURLBytes: an entry whose url is longer is left out (a URL cut
	// is another URL).
	maxURLBytes = 2048
	// maxEntryData: an entry whose data and trust manifest are larger
	// together is left out, as a card the gateway fetches over 1 MiB is
	// refused.
	maxEntryData = 1 << 20
	// maxMetadataBytes: metadata larger when encoded is dropped.
	maxMetadataBytes = 16 << 10
)

// bounded returns e, from a third party, cut to the bounds above, and
// false when it cannot be kept at all. What it returns shares no memory
// with what e held, so that the answer it came in can be freed.
func bounded(e Entry) (Entry, bool) {
	if len(e.URL) > maxURLBytes || len(e.Data)+len(e.TrustManifest) > maxEntryData {
		return Entry{}, false
	}
	for _, s := range []*string{&e.DisplayName, &e.Type, &e.Version, &e.UpdatedAt, &e.Status} {
		*s = guard.Text(*s, MaxNameRunes)
	}
	e.Description = guard.Text(e.Description, MaxDescriptionRunes)
	e.StatusMessage = guard.Text(e.StatusMessage, MaxDescriptionRunes)
	for _, l := range []*[]string{&e.Tags, &e.Capabilities, &e.RepresentativeQueries} {
		*l = boundedList(*l)
	}
	if metadataSize(e.Metadata) > maxMetadataBytes {
		e.Metadata = nil
	}
	return e, true
}

func boundedList(l []string) []string {
	if len(l) == 0 {
		return l
	}
	out := make([]string, min(len(l), maxListItems))
	for i := range out {
		out[i] = guard.Text(l[i], MaxNameRunes)
	}
	return out
}

func metadataSize(m map[string]any) int {
	if m == nil {
		return 0
	}
	b, err := json.Marshal(m)
	if err != nil {
		return math.MaxInt
	}
	return len(b)
}

// size is about how many bytes e holds, for the bounds of what is kept.
func (e *Entry) size() int {
	const overhead = 256 // the struct, its slices' and map's headers
	n := overhead + len(e.Identifier) + len(e.DisplayName) + len(e.Type) + len(e.URL) + len(e.Data) +
		len(e.Description) + len(e.Version) + len(e.UpdatedAt) + len(e.TrustManifest) + metadataSize(e.Metadata) +
		len(e.Status) + len(e.StatusMessage)
	for _, l := range [][]string{e.Tags, e.Capabilities, e.RepresentativeQueries} {
		for _, s := range l {
			n += 16 + len(s)
		}
	}
	return n
}
