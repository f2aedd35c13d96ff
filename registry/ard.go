package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
)

// ARD is a remote registry speaking the ARD registry API.
type ARD struct {
	*remote
	federation string
}

// NewARD returns a client for the ARD registry at baseURL. federation is
// sent with every search (auto, referrals or none; default referrals:
// the registry forwards the search nowhere, and names the registries it
// knows of, which this gateway follows itself, only to those it knows;
// none asks for no referral, so follow_referrals had nothing to follow).
func NewARD(id, baseURL, federation string, o RemoteOptions) (*ARD, error) {
	r, err := newRemote(id, baseURL, o)
	if err != nil {
		return nil, err
	}
	if federation == "" {
		federation = "referrals"
	}
	return &ARD{remote: r, federation: federation}, nil
}

// ID implements Registry.
func (a *ARD) ID() string { return a.id }

// BaseURL is the registry's base URL.
func (a *ARD) BaseURL() string { return a.base.String() }

// searchRequest is exactly what the API defines: nothing else is sent.
type searchRequest struct {
	Query      searchQuery `json:"query"`
	Federation string      `json:"federation,omitempty"`
	PageSize   int         `json:"pageSize,omitempty"`
	PageToken  string      `json:"pageToken,omitempty"`
}

type searchQuery struct {
	Text   string              `json:"text"`
	Filter map[string][]string `json:"filter,omitempty"`
}

// Search implements Registry. Filter values ending in "*" (our prefix
// glob) are not ARD: such keys are kept from the registry and applied to
// the page it returns, so a page may come back shorter than asked.
func (a *ARD) Search(ctx context.Context, q Query) (Page, error) {
	if q.PageSize < 0 || q.PageSize > MaxPageSize {
		return Page{}, fmt.Errorf("%w: pageSize %d is outside 1..%d", ErrInvalidArgument, q.PageSize, MaxPageSize)
	}
	remoteFilter, local := splitGlobs(q.Filter)
	localFilter, err := compileFilter(local)
	if err != nil {
		return Page{}, err
	}
	body, _ := json.Marshal(searchRequest{
		Query:      searchQuery{Text: q.Text, Filter: remoteFilter},
		Federation: a.federation, PageSize: q.PageSize, PageToken: q.PageToken,
	})
	data, err := a.do(ctx, http.MethodPost, "/search", nil, body)
	if err != nil {
		return Page{}, err
	}
	page, err := decodeSearch(data, a.base.String())
	if err != nil {
		return Page{}, a.malformed(fmt.Errorf("registry %s: %w", a.id, err))
	}
	kept := page.Results[:0]
	for _, r := range page.Results {
		if localFilter.match(&r.Entry) {
			kept = append(kept, r)
		}
	}
	page.Results = kept
	entries := make([]Entry, len(kept))
	for i, r := range kept {
		entries[i] = r.Entry
	}
	a.remember(entries)
	return page, nil
}

// Lookup implements Registry: GET /agents/{urn} where the registry has it,
// else an entry seen in this registry's search results.
func (a *ARD) Lookup(ctx context.Context, urn string) (Entry, error) {
	data, err := a.do(ctx, http.MethodGet, "/agents/"+url.PathEscape(urn), nil, nil)
	if err == nil {
		var e Entry
		if err := json.Unmarshal(data, &e); err == nil && checkEntry(&e) == nil {
			return e, nil
		}
	}
	var se *StatusError
	if err == nil || errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusNotImplemented || se.Status == http.StatusMethodNotAllowed) {
		if e, ok := a.recall(urn); ok {
			return e, nil
		}
		return Entry{}, fmt.Errorf("registry %s: %s: %w", a.id, urn, ErrNotFound)
	}
	return Entry{}, err
}

// decodeSearch reads a search response tolerantly: score as int or float,
// pageToken null, missing optional fields, and results that do not decode
// or break the entry rules are dropped rather than failing the page.
func decodeSearch(data []byte, source string) (Page, error) {
	var raw struct {
		Results   []json.RawMessage `json:"results"`
		Referrals []json.RawMessage `json:"referrals"`
		PageToken *string           `json:"pageToken"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Page{}, fmt.Errorf("malformed search response: %w", err)
	}
	page := Page{Results: []Result{}}
	for _, rr := range raw.Results {
		var r struct {
			Entry
			Score  json.Number `json:"score"`
			Source string      `json:"source"`
		}
		if json.Unmarshal(rr, &r) != nil || checkEntry(&r.Entry) != nil {
			continue
		}
		score, _ := r.Score.Float64()
		res := Result{Entry: r.Entry, Score: int(math.Round(max(0, min(100, score)))), Source: r.Source}
		if res.Source == "" {
			res.Source = source
		}
		page.Results = append(page.Results, res)
	}
	for _, rr := range raw.Referrals {
		var e Entry
		if json.Unmarshal(rr, &e) == nil && e.URL != "" {
			page.Referrals = append(page.Referrals, e)
		}
	}
	if raw.PageToken != nil {
		page.PageToken = *raw.PageToken
	}
	return page, nil
}

// splitGlobs separates filter keys with a prefix-glob value (ours, not
// ARD's) from those a registry can be sent.
func splitGlobs(f map[string][]string) (remote, local map[string][]string) {
	for k, vals := range f {
		glob := false
		for _, v := range vals {
			glob = glob || strings.HasSuffix(v, "*")
		}
		if glob {
			if local == nil {
				local = map[string][]string{}
			}
			local[k] = vals
		} else {
			if remote == nil {
				remote = map[string][]string{}
			}
			remote[k] = vals
		}
	}
	return remote, local
}
