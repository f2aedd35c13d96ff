package registry

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/ardgate/ardgate/guard"
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
// the pages it returns. A page they leave short goes on into the
// registry's next pages, asked MaxPageSize at a time, up to maxGlobPages
// in one search, until it is full or the registry has no more: a page of
// the registry's own size held no match for dozens of pages ("mcp
// server", publisher kukapay*: the first came on page 31), each said to
// match nothing. The page token then holds the registry's token and how
// many matches of its page were given.
func (a *ARD) Search(ctx context.Context, q Query) (Page, error) {
	if err := checkPageSize(q.PageSize); err != nil {
		return Page{}, err
	}
	remoteFilter, local := splitGlobs(q.Filter)
	localFilter, err := compileFilter(local)
	if err != nil {
		return Page{}, err
	}
	if local == nil {
		page, err := a.search(ctx, q.Text, remoteFilter, q.PageSize, q.PageToken)
		if err == nil {
			a.remember(resultEntries(page.Results))
		}
		return page, err
	}
	return a.searchGlobbed(ctx, q, remoteFilter, localFilter)
}

// checkPageSize refuses a page size no registry gives; 0 asks for the
// default.
func checkPageSize(size int) error {
	if size < 0 || size > MaxPageSize {
		return fmt.Errorf("%w: pageSize %d is outside 1..%d", ErrInvalidArgument, size, MaxPageSize)
	}
	return nil
}

// searchGlobbed fills a page from the registry's pages, asked without the
// prefix globs, keeping the results that local matches.
func (a *ARD) searchGlobbed(ctx context.Context, q Query, remote map[string][]string, local filter) (Page, error) {
	fp := fingerprint(q)
	at, err := decodeGlobToken(q.PageToken, fp)
	if err != nil {
		return Page{}, err
	}
	size := cmp.Or(q.PageSize, DefaultPageSize)
	var out Page
	for pages := 1; ; pages++ {
		page, err := a.search(ctx, q.Text, remote, MaxPageSize, at.Remote)
		if err != nil {
			if pages > 1 {
				break // what came stands; the next page asks for this one again
			}
			return Page{}, err
		}
		if pages == 1 {
			out = Page{Results: []Result{}, Referrals: page.Referrals}
		}
		kept := local.matching(page.Results)
		kept = kept[min(at.Given, len(kept)):]
		if room := size - len(out.Results); len(kept) > room {
			out.Results = append(out.Results, kept[:room]...)
			at.Given += room
			break
		}
		out.Results = append(out.Results, kept...)
		at = globToken{Remote: page.PageToken}
		if at.Remote == "" || len(out.Results) == size || pages == maxGlobPages {
			break
		}
	}
	if at.Remote != "" || at.Given > 0 {
		out.PageToken = at.encode(fp)
	}
	a.remember(resultEntries(out.Results))
	return out, nil
}

// maxGlobPages bounds the registry pages one search reads to fill a page
// a prefix glob filters: 500 results, five requests.
const maxGlobPages = 5

// search asks the registry for one page.
func (a *ARD) search(ctx context.Context, text string, filter map[string][]string, size int, token string) (Page, error) {
	body, _ := json.Marshal(searchRequest{
		Query:      searchQuery{Text: text, Filter: filter},
		Federation: a.federation, PageSize: size, PageToken: token,
	})
	data, err := a.do(ctx, http.MethodPost, "/search", nil, body)
	if err != nil {
		return Page{}, err
	}
	page, err := decodeSearch(data, a.base.String(), cmp.Or(size, DefaultPageSize))
	if err != nil {
		return Page{}, a.malformed(fmt.Errorf("registry %s: %w", a.id, err))
	}
	return page, nil
}

func resultEntries(results []Result) []Entry {
	entries := make([]Entry, len(results))
	for i, r := range results {
		entries[i] = r.Entry
	}
	return entries
}

// globToken is the page token of a search a prefix glob filters: the
// registry's token of the page the next begins in ("" for its first),
// and how many of that page's matches were given already.
type globToken struct {
	Remote string `json:"r,omitempty"`
	Given  int    `json:"g,omitempty"`
	Query  uint32 `json:"q"`
}

func (t globToken) encode(fp uint32) string {
	t.Query = fp
	return encodeToken(t)
}

func decodeGlobToken(tok string, fp uint32) (globToken, error) {
	var t globToken
	if tok != "" && (!decodeToken(tok, &t) || t.Query != fp || t.Given < 0) {
		return globToken{}, errForeignToken
	}
	return t, nil
}

// encodeToken is the page token of a remote search the gateway pages
// itself, t its state as JSON.
func encodeToken(t any) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeToken reads tok, made by encodeToken, into t, and says whether it
// could.
func decodeToken(tok string, t any) bool {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	return err == nil && json.Unmarshal(raw, t) == nil
}

// errForeignToken refuses a page token the gateway did not make for the
// query it comes with.
var errForeignToken = fmt.Errorf("%w: pageToken is not one this registry issued for this query", ErrInvalidArgument)

// Lookup implements Registry: GET /agents/{urn} where the registry has it,
// else an entry seen in this registry's search results, as the MCP
// Registry's does: also when the registry no longer answers, so that an
// entry discover_resources just listed can be attached (it failed,
// "registry r2 did not answer", while the entry was at hand).
func (a *ARD) Lookup(ctx context.Context, urn string) (Entry, error) {
	data, err := a.do(ctx, http.MethodGet, "/agents/"+url.PathEscape(urn), nil, nil)
	if err == nil {
		var e Entry
		if err := json.Unmarshal(data, &e); err == nil && checkEntry(&e) == nil {
			if e, ok := bounded(e); ok {
				return e, nil
			}
		}
	}
	if e, ok := a.recall(urn); ok {
		return e, nil
	}
	var se *StatusError
	if err == nil || errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusNotImplemented || se.Status == http.StatusMethodNotAllowed) {
		return Entry{}, fmt.Errorf("registry %s: %s: %w", a.id, urn, ErrNotFound)
	}
	return Entry{}, err
}

// decodeSearch reads a search response tolerantly: score as int or float,
// pageToken null, missing optional fields, and results that do not decode
// or break the entry rules are dropped rather than failing the page. It
// keeps the first size results and maxReferrals referrals, however many
// the registry sent (asked for one, a registry sent 40,000, and the
// gateway answered with a frame of 19 MB), each bounded.
func decodeSearch(data []byte, source string, size int) (Page, error) {
	var raw struct {
		Results   []rawRef `json:"results"`
		Referrals []rawRef `json:"referrals"`
		PageToken *string  `json:"pageToken"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Page{}, fmt.Errorf("malformed search response: %w", err)
	}
	page := Page{Results: []Result{}}
	for _, rr := range raw.Results {
		if len(page.Results) == size {
			break
		}
		if res, ok := decodeResult(rr, source); ok {
			page.Results = append(page.Results, res)
		}
	}
	for _, rr := range raw.Referrals {
		if len(page.Referrals) == maxReferrals {
			break
		}
		var e Entry
		if json.Unmarshal(rr, &e) != nil || e.URL == "" {
			continue
		}
		if e, ok := bounded(e); ok {
			page.Referrals = append(page.Referrals, e)
		}
	}
	if raw.PageToken != nil {
		page.PageToken = *raw.PageToken
	}
	return page, nil
}

// rawRef is a JSON value as a slice of the document it is decoded from,
// not a copy (json.RawMessage's): the document outlives it, and 7
// results of 1 MiB descriptions were held twice while decoded.
type rawRef []byte

// UnmarshalJSON keeps b, a slice of the document (encoding/json hands an
// Unmarshaler its value so).
func (r *rawRef) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// maxReferrals bounds the referrals kept of one answer: 40,000 made a
// frame of 9.8 MB.
const maxReferrals = 20

// decodeResult reads one result of a search response; ok is false for
// one that does not decode, breaks the entry rules or is over the bounds.
func decodeResult(raw []byte, source string) (Result, bool) {
	var r struct {
		Entry
		Score  json.Number `json:"score"`
		Source string      `json:"source"`
	}
	if json.Unmarshal(raw, &r) != nil || checkEntry(&r.Entry) != nil {
		return Result{}, false
	}
	e, ok := bounded(r.Entry)
	if !ok {
		return Result{}, false
	}
	score, _ := r.Score.Float64()
	res := Result{Entry: e, Score: int(math.Round(max(0, min(100, score)))), Source: guard.Text(r.Source, MaxNameRunes)}
	if res.Source == "" {
		res.Source = source
	}
	return res, true
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
