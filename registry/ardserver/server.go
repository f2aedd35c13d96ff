// Package ardserver serves ARD catalog files as an ARD registry: the
// POST /search, POST /explore, GET /agents and GET /agents/{urn} routes of
// the Agentic Resource Discovery registry API, over one in-memory index
// that is reloaded when the files change.
package ardserver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/registry"
)

// Limits on requests: callers are untrusted.
const (
	// MaxBodySize bounds a request body; larger ones get 413.
	MaxBodySize = 1 << 20
	// DefaultListPageSize is the GET /agents page size when none is asked.
	DefaultListPageSize = 20
	// DefaultPollInterval is how often Watch checks the catalog files when
	// Server.PollInterval is zero.
	DefaultPollInterval = 2 * time.Second

	defaultFacetLimit = 20
	maxFacetLimit     = 1000
	maxFacets         = 32
	maxListFilterLen  = 4096
	maxListClauses    = 16
)

// Error codes of the ARD error body.
const (
	codeInvalidArgument  = "INVALID_ARGUMENT"
	codeNotFound         = "NOT_FOUND"
	codeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	codeTooLarge         = "PAYLOAD_TOO_LARGE"
	codeInternal         = "INTERNAL"
)

// Server is an http.Handler serving catalog files as an ARD registry. Set
// the fields, call Load, then serve; run Watch to pick up file changes. A
// Server must not be copied after first use.
type Server struct {
	// Catalogs are the catalog files (ai-catalog.json), indexed together
	// in this order; nested catalogs they reference are loaded with them.
	Catalogs []string
	// Log receives load problems and reloads; nil discards them.
	Log *slog.Logger
	// PollInterval is how often Watch checks the files; zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Source is the "source" of every search result: the URL of this
	// registry. Empty means the base URL of each request
	// (e.g. "http://127.0.0.1:7334/").
	Source string

	// index is swapped whole on reload so requests never see a half-built
	// index and never wait for a reload.
	index atomic.Pointer[registry.Index]

	loadMu sync.Mutex  // serialises Load and Watch's reloads
	seen   []fileState // file states of the last load attempt, under loadMu
	// stale is why the last reload failed, while the catalogs it could
	// not read are served as they were; nil after a good one.
	stale atomic.Pointer[string]
}

// fileState is what Watch compares to notice a changed file. A file that
// cannot be stat'ed is a state too, so a vanished file is reported once,
// not on every poll.
type fileState struct {
	size    int64
	modTime int64
	missing bool
}

// Load reads every catalog file into one index and starts serving it. It
// fails, keeping any index already served, when a file cannot be read or
// parsed at all; problems with single entries are logged and the entries
// left out.
func (s *Server) Load() error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	// Stat before reading: a change made during the read then shows up on
	// the next poll instead of being lost.
	s.seen = s.statFiles()
	ix, err := s.build()
	if err != nil {
		return err
	}
	s.index.Store(ix)
	s.stale.Store(nil)
	return nil
}

// Watch polls the catalog files' sizes and modification times every
// PollInterval and reloads the index when one changed. A failed reload is
// logged and the previous index kept. Watch returns when ctx is done; run
// it in its own goroutine.
func (s *Server) Watch(ctx context.Context) {
	every := s.PollInterval
	if every <= 0 {
		every = DefaultPollInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.reloadIfChanged()
		}
	}
}

func (s *Server) reloadIfChanged() {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	now := s.statFiles()
	if slices.Equal(now, s.seen) {
		return
	}
	s.seen = now
	ix, err := s.build()
	if err != nil {
		s.log().Error("catalog reload failed; still serving the previous catalogs", "err", err)
		why := err.Error()
		s.stale.Store(&why)
		return
	}
	s.index.Store(ix)
	s.stale.Store(nil)
	s.log().Info("catalogs reloaded", "entries", ix.Len(), "referrals", len(ix.Referrals()))
}

func (s *Server) statFiles() []fileState {
	out := make([]fileState, len(s.Catalogs))
	for i, path := range s.Catalogs {
		fi, err := os.Stat(path)
		if err != nil {
			out[i] = fileState{missing: true}
			continue
		}
		out[i] = fileState{size: fi.Size(), modTime: fi.ModTime().UnixNano()}
	}
	return out
}

// build loads all catalog files into a new index.
func (s *Server) build() (*registry.Index, error) {
	if len(s.Catalogs) == 0 {
		return nil, errors.New("ardserver: no catalog files to serve")
	}
	var all []registry.Entry
	seen := map[string]registry.Entry{}
	for _, path := range s.Catalogs {
		entries, skipped, err := registry.LoadCatalogFile(path)
		if err != nil {
			return nil, fmt.Errorf("ardserver: load catalog %s: %w", path, err)
		}
		entries, again := registry.Unseen(entries, seen)
		for _, urn := range again {
			skipped = append(skipped, urn+" is in an earlier catalog too; that entry is kept")
		}
		for _, problem := range skipped {
			s.log().Warn("catalog entry skipped", "catalog", path, "problem", problem)
		}
		all = append(all, entries...)
	}
	return registry.NewIndex(s.Source, all), nil
}

func (s *Server) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// handler serves one route against the index current when the request
// arrived; a returned error is written as the ARD error body.
type handler func(w http.ResponseWriter, r *http.Request, ix *registry.Index) error

// ServeHTTP implements http.Handler: the ARD registry API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, allow := s.route(r)
	if h == nil {
		s.writeError(w, r, &apiError{http.StatusNotFound, codeNotFound,
			fmt.Sprintf("no route %s; this registry serves POST /search, POST /explore, GET /agents, GET /agents/{urn} and GET /healthz", r.URL.Path)})
		return
	}
	if !slices.Contains(allow, r.Method) {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, r, &apiError{http.StatusMethodNotAllowed, codeMethodNotAllowed,
			fmt.Sprintf("%s %s is not supported; use %s", r.Method, r.URL.Path, allow[0])})
		return
	}
	ix := s.index.Load()
	if ix == nil {
		s.writeError(w, r, errors.New("no catalogs loaded (Server.Load was not called or failed)"))
		return
	}
	if err := h(w, r, ix); err != nil {
		s.writeError(w, r, err)
	}
}

var (
	postOnly = []string{http.MethodPost}
	getOnly  = []string{http.MethodGet, http.MethodHead}
)

func (s *Server) route(r *http.Request) (handler, []string) {
	switch r.URL.Path {
	case "/search":
		return s.search, postOnly
	case "/explore":
		return s.explore, postOnly
	case "/agents":
		return s.list, getOnly
	case "/healthz":
		return s.healthz, getOnly
	}
	// The URN is matched on the escaped path: it is one percent-encoded
	// segment, and an encoded "/" must not split it.
	if rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/agents/"); ok && rest != "" && !strings.Contains(rest, "/") {
		return s.lookup, getOnly
	}
	return nil, nil
}

// healthz serves GET /healthz, for a load balancer's readiness check:
// 200 with the number of entries once catalogs are loaded (ServeHTTP
// answers 500 before). After a reload that failed, the registry still
// serves, the catalogs as they were: status "stale", with why, where it
// said "ok" and an operator learnt of it only from the log.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, ix *registry.Index) error {
	if why := s.stale.Load(); why != nil {
		return writeJSON(w, map[string]any{"status": "stale", "entries": ix.Len(), "reload_error": *why})
	}
	return writeJSON(w, map[string]any{"status": "ok", "entries": ix.Len()})
}

// apiError is an error with its HTTP status and ARD error code.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, codeInvalidArgument, fmt.Sprintf(format, args...)}
}

type errorBody struct {
	ErrorCode string `json:"errorCode"`
	Message   string `json:"message"`
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		ae  *apiError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &ae):
		// err.Error(), not ae.msg: keep the context wrapped around it.
		ae = &apiError{ae.status, ae.code, err.Error()}
	case errors.As(err, &mbe):
		ae = &apiError{http.StatusRequestEntityTooLarge, codeTooLarge,
			fmt.Sprintf("request body is over %d bytes", mbe.Limit)}
	case errors.Is(err, registry.ErrInvalidArgument), errors.Is(err, registry.ErrBadURN):
		ae = &apiError{http.StatusBadRequest, codeInvalidArgument, err.Error()}
	case errors.Is(err, registry.ErrNotFound):
		ae = &apiError{http.StatusNotFound, codeNotFound, err.Error()}
	default:
		// The cause is for the operator, not the caller.
		s.log().Error("ARD request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		ae = &apiError{http.StatusInternalServerError, codeInternal, "internal error"}
	}
	body, _ := json.Marshal(errorBody{ErrorCode: ae.code, Message: ae.msg})
	writeBody(w, ae.status, body)
}

// writeJSON marshals v before writing anything, so a marshal failure can
// still become a clean 500.
func writeJSON(w http.ResponseWriter, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	writeBody(w, http.StatusOK, body)
	return nil
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// decodeBody decodes a JSON request body strictly: one object, no unknown
// fields, at most MaxBodySize bytes.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength > MaxBodySize {
		return &http.MaxBytesError{Limit: MaxBodySize}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodySize))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return err
		case errors.Is(err, io.EOF):
			return badRequest("request body is empty; expected a JSON object")
		}
		if ute, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && ute.Field == "" {
			// Said as "cannot unmarshal array into Go value of type
			// ardserver.searchRequest", the server's own type's name.
			return badRequest("malformed request body: a JSON object is expected, not %s", ute.Value)
		}
		return badRequest("malformed request body: %s", strings.TrimPrefix(config.JSONTypeError(err).Error(), "json: "))
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
	}
	return badRequest("malformed request body: data after the JSON object")
}

// queryModel is the ARD QueryModel.
type queryModel struct {
	// Text is a pointer so a missing text can be told from an empty one.
	Text   *string                 `json:"text"`
	Filter map[string]filterValues `json:"filter"`
}

// filterValues is a filter value: the API allows a string or an array of
// strings; both become a slice.
type filterValues []string

// UnmarshalJSON implements json.Unmarshaler.
func (f *filterValues) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil && !bytes.Equal(data, []byte("null")) {
		*f = filterValues{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(data, &many); err != nil || many == nil {
		return errors.New("a filter value must be a string or an array of strings")
	}
	*f = many
	return nil
}

func (q *queryModel) query() registry.Query {
	out := registry.Query{}
	if q == nil {
		return out
	}
	if q.Text != nil {
		out.Text = *q.Text
	}
	if q.Filter != nil {
		out.Filter = make(map[string][]string, len(q.Filter))
		for k, v := range q.Filter {
			out.Filter[k] = v
		}
	}
	return out
}

type searchRequest struct {
	Query      *queryModel           `json:"query"`
	Federation string                `json:"federation"`
	PageSize   *registry.WholeNumber `json:"pageSize"`
	PageToken  string                `json:"pageToken"`
}

// referral is the API's RegistryReferral: only these four fields.
type referral struct {
	Identifier  string `json:"identifier"`
	DisplayName string `json:"displayName"`
	Type        string `json:"type"`
	URL         string `json:"url"`
}

type searchResponse struct {
	Results   []registry.Result `json:"results"`
	Referrals []referral        `json:"referrals,omitempty"`
	PageToken string            `json:"pageToken,omitempty"`
}

// search serves POST /search. This registry never forwards a search:
// federation only decides whether its registry entries are returned as
// referrals for the caller to follow.
func (s *Server) search(w http.ResponseWriter, r *http.Request, ix *registry.Index) error {
	var req searchRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Query == nil {
		return badRequest(`"query" is required`)
	}
	if req.Query.Text == nil {
		return badRequest(`"query.text" is required`)
	}
	switch req.Federation {
	case "", "auto", "referrals", "none":
	default:
		return badRequest(`"federation" is %q; it must be auto, referrals or none`, req.Federation)
	}
	q := req.Query.query()
	if req.PageSize != nil {
		if *req.PageSize < 1 || *req.PageSize > registry.MaxPageSize {
			return badRequest(`"pageSize" is %d; it must be 1..%d`, *req.PageSize, registry.MaxPageSize)
		}
		q.PageSize = int(*req.PageSize)
	}
	q.PageToken = req.PageToken
	page, err := ix.Search(q)
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	source := s.source(r)
	for i := range page.Results {
		page.Results[i].Source = source
	}
	resp := searchResponse{Results: page.Results, PageToken: page.PageToken}
	if req.Federation != "none" {
		resp.Referrals = referrals(ix.Referrals())
	}
	return writeJSON(w, resp)
}

func referrals(entries []registry.Entry) []referral {
	var out []referral
	for _, e := range entries {
		// A referral without a URL cannot be followed; the API requires one.
		if e.URL == "" {
			continue
		}
		out = append(out, referral{Identifier: e.Identifier, DisplayName: e.DisplayName, Type: e.Type, URL: e.URL})
	}
	return out
}

// source is the "source" of results: Server.Source, else the URL the
// caller reached this registry at (keeping any prefix the handler is
// mounted under, as http.StripPrefix leaves it in RequestURI).
func (s *Server) source(r *http.Request) string {
	if s.Source != "" {
		return s.Source
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	prefix := ""
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
		if p, ok := strings.CutSuffix(u.EscapedPath(), r.URL.EscapedPath()); ok {
			prefix = strings.TrimSuffix(p, "/")
		}
	}
	return scheme + "://" + r.Host + prefix + "/"
}

type exploreRequest struct {
	Query      *queryModel `json:"query"`
	ResultType *struct {
		Facets []facetRequest `json:"facets"`
	} `json:"resultType"`
}

type facetRequest struct {
	Field    string                `json:"field"`
	Limit    *registry.WholeNumber `json:"limit"`
	MinCount *registry.WholeNumber `json:"minCount"`
}

type exploreResponse struct {
	ResultType string                 `json:"resultType"`
	Facets     map[string]facetResult `json:"facets"`
}

// facetResult is one facet's buckets. OtherCount sums the counts of the
// buckets the limit left out (like an "other" bucket), so it is in the
// same unit as a bucket's count: entries.
type facetResult struct {
	Buckets    []bucket `json:"buckets"`
	OtherCount int      `json:"otherCount"`
}

type bucket struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// explore serves POST /explore: value counts over every entry the query
// matches (all entries the filter allows when the text is empty).
func (s *Server) explore(w http.ResponseWriter, r *http.Request, ix *registry.Index) error {
	var req exploreRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.ResultType == nil {
		return badRequest(`"resultType" is required`)
	}
	facets := req.ResultType.Facets
	switch {
	case len(facets) == 0:
		return badRequest(`"resultType.facets" must list at least one facet`)
	case len(facets) > maxFacets:
		return badRequest(`"resultType.facets" lists %d facets; at most %d are allowed`, len(facets), maxFacets)
	}
	specs := make([]facetSpec, len(facets))
	for i, f := range facets {
		spec, err := f.spec()
		if err != nil {
			return fmt.Errorf("resultType.facets[%d]: %w", i, err)
		}
		for _, prev := range specs[:i] {
			if prev.field == spec.field {
				return badRequest("resultType.facets[%d]: field %q is asked for twice", i, spec.field)
			}
		}
		specs[i] = spec
	}
	matched, err := ix.Match(req.Query.query())
	if err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	resp := exploreResponse{ResultType: "facets", Facets: make(map[string]facetResult, len(specs))}
	for _, spec := range specs {
		resp.Facets[spec.field] = spec.count(matched)
	}
	return writeJSON(w, resp)
}

type facetSpec struct {
	field    string
	limit    int
	minCount int
}

func (f facetRequest) spec() (facetSpec, error) {
	if f.Field == "" {
		return facetSpec{}, badRequest(`"field" is required`)
	}
	if err := checkField(f.Field); err != nil {
		return facetSpec{}, err
	}
	spec := facetSpec{field: f.Field, limit: defaultFacetLimit, minCount: 1}
	if f.Limit != nil {
		if *f.Limit < 1 || *f.Limit > maxFacetLimit {
			return facetSpec{}, badRequest(`"limit" is %d; it must be 1..%d`, *f.Limit, maxFacetLimit)
		}
		spec.limit = int(*f.Limit)
	}
	if f.MinCount != nil {
		if *f.MinCount < 0 {
			return facetSpec{}, badRequest(`"minCount" is %d; it must not be negative`, *f.MinCount)
		}
		spec.minCount = int(*f.MinCount)
	}
	return spec, nil
}

// count buckets the values at the facet's field: an entry counts once per
// distinct value, even if an array holds the value twice.
func (f facetSpec) count(results []registry.Result) facetResult {
	counts := map[string]int{}
	seen := map[string]bool{}
	for i := range results {
		clear(seen)
		for _, v := range results[i].Values(f.field) {
			if !seen[v] {
				seen[v] = true
				counts[v]++
			}
		}
	}
	buckets := make([]bucket, 0, len(counts))
	for v, n := range counts {
		if n >= f.minCount {
			buckets = append(buckets, bucket{Value: v, Count: n})
		}
	}
	slices.SortFunc(buckets, func(a, b bucket) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Value, b.Value)
	})
	out := facetResult{Buckets: buckets}
	if len(buckets) > f.limit {
		for _, b := range buckets[f.limit:] {
			out.OtherCount += b.Count
		}
		out.Buckets = buckets[:f.limit]
	}
	return out
}

// Fields a facet or list filter can name: the entry's own fields, the
// derived publisher, and paths into the JSON-valued fields. This mirrors
// what registry.Entry.Values reads, so that a misspelt field is reported
// instead of silently matching nothing.
func checkField(path string) error {
	if err := registry.CheckFieldPath(path); err != nil {
		return badRequest("%s", strings.TrimPrefix(err.Error(), registry.ErrInvalidArgument.Error()+": "))
	}
	return nil
}

type listResponse struct {
	Items     []registry.Entry `json:"items"`
	Total     int              `json:"total"`
	PageToken string           `json:"pageToken,omitempty"`
}

// list serves GET /agents: every entry, filtered and ordered
// deterministically, one page at a time.
func (s *Server) list(w http.ResponseWriter, r *http.Request, ix *registry.Index) error {
	params := r.URL.Query()
	size := DefaultListPageSize
	if v := params.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > registry.MaxPageSize {
			return badRequest("pageSize %q must be an integer in 1..%d", v, registry.MaxPageSize)
		}
		size = n
	}
	filterExpr, orderBy := params.Get("filter"), params.Get("orderBy")
	clauses, err := parseListFilter(filterExpr)
	if err != nil {
		return err
	}
	order, err := parseOrderBy(orderBy)
	if err != nil {
		return err
	}
	fp := listFingerprint(filterExpr, orderBy)
	offset, err := decodeListToken(params.Get("pageToken"), fp)
	if err != nil {
		return err
	}

	var items []registry.Entry
	for _, e := range ix.Entries() {
		if clauses.match(&e) {
			items = append(items, e)
		}
	}
	order.sort(items)
	resp := listResponse{Items: []registry.Entry{}, Total: len(items)}
	// A token past the end (the catalogs shrank since it was issued) is an
	// empty last page, not an error.
	offset = min(offset, len(items))
	end := min(offset+size, len(items))
	resp.Items = append(resp.Items, items[offset:end]...)
	if end < len(items) {
		resp.PageToken = encodeListToken(end, fp)
	}
	return writeJSON(w, resp)
}

// listClause is one `field = 'value'` of a list filter.
type listClause struct {
	field string
	value string
}

// listFilter is a conjunction of clauses: every clause must hold.
type listFilter []listClause

func (f listFilter) match(e *registry.Entry) bool {
	for _, c := range f {
		if !slices.ContainsFunc(e.Values(c.field), func(v string) bool { return strings.EqualFold(v, c.value) }) {
			return false
		}
	}
	return true
}

const listFilterHelp = "the filter supports only clauses field = 'value' joined by AND " +
	"(e.g. type = 'application/mcp-server-card+json' AND tags = 'weather'); " +
	"values are single-quoted ('' for a quote) and compared case-insensitively"

// parseListFilter parses the subset of the API's EBNF filter this server
// supports: clause { "AND" clause }, clause = field "=" 'value'.
func parseListFilter(expr string) (listFilter, error) {
	if len(expr) > maxListFilterLen {
		return nil, badRequest("filter is %d bytes; at most %d are allowed", len(expr), maxListFilterLen)
	}
	p := &filterParser{src: expr}
	p.skipSpace()
	if p.done() {
		return nil, nil
	}
	var out listFilter
	for {
		c, err := p.clause()
		if err != nil {
			return nil, err
		}
		if out = append(out, c); len(out) > maxListClauses {
			return nil, badRequest("filter has more than %d clauses", maxListClauses)
		}
		p.skipSpace()
		if p.done() {
			return out, nil
		}
		if w := p.word(); !strings.EqualFold(w, "AND") {
			return nil, p.fail(fmt.Sprintf("expected AND, found %q", w))
		}
	}
}

type filterParser struct {
	src string
	pos int
}

func (p *filterParser) done() bool { return p.pos >= len(p.src) }

func (p *filterParser) skipSpace() {
	for !p.done() && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *filterParser) fail(what string) error {
	return badRequest("invalid filter at position %d: %s; %s", p.pos, what, listFilterHelp)
}

// word reads a field name or keyword: letters, digits, '_', '-' and '.'.
func (p *filterParser) word() string {
	p.skipSpace()
	start := p.pos
	for !p.done() {
		c := p.src[p.pos]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' {
			p.pos++
			continue
		}
		break
	}
	return p.src[start:p.pos]
}

func (p *filterParser) clause() (listClause, error) {
	field := p.word()
	if field == "" {
		return listClause{}, p.fail("expected a field name")
	}
	if err := checkField(field); err != nil {
		return listClause{}, fmt.Errorf("filter: %w", err)
	}
	p.skipSpace()
	if p.done() || p.src[p.pos] != '=' {
		return listClause{}, p.fail(fmt.Sprintf("expected = after %q (only equality is supported)", field))
	}
	p.pos++
	p.skipSpace()
	if p.done() || p.src[p.pos] != '\'' {
		return listClause{}, p.fail("expected a single-quoted value")
	}
	p.pos++
	var val strings.Builder
	for {
		i := strings.IndexByte(p.src[p.pos:], '\'')
		if i < 0 {
			return listClause{}, p.fail("unterminated quoted value")
		}
		val.WriteString(p.src[p.pos : p.pos+i])
		p.pos += i + 1
		// '' inside a quoted value is a literal quote.
		if p.pos < len(p.src) && p.src[p.pos] == '\'' {
			val.WriteByte('\'')
			p.pos++
			continue
		}
		return listClause{field: field, value: val.String()}, nil
	}
}

// listOrder is a parsed orderBy; the zero value keeps index order.
type listOrder struct {
	key  func(*registry.Entry) string
	desc bool
}

var orderKeys = map[string]func(*registry.Entry) string{
	"displayname": func(e *registry.Entry) string { return e.DisplayName },
	"identifier":  func(e *registry.Entry) string { return e.Identifier },
	"updatedat":   func(e *registry.Entry) string { return e.UpdatedAt },
}

func parseOrderBy(s string) (listOrder, error) {
	parts := strings.Fields(s)
	if len(parts) == 0 {
		return listOrder{}, nil
	}
	bad := badRequest("orderBy %q is not supported; use displayName, identifier or updatedAt, optionally followed by ASC or DESC", s)
	key, ok := orderKeys[strings.ToLower(parts[0])]
	if !ok || len(parts) > 2 {
		return listOrder{}, bad
	}
	o := listOrder{key: key}
	if len(parts) == 2 {
		switch strings.ToUpper(parts[1]) {
		case "ASC":
		case "DESC":
			o.desc = true
		default:
			return listOrder{}, bad
		}
	}
	return o, nil
}

// sort orders entries; ties fall back to the identifier so pages are
// stable across requests.
func (o listOrder) sort(entries []registry.Entry) {
	if o.key == nil {
		return
	}
	slices.SortStableFunc(entries, func(a, b registry.Entry) int {
		c := cmp.Or(cmp.Compare(o.key(&a), o.key(&b)), cmp.Compare(a.Identifier, b.Identifier))
		if o.desc {
			return -c
		}
		return c
	})
}

// List page tokens carry an offset bound to the filter and order that
// made them, so a token reused with another listing is refused.
func listFingerprint(filter, orderBy string) uint32 {
	h := fnv.New32a()
	_, _ = io.WriteString(h, filter+"\x00"+orderBy)
	return h.Sum32()
}

func encodeListToken(offset int, fp uint32) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "l%d.%08x", offset, fp))
}

func decodeListToken(tok string, fp uint32) (int, error) {
	if tok == "" {
		return 0, nil
	}
	bad := badRequest("pageToken is not one this registry issued for this filter and orderBy")
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) < 2 || raw[0] != 'l' {
		return 0, bad
	}
	off, sum, ok := strings.Cut(string(raw[1:]), ".")
	n, err := strconv.Atoi(off)
	if !ok || err != nil || n < 0 || sum != fmt.Sprintf("%08x", fp) {
		return 0, bad
	}
	return n, nil
}

// lookup serves GET /agents/{urn}, the URN percent-encoded as one path
// segment. The response carries a strong ETag so clients can revalidate.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, ix *registry.Index) error {
	escaped := strings.TrimPrefix(r.URL.EscapedPath(), "/agents/")
	urn, err := url.PathUnescape(escaped)
	if err != nil {
		return badRequest("the URN in the path is not validly percent-encoded: %v", err)
	}
	if _, err := registry.ParseURN(urn); err != nil {
		return fmt.Errorf("lookup: %w", err)
	}
	e, err := ix.Lookup(urn)
	if err != nil {
		return fmt.Errorf("lookup: %w", err)
	}
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode entry %s: %w", urn, err)
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "max-age=60")
	if etagMatches(r.Header.Values("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	writeBody(w, http.StatusOK, body)
	return nil
}

// etagMatches applies If-None-Match's weak comparison (RFC 9110 13.1.2):
// "*" or any listed tag equal to etag once a W/ prefix is dropped.
func etagMatches(headers []string, etag string) bool {
	for _, h := range headers {
		for _, tag := range strings.Split(h, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
				return true
			}
		}
	}
	return false
}
