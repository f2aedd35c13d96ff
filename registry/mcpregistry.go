package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// MCPRegistry is a client of the official MCP Registry API
// (GET /v0.1/servers). Its server.json documents become entries:
// identifier urn:air:<reversed namespace>:mcp:<name> (io.github.foo/bar →
// urn:air:foo.github.io:mcp:bar), type application/mcp-server-card+json,
// the server.json inline as data. A server whose latest version is
// deprecated is its newest active version, or, with none, itself marked
// deprecated (see Entry.Withheld); deleted servers are dropped.
type MCPRegistry struct {
	*remote
}

// NewMCPRegistry returns a client for the MCP Registry at baseURL: its
// base (https://registry.modelcontextprotocol.io), or the base with the
// API's version (…/v0.1, …/v0) or its servers route (…/v0.1/servers).
func NewMCPRegistry(id, baseURL string, o RemoteOptions) (*MCPRegistry, error) {
	r, err := newRemote(id, registryBase(baseURL), o)
	if err != nil {
		return nil, err
	}
	return &MCPRegistry{remote: r}, nil
}

// registryBase is url without the API version, and the servers route,
// it may end with: the client's routes begin with /v0.1, and it asked
// /v0.1/v0.1/servers of a url that ended with it, which is a 404.
func registryBase(url string) string {
	base := strings.TrimSuffix(url, "/")
	api := strings.TrimSuffix(base, "/servers")
	for _, v := range []string{"/v0.1", "/v0"} {
		if b, ok := strings.CutSuffix(api, v); ok {
			return b
		}
	}
	return base // a base of its own may end in /servers
}

// serversRoute is the route the client lists servers at, under its base.
const serversRoute = "/v0.1/servers"

// ID implements Registry.
func (m *MCPRegistry) ID() string { return m.id }

type serverListResponse struct {
	Servers  []serverResponse `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor"`
	} `json:"metadata"`
}

type serverResponse struct {
	Server json.RawMessage `json:"server"`
	Meta   struct {
		Official struct {
			Status        string `json:"status"`
			StatusMessage string `json:"statusMessage"`
			PublishedAt   string `json:"publishedAt"`
			UpdatedAt     string `json:"updatedAt"`
		} `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
}

// Search implements Registry. The registry's own search matches server
// names only, so one natural-language query becomes up to three name
// searches, one per most specific word, made in parallel, each read page
// after page: a word most names hold ("github", in every io.github.*
// server's namespace) lists hundreds of servers about anything, and the
// ones about it came pages later. Their lists are read a window at a time
// (maxNamePages pages of each word's), and what a window lists is
// filtered and ranked here, with the same BM25F scoring as local
// catalogs, and paged here; a page that reaches a window's end goes on
// into the next, of the lists that have more. The page token, bound to
// the query as a catalog's is, holds where the window began in each list
// and the offset into its ranking, which the next page makes again (the
// registry's answers are cached for a while).
func (m *MCPRegistry) Search(ctx context.Context, q Query) (Page, error) {
	if err := checkPageSize(q.PageSize); err != nil {
		return Page{}, err
	}
	filter, err := compileFilter(q.Filter)
	if err != nil {
		return Page{}, err
	}
	fp := fingerprint(q)
	at, err := decodeNameToken(q.PageToken, fp)
	if err != nil {
		return Page{}, err
	}
	if at.Cursors == nil {
		at.Cursors = map[string]string{}
		for _, w := range searchWords(q.Text, 3) {
			at.Cursors[w] = ""
		}
	}
	return m.searchWindows(ctx, q.Text, filter, at, cmp.Or(q.PageSize, DefaultPageSize), fp)
}

// searchWindows fills a page of size results from the window at begins,
// going on into the next windows while the page is short, up to
// maxWindows; fp binds its page token to the query.
func (m *MCPRegistry) searchWindows(ctx context.Context, text string, filter filter, at nameToken, size int, fp uint32) (Page, error) {
	page := Page{Results: []Result{}}
	for windows := 1; ; windows++ {
		ranked, next, read, err := m.window(ctx, text, filter, at.Cursors)
		if err != nil {
			if len(page.Results) > 0 {
				// What earlier windows gave stands; the next page asks for
				// this window again, not ending the listing here.
				page.PageToken = at.encode(fp)
				break
			}
			return Page{}, err
		}
		for _, r := range read {
			if !slices.Contains(page.Read, r) {
				page.Read = append(page.Read, r)
			}
		}
		from := min(at.Offset, len(ranked))
		end := min(from+size-len(page.Results), len(ranked))
		page.Results = append(page.Results, ranked[from:end]...)
		switch {
		case end < len(ranked):
			page.PageToken = nameToken{Offset: end, Cursors: at.Cursors}.encode(fp)
		case len(next) > 0 && (len(page.Results) >= size || windows >= maxWindows):
			page.PageToken = nameToken{Cursors: next}.encode(fp)
		case len(next) > 0:
			at = nameToken{Cursors: next} // the page goes on into the next window
			continue
		}
		break
	}
	return page, nil
}

// window reads the lists of words from their cursors (cursors holds them,
// by word), maxNamePages pages of each, and ranks what they list for
// text, filtered; next holds the cursors of the lists that have more, and
// read the words of text the ranking read as others.
func (m *MCPRegistry) window(ctx context.Context, text string, keep filter, cursors map[string]string) (ranked []Result, next map[string]string, read []Reading, err error) {
	words := slices.Sorted(maps.Keys(cursors))
	lists := make([][]Entry, len(words))
	after := make([]string, len(words))
	errs := make([]error, len(words))
	var wg sync.WaitGroup
	for i, w := range words {
		wg.Go(func() { lists[i], after[i], errs[i] = m.named(ctx, w, cursors[w]) })
	}
	wg.Wait()

	var listed []Entry
	seen := map[string]bool{}
	var failed []error
	next = map[string]string{}
	for i, list := range lists {
		if errs[i] != nil && !slices.ContainsFunc(failed, func(e error) bool { return e.Error() == errs[i].Error() }) {
			failed = append(failed, errs[i]) // each word's search failed alike: said once
		}
		if after[i] != "" {
			next[words[i]] = after[i]
		}
		for _, e := range list {
			if !seen[e.Identifier] {
				seen[e.Identifier] = true
				listed = append(listed, e)
			}
		}
	}
	if !slices.Contains(errs, nil) {
		return nil, nil, nil, errors.Join(failed...)
	}
	m.unhide(ctx, listed)
	entries := slices.DeleteFunc(listed, func(e Entry) bool { return !keep.match(&e) })
	m.remember(entries)
	ix := NewIndex(m.base.String(), entries)
	ix.DrawnFrom = mcpRegistrySize
	ranked, read, err = ix.match(Query{Text: text})
	if err != nil {
		return nil, nil, nil, err
	}
	// An entry the text does not match came back from the registry's own
	// search all the same: kept, after the ranked ones, when a word begins
	// a word of its server's own name ("kube" in mcp-kubernetes), which the
	// ranking does not see; not when a word matched its namespace only
	// ("github" matches every io.github.* server) or the middle of a word
	// ("text" in context).
	for _, e := range entries {
		if !slices.ContainsFunc(ranked, func(r Result) bool { return r.Identifier == e.Identifier }) && namedBy(e, words) {
			ranked = append(ranked, Result{Entry: e, Source: m.base.String()})
		}
	}
	return ranked, next, read, nil
}

// mcpRegistrySize is about how many servers the official MCP Registry
// lists (about two thousand, latest versions, late 2025): a window is
// ranked as drawn from that many, so that its scores weigh words as a
// catalog of them would and merge with other registries' (see
// Index.DrawnFrom). IDF moves with its log: half or twice the figure
// changes a score by a few points.
const mcpRegistrySize = 2000

// Reading the registry's lists: pages of namePage servers, a window of
// maxNamePages pages of each word's at a time, and at most maxWindows
// windows for one page of results.
const (
	namePage     = 100 // the most the registry's API gives a page
	maxNamePages = 5
	maxWindows   = 3
)

// named lists, from cursor on, the servers whose names hold word (all of
// them for ""), as far as maxNamePages go, and where the list goes on
// ("" at its end). Pages read before an error are kept.
func (m *MCPRegistry) named(ctx context.Context, word, cursor string) (entries []Entry, next string, err error) {
	for range maxNamePages {
		params := url.Values{"limit": {strconv.Itoa(namePage)}, "version": {"latest"}}
		if word != "" {
			params.Set("search", word)
		}
		if cursor != "" {
			params.Set("cursor", cursor)
		}
		data, err := m.do(ctx, http.MethodGet, serversRoute, params, nil)
		var list serverListResponse
		if err == nil {
			if uerr := json.Unmarshal(data, &list); uerr != nil {
				err = m.malformed(fmt.Errorf("registry %s: malformed server list: %w", m.id, uerr))
			}
		}
		if err != nil {
			if len(entries) > 0 {
				// A later page failed: what came is worth ranking, and the
				// next window asks for that page again.
				return entries, cursor, nil
			}
			var se *StatusError
			if errors.As(err, &se) && se.Status == http.StatusNotFound {
				// The route, not a server, is missing: the url is not a
				// registry's base (a 404 said nothing more).
				err = fmt.Errorf("%w (the gateway asks %s%s: is url the MCP Registry's base URL, such as https://registry.modelcontextprotocol.io?)", err, m.base, serversRoute)
			}
			return nil, "", err
		}
		// The page asked for, however many the registry sent.
		for _, s := range list.Servers[:min(len(list.Servers), namePage)] {
			if e, ok := serverEntry(s); ok {
				entries = append(entries, e)
			}
		}
		cursor = list.Metadata.NextCursor
		if cursor == "" || len(list.Servers) == 0 {
			return entries, "", nil
		}
	}
	return entries, cursor, nil
}

// maxVersionLookups bounds the deprecated servers of a window whose
// versions are listed for an active one (a request each), and
// versionLookups how many are asked at once.
const (
	maxVersionLookups = 20
	versionLookups    = 4
)

// unhide puts in place of each server of entries whose latest version
// its registry deprecated its newest active version, when it has one:
// the listing's version=latest gives the deprecated one only, which hid
// the versions still active behind it.
func (m *MCPRegistry) unhide(ctx context.Context, entries []Entry) {
	var wg sync.WaitGroup
	turns := make(chan struct{}, versionLookups)
	asked := 0
	for i := range entries {
		if entries[i].Status != StatusDeprecated {
			continue
		}
		if asked++; asked > maxVersionLookups {
			break
		}
		wg.Go(func() {
			turns <- struct{}{}
			defer func() { <-turns }()
			entries[i] = m.activeVersion(ctx, entries[i])
		})
	}
	wg.Wait()
}

// activeVersion returns, for e, deprecated, the newest published of its
// server's versions still active; e itself when it is not deprecated,
// when none is active, or when its versions cannot be read.
func (m *MCPRegistry) activeVersion(ctx context.Context, e Entry) Entry {
	var sj struct {
		Name string `json:"name"`
	}
	if e.Status != StatusDeprecated || json.Unmarshal(e.Data, &sj) != nil {
		return e
	}
	data, err := m.do(ctx, http.MethodGet, serversRoute+"/"+url.PathEscape(sj.Name)+"/versions", nil, nil)
	var list serverListResponse
	if err != nil || json.Unmarshal(data, &list) != nil {
		return e
	}
	best, newest := e, time.Time{}
	for _, s := range list.Servers {
		published, _ := time.Parse(time.RFC3339Nano, s.Meta.Official.PublishedAt)
		if v, ok := serverEntry(s); ok && v.Status == "" && v.Identifier == e.Identifier && (best.Status != "" || published.After(newest)) {
			best, newest = v, published
		}
	}
	return best
}

// nameToken is an MCP Registry search's page token: where the window of
// the page's next result began in each word's list, and its offset in the
// window's ranking.
type nameToken struct {
	Offset  int               `json:"o,omitempty"`
	Cursors map[string]string `json:"c,omitempty"` // nil: the lists' beginnings
	Query   uint32            `json:"q"`
}

func (t nameToken) encode(fp uint32) string {
	t.Query = fp
	return encodeToken(t)
}

func decodeNameToken(tok string, fp uint32) (nameToken, error) {
	var t nameToken
	if tok != "" && (!decodeToken(tok, &t) || t.Query != fp || t.Offset < 0 || len(t.Cursors) > 3) {
		return nameToken{}, errForeignToken
	}
	return t, nil
}

// namedBy reports whether a word of e's server's own name (its URN's last
// segment, split at what is not a letter or digit) begins with one of
// words, or words are the listing's ("").
func namedBy(e Entry, words []string) bool {
	name := strings.ToLower(e.Identifier[strings.LastIndex(e.Identifier, ":")+1:])
	parts := strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	return slices.ContainsFunc(words, func(w string) bool {
		return w == "" || slices.ContainsFunc(parts, func(p string) bool { return strings.HasPrefix(p, w) })
	})
}

// minSearchRunes is the shortest search the registry takes: a shorter
// one is refused with a 422, which failed a discover of "éé" (two runes,
// four bytes, counted as bytes) and, beside a longer word, lost "日本"
// without a word.
const minSearchRunes = 3

// searchWords picks up to n words to send as name searches: the longest,
// as the most specific, stop words and words too short for the
// registry's search left out (the ranking reads them all the same). No
// words means one search with no term (the registry's listing).
func searchWords(text string, n int) []string {
	var words []string
	for _, w := range strings.Fields(strings.ToLower(text)) {
		w = strings.Trim(w, `.,;:!?"'()`)
		if utf8.RuneCountInString(w) >= minSearchRunes && !stopWords[w] && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	slices.SortStableFunc(words, func(a, b string) int { return utf8.RuneCountInString(b) - utf8.RuneCountInString(a) })
	if len(words) == 0 {
		return []string{""}
	}
	return words[:min(n, len(words))]
}

// Lookup implements Registry: the server named by the URN, its latest
// version, or its newest active one when the latest is deprecated; a
// deprecated server with none is returned as it is, to be attached.
func (m *MCPRegistry) Lookup(ctx context.Context, urn string) (Entry, error) {
	name, err := ServerName(urn)
	if err != nil {
		return Entry{}, err
	}
	data, err := m.do(ctx, http.MethodGet, serversRoute+"/"+url.PathEscape(name)+"/versions/latest", nil, nil)
	if err == nil {
		var s serverResponse
		if json.Unmarshal(data, &s) == nil {
			if e, ok := serverEntry(s); ok {
				return m.activeVersion(ctx, e), nil
			}
		}
	}
	if e, ok := m.recall(urn); ok {
		return e, nil
	}
	var se *StatusError
	if err != nil && !(errors.As(err, &se) && se.Status == http.StatusNotFound) {
		return Entry{}, err
	}
	return Entry{}, fmt.Errorf("registry %s: %s: %w", m.id, urn, ErrNotFound)
}

// serverEntry maps one registry record to an entry, deprecated ones
// marked so; ok is false for records deleted, of a status unknown, or
// that cannot be named.
func serverEntry(s serverResponse) (Entry, bool) {
	status := s.Meta.Official.Status
	if status != "" && status != "active" && status != StatusDeprecated {
		return Entry{}, false
	}
	var sj struct {
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Version     string `json:"version"`
	}
	if json.Unmarshal(s.Server, &sj) != nil {
		return Entry{}, false
	}
	urn, err := ServerURN(sj.Name)
	if err != nil {
		return Entry{}, false
	}
	display := sj.Title
	if display == "" {
		_, display, _ = strings.Cut(sj.Name, "/")
		display = strings.ReplaceAll(display, "-", " ")
	}
	e := Entry{Identifier: urn, DisplayName: display, Type: "application/mcp-server-card+json",
		Data: s.Server, Description: sj.Description, Version: sj.Version, UpdatedAt: s.Meta.Official.UpdatedAt}
	if status == StatusDeprecated {
		e.Status, e.StatusMessage = status, s.Meta.Official.StatusMessage
	}
	if checkEntry(&e) != nil {
		return Entry{}, false
	}
	return bounded(e)
}

// ServerURN maps an MCP Registry server name (reverse-DNS namespace, a
// slash, a name) to its URN: io.github.foo/bar → urn:air:foo.github.io:mcp:bar.
func ServerURN(name string) (string, error) {
	ns, n, ok := strings.Cut(name, "/")
	if !ok || ns == "" || n == "" {
		return "", fmt.Errorf("%w: server name %q is not namespace/name", ErrBadURN, name)
	}
	labels := strings.Split(ns, ".")
	slices.Reverse(labels)
	seg := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, n)
	u := "urn:air:" + strings.Join(labels, ".") + ":mcp:" + seg
	if _, err := ParseURN(u); err != nil {
		return "", err
	}
	return u, nil
}

// ServerName is ServerURN's inverse, for URNs of the mcp namespace.
func ServerName(urn string) (string, error) {
	u, err := ParseURN(urn)
	if err != nil {
		return "", err
	}
	if len(u.Namespace) != 1 || u.Namespace[0] != "mcp" {
		return "", fmt.Errorf("%w: %s is not an MCP Registry server (urn:air:<publisher>:mcp:<name>)", ErrNotFound, urn)
	}
	labels := strings.Split(u.Publisher, ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".") + "/" + u.Name, nil
}
