package registry

import (
	"context"
	"encoding/base64"
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
)

// MCPRegistry is a client of the official MCP Registry API
// (GET /v0.1/servers). Its server.json documents become entries:
// identifier urn:air:<reversed namespace>:mcp:<name> (io.github.foo/bar →
// urn:air:foo.github.io:mcp:bar), type application/mcp-server-card+json,
// the server.json inline as data. Servers whose official status is not
// "active" are dropped.
type MCPRegistry struct {
	*remote
}

// NewMCPRegistry returns a client for the MCP Registry at baseURL.
func NewMCPRegistry(id, baseURL string, o RemoteOptions) (*MCPRegistry, error) {
	r, err := newRemote(id, baseURL, o)
	if err != nil {
		return nil, err
	}
	return &MCPRegistry{remote: r}, nil
}

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
			Status    string `json:"status"`
			UpdatedAt string `json:"updatedAt"`
		} `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
}

// Search implements Registry. The registry's own search matches server
// names only, so one natural-language query becomes up to three name
// searches, one per most specific word, made in parallel; their pages are
// merged, ranked here with the same BM25F scoring as local catalogs,
// filtered here, and cut to the page's size. The page token carries each
// word's cursor: a later page goes on from where each list stopped, and
// what a page fetched past its size is not shown again.
func (m *MCPRegistry) Search(ctx context.Context, q Query) (Page, error) {
	size := q.PageSize
	if size == 0 {
		size = DefaultPageSize
	}
	if size < 0 || size > MaxPageSize {
		return Page{}, fmt.Errorf("%w: pageSize %d is outside 1..%d", ErrInvalidArgument, size, MaxPageSize)
	}
	filter, err := compileFilter(q.Filter)
	if err != nil {
		return Page{}, err
	}
	cursors := map[string]string{}
	if q.PageToken != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.PageToken)
		if err != nil || json.Unmarshal(raw, &cursors) != nil {
			return Page{}, fmt.Errorf("%w: pageToken is not one this registry issued", ErrInvalidArgument)
		}
	}
	words := searchWords(q.Text, 3)
	if q.PageToken != "" {
		words = slices.Collect(maps.Keys(cursors)) // continue only what had more
		slices.Sort(words)
	}

	type answer struct {
		list serverListResponse
		err  error
	}
	answers := make([]answer, len(words))
	var wg sync.WaitGroup
	for i, w := range words {
		wg.Go(func() {
			params := url.Values{"limit": {strconv.Itoa(size)}, "version": {"latest"}}
			if w != "" {
				params.Set("search", w)
			}
			if c := cursors[w]; c != "" {
				params.Set("cursor", c)
			}
			data, err := m.do(ctx, http.MethodGet, "/v0.1/servers", params, nil)
			if err == nil {
				if uerr := json.Unmarshal(data, &answers[i].list); uerr != nil {
					err = m.malformed(fmt.Errorf("registry %s: malformed server list: %w", m.id, uerr))
				}
			}
			answers[i].err = err
		})
	}
	wg.Wait()

	var entries []Entry
	seen := map[string]bool{}
	next := map[string]string{}
	var errs []error
	for i, a := range answers {
		if a.err != nil {
			if !slices.ContainsFunc(errs, func(e error) bool { return e.Error() == a.err.Error() }) {
				errs = append(errs, a.err) // each word's search failed alike: said once
			}
			continue
		}
		for _, s := range a.list.Servers {
			if e, ok := serverEntry(s); ok && !seen[e.Identifier] && filter.match(&e) {
				seen[e.Identifier] = true
				entries = append(entries, e)
			}
		}
		if c := a.list.Metadata.NextCursor; c != "" {
			next[words[i]] = c
		}
	}
	if !slices.ContainsFunc(answers, func(a answer) bool { return a.err == nil }) {
		return Page{}, errors.Join(errs...)
	}
	m.remember(entries)
	ranked, err := NewIndex(m.base.String(), entries).Match(Query{Text: q.Text})
	if err != nil {
		return Page{}, err
	}
	// An entry the text does not match came back from the registry's own
	// search all the same: kept, after the ranked ones, when a word is in
	// its server's own name ("kube" in mcp-kubernetes), which the ranking
	// does not see; not when a word matched its namespace only ("github"
	// matches every io.github.* server).
	for _, e := range entries {
		if !slices.ContainsFunc(ranked, func(r Result) bool { return r.Identifier == e.Identifier }) && namedBy(e, words) {
			ranked = append(ranked, Result{Entry: e, Source: m.base.String()})
		}
	}
	page := Page{Results: ranked[:min(size, len(ranked))]} // three words' lists answered three times page_size
	if len(next) > 0 {
		tok, _ := json.Marshal(next)
		page.PageToken = base64.RawURLEncoding.EncodeToString(tok)
	}
	return page, nil
}

// namedBy reports whether e's server's own name (its URN's last segment)
// holds one of words, or words are the listing's ("").
func namedBy(e Entry, words []string) bool {
	name := strings.ToLower(e.Identifier[strings.LastIndex(e.Identifier, ":")+1:])
	return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(name, w) })
}

// searchWords picks up to n words to send as name searches: the longest,
// as the most specific, stop words left out. No words means one search
// with no term (the registry's listing).
func searchWords(text string, n int) []string {
	var words []string
	for _, w := range strings.Fields(strings.ToLower(text)) {
		w = strings.Trim(w, `.,;:!?"'()`)
		if len(w) >= 3 && !stopWords[w] && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	slices.SortStableFunc(words, func(a, b string) int { return len(b) - len(a) })
	if len(words) == 0 {
		return []string{""}
	}
	return words[:min(n, len(words))]
}

// Lookup implements Registry: the server named by the URN, latest version.
func (m *MCPRegistry) Lookup(ctx context.Context, urn string) (Entry, error) {
	name, err := ServerName(urn)
	if err != nil {
		return Entry{}, err
	}
	data, err := m.do(ctx, http.MethodGet, "/v0.1/servers/"+url.PathEscape(name)+"/versions/latest", nil, nil)
	if err == nil {
		var s serverResponse
		if json.Unmarshal(data, &s) == nil {
			if e, ok := serverEntry(s); ok {
				return e, nil
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

// serverEntry maps one registry record to an entry; ok is false for
// records that are not active or cannot be named.
func serverEntry(s serverResponse) (Entry, bool) {
	if st := s.Meta.Official.Status; st != "" && st != "active" {
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
	return e, checkEntry(&e) == nil
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
