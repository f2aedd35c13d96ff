// Package ardserver serves catalog files as an ARD registry: POST /search,
// POST /explore, GET /agents and GET /agents/{urn}, over the same index
// the gateway searches.
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
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ardgate/ardgate/registry"
)

// Server is an ARD registry over catalog files. Call Load before serving;
// Watch reloads the files when they change.
type Server struct {
	// Catalogs are the catalog files served, in order.
	Catalogs []string
	// Log receives load problems; nil discards them.
	Log *slog.Logger
	// PollInterval is how often Watch looks at the files (default 2s).
	PollInterval time.Duration

	index atomic.Pointer[registry.Index]
	stamp string // file sizes and times at the last load
}

// maxRequest caps request bodies.
const maxRequest = 1 << 20

// Load reads every catalog into one index and swaps it in atomically, so
// requests in flight keep the index they started with.
func (s *Server) Load() error {
	var all []registry.Entry
	for _, path := range s.Catalogs {
		entries, skipped, err := registry.LoadCatalogFile(path)
		if err != nil {
			return err
		}
		for _, p := range skipped {
			s.log().Warn("catalog entry left out", "problem", p)
		}
		all = append(all, entries...)
	}
	s.index.Store(registry.NewIndex("ardgate-registry", all))
	s.stamp = s.fileStamp()
	return nil
}

func (s *Server) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

func (s *Server) fileStamp() string {
	var b strings.Builder
	for _, p := range s.Catalogs {
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", p, st.Size(), st.ModTime().UnixNano())
		}
	}
	return b.String()
}

// Watch reloads the catalogs when a file changes, until ctx ends. A reload
// that fails keeps the previous index serving.
func (s *Server) Watch(ctx context.Context) {
	every := cmp.Or(s.PollInterval, 2*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s.fileStamp() == s.stamp {
				continue
			}
			if err := s.Load(); err != nil {
				s.log().Error("catalog reload failed; still serving the previous catalogs", "err", err)
				s.stamp = s.fileStamp() // do not retry until the files change again
			} else {
				s.log().Info("catalogs reloaded", "entries", s.index.Load().Len())
			}
		}
	}
}

// ServeHTTP routes the registry API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ix := s.index.Load()
	if ix == nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL", "catalogs not loaded")
		return
	}
	path := r.URL.EscapedPath()
	switch {
	case path == "/search":
		if allow(w, r, http.MethodPost) {
			s.search(w, r, ix)
		}
	case path == "/explore":
		if allow(w, r, http.MethodPost) {
			explore(w, r, ix)
		}
	case path == "/agents":
		if allow(w, r, http.MethodGet) {
			list(w, r, ix)
		}
	case strings.HasPrefix(path, "/agents/"):
		if allow(w, r, http.MethodGet) {
			lookup(w, r, ix, strings.TrimPrefix(path, "/agents/"))
		}
	default:
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such route; the API has POST /search, POST /explore, GET /agents and GET /agents/{urn}")
	}
}

func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	writeError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", r.Method+" is not allowed here; use "+method)
	return false
}

// queryModel is the API's query: text and a filter whose values are a
// string or an array of strings.
type queryModel struct {
	Text   string                     `json:"text"`
	Filter map[string]json.RawMessage `json:"filter"`
}

func (q queryModel) query() (registry.Query, error) {
	rq := registry.Query{Text: q.Text, Filter: map[string][]string{}}
	for k, raw := range q.Filter {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			rq.Filter[k] = []string{one}
			continue
		}
		var many []string
		if err := json.Unmarshal(raw, &many); err != nil {
			return rq, fmt.Errorf("%w: filter %q must be a string or an array of strings", registry.ErrInvalidArgument, k)
		}
		rq.Filter[k] = many
	}
	return rq, nil
}

type referral struct {
	Identifier  string `json:"identifier"`
	DisplayName string `json:"displayName"`
	Type        string `json:"type"`
	URL         string `json:"url"`
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, ix *registry.Index) {
	var req struct {
		Query      *queryModel `json:"query"`
		Federation string      `json:"federation"`
		PageSize   int         `json:"pageSize"`
		PageToken  string      `json:"pageToken"`
	}
	if !decode(w, r, &req) {
		return
	}
	switch {
	case req.Query == nil || strings.TrimSpace(req.Query.Text) == "":
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "query.text is required")
		return
	case req.Federation != "" && req.Federation != "auto" && req.Federation != "referrals" && req.Federation != "none":
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "federation must be auto, referrals or none")
		return
	}
	q, err := req.Query.query()
	if err == nil {
		q.PageSize, q.PageToken = req.PageSize, req.PageToken
	}
	var page registry.Page
	if err == nil {
		page, err = ix.Search(q)
	}
	if err != nil {
		writeRegistryError(w, err)
		return
	}
	source := base(r)
	resp := struct {
		Results   []registry.Result `json:"results"`
		Referrals []referral        `json:"referrals,omitempty"`
		PageToken string            `json:"pageToken,omitempty"`
	}{Results: page.Results, PageToken: page.PageToken}
	for i := range resp.Results {
		resp.Results[i].Source = source
	}
	// This registry never federates; it can point at the registries its
	// catalogs list.
	if req.Federation != "none" {
		for _, e := range ix.Referrals() {
			resp.Referrals = append(resp.Referrals, referral{e.Identifier, e.DisplayName, e.Type, e.URL})
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

func explore(w http.ResponseWriter, r *http.Request, ix *registry.Index) {
	var req struct {
		Query      *queryModel `json:"query"`
		ResultType *struct {
			Facets []struct {
				Field    string `json:"field"`
				Limit    *int   `json:"limit"`
				MinCount *int   `json:"minCount"`
			} `json:"facets"`
		} `json:"resultType"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.ResultType == nil || len(req.ResultType.Facets) == 0 {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "resultType.facets must list at least one facet")
		return
	}
	q := registry.Query{}
	if req.Query != nil {
		var err error
		if q, err = req.Query.query(); err != nil {
			writeRegistryError(w, err)
			return
		}
	}
	matched, err := ix.Match(q)
	if err != nil {
		writeRegistryError(w, err)
		return
	}
	type bucket struct {
		Value string `json:"value"`
		Count int    `json:"count"`
	}
	type facet struct {
		Buckets    []bucket `json:"buckets"`
		OtherCount int      `json:"otherCount"`
	}
	out := map[string]facet{}
	for _, f := range req.ResultType.Facets {
		limit, minCount := 20, 1
		if f.Limit != nil {
			limit = *f.Limit
		}
		if f.MinCount != nil {
			minCount = *f.MinCount
		}
		if f.Field == "" || limit < 1 || limit > 1000 || minCount < 1 {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "each facet needs a field, a limit in 1..1000 and a minCount of at least 1")
			return
		}
		counts := map[string]int{}
		for i := range matched {
			seen := map[string]bool{}
			for _, v := range matched[i].Values(f.Field) {
				if !seen[v] {
					seen[v] = true
					counts[v]++
				}
			}
		}
		var bs []bucket
		for v, n := range counts {
			if n >= minCount {
				bs = append(bs, bucket{v, n})
			}
		}
		slices.SortFunc(bs, func(a, b bucket) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Value, b.Value)) })
		fc := facet{Buckets: bs}
		if len(bs) > limit {
			fc.Buckets = bs[:limit]
			for _, b := range bs[limit:] {
				fc.OtherCount += b.Count
			}
		}
		if fc.Buckets == nil {
			fc.Buckets = []bucket{}
		}
		out[f.Field] = fc
	}
	writeJSON(w, http.StatusOK, map[string]any{"resultType": "facets", "facets": out})
}

// listFilter is the small EBNF subset GET /agents accepts:
// field = 'value' [AND field = 'value']...
var listClause = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9_.]*)\s*=\s*'([^']*)'\s*$`)

func list(w http.ResponseWriter, r *http.Request, ix *registry.Index) {
	qv := r.URL.Query()
	size := 20
	if v := qv.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "pageSize must be an integer in 1..100")
			return
		}
		size = n
	}
	var clauses [][2]string
	if f := qv.Get("filter"); f != "" {
		for _, part := range regexp.MustCompile(`(?i)\s+AND\s+`).Split(f, -1) {
			m := listClause.FindStringSubmatch(part)
			if m == nil {
				writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT",
					fmt.Sprintf("filter clause %q is not supported; use field = 'value' clauses joined by AND", strings.TrimSpace(part)))
				return
			}
			clauses = append(clauses, [2]string{m[1], m[2]})
		}
	}
	entries := ix.Entries()
	kept := entries[:0:0]
	for i := range entries {
		if matchesAll(&entries[i], clauses) {
			kept = append(kept, entries[i])
		}
	}
	if o := qv.Get("orderBy"); o != "" {
		field, dir, _ := strings.Cut(strings.TrimSpace(o), " ")
		key := map[string]func(e *registry.Entry) string{
			"displayName": func(e *registry.Entry) string { return e.DisplayName },
			"identifier":  func(e *registry.Entry) string { return e.Identifier },
			"updatedAt":   func(e *registry.Entry) string { return e.UpdatedAt },
		}[field]
		desc := strings.EqualFold(strings.TrimSpace(dir), "DESC")
		if key == nil || (dir != "" && !desc && !strings.EqualFold(strings.TrimSpace(dir), "ASC")) {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "orderBy must be displayName, identifier or updatedAt, optionally followed by ASC or DESC")
			return
		}
		slices.SortStableFunc(kept, func(a, b registry.Entry) int {
			c := cmp.Compare(key(&a), key(&b))
			if desc {
				return -c
			}
			return c
		})
	}
	offset := 0
	if t := qv.Get("pageToken"); t != "" {
		raw, err := base64.RawURLEncoding.DecodeString(t)
		n, perr := strconv.Atoi(strings.TrimPrefix(string(raw), "list:"))
		if err != nil || perr != nil || !strings.HasPrefix(string(raw), "list:") || n < 0 || n > len(kept) {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "pageToken is not one this registry issued")
			return
		}
		offset = n
	}
	end := min(offset+size, len(kept))
	resp := struct {
		Items     []registry.Entry `json:"items"`
		Total     int              `json:"total"`
		PageToken string           `json:"pageToken,omitempty"`
	}{Items: kept[offset:end], Total: len(kept)}
	if end < len(kept) {
		resp.PageToken = base64.RawURLEncoding.EncodeToString([]byte("list:" + strconv.Itoa(end)))
	}
	writeJSON(w, http.StatusOK, resp)
}

func matchesAll(e *registry.Entry, clauses [][2]string) bool {
	for _, c := range clauses {
		if !slices.ContainsFunc(e.Values(c[0]), func(v string) bool { return strings.EqualFold(v, c[1]) }) {
			return false
		}
	}
	return true
}

func lookup(w http.ResponseWriter, r *http.Request, ix *registry.Index, escaped string) {
	urn, err := url.PathUnescape(escaped)
	if err == nil {
		_, err = registry.ParseURN(urn)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "not an ARD URN: "+escaped)
		return
	}
	e, err := ix.Lookup(urn)
	if err != nil {
		writeRegistryError(w, err)
		return
	}
	body, _ := json.Marshal(e)
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "max-age=60")
	if match := r.Header.Get("If-None-Match"); match != "" && (match == etag || match == "*") {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// decode reads a JSON body strictly, within the size cap.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequest))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", fmt.Sprintf("request bodies are capped at %d KiB", maxRequest>>10))
		} else {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "reading the body: "+err.Error())
		}
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "malformed request: "+err.Error())
		return false
	}
	return true
}

func writeRegistryError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, registry.ErrInvalidArgument):
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
	case errors.Is(err, registry.ErrNotFound):
		writeError(w, http.StatusNotFound, "NOT_FOUND", err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "INTERNAL", err.Error())
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"errorCode": code, "message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// base is this registry's base URL as the client reached it, for results'
// source field.
func base(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/"
}
