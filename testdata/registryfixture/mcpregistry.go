// Package registryfixture serves recorded registry data the way the real
// registries do, for tests. It imports the standard library only.
package registryfixture

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of the official MCP Registry's list route: a page holds 30
// servers unless limit says otherwise, 100 at most, and a search term
// has at least three characters (runes, as its validator counts them).
const (
	defaultLimit    = 30
	maxLimit        = 100
	minSearchLength = 3
)

// record is one version of a server, as the registry keeps it.
type record struct {
	raw               json.RawMessage
	name, version     string
	status, published string
	latest            bool
}

// MCPRegistry serves recorded pages of the official MCP Registry API
// (each file a page of GET /v0.1/servers, every version a record of its
// own) as its server does, under /v0 and /v0.1:
//   - GET /servers with search (a substring of the name, case folded,
//     three characters at least), limit (1 to 100, default 30),
//     version ("latest" or one version), include_deleted and an opaque
//     cursor. The list is sorted by name and version. A full page names
//     the cursor of its last server ("name:version"), so a list whose
//     length is a multiple of limit ends with an empty page.
//   - GET /servers/{name}/versions, newest published first.
//   - GET /servers/{name}/versions/{version}, "latest" for the latest.
//
// A name is one path segment, its slash sent as %2F. Deleted versions
// are left out unless include_deleted is true; deprecated ones are served
// with their statusMessage. Parameters the server's validator refuses
// get its 422 problem document.
func MCPRegistry(paths ...string) (http.Handler, error) {
	var recs []record
	for _, p := range paths {
		more, err := load(p)
		if err != nil {
			return nil, err
		}
		recs = append(recs, more...)
	}
	slices.SortStableFunc(recs, func(a, b record) int {
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.version, b.version))
	})
	if err := checkLatest(recs); err != nil {
		return nil, err
	}
	f := &mcpRegistry{recs: recs}
	mux := http.NewServeMux()
	for _, prefix := range []string{"/v0", "/v0.1"} {
		mux.HandleFunc("GET "+prefix+"/servers", f.list)
		mux.HandleFunc("GET "+prefix+"/servers/{name}/versions", f.versions)
		mux.HandleFunc("GET "+prefix+"/servers/{name}/versions/{version}", f.version)
	}
	return mux, nil
}

func load(path string) ([]record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var page struct {
		Servers []json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(data, &page); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	recs := make([]record, 0, len(page.Servers))
	for i, raw := range page.Servers {
		var rec struct {
			Server struct{ Name, Version string }
			Meta   struct {
				Official struct {
					Status      string
					PublishedAt string
					IsLatest    bool
				} `json:"io.modelcontextprotocol.registry/official"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, fmt.Errorf("%s: server %d: %w", path, i, err)
		}
		o := rec.Meta.Official
		var compact bytes.Buffer
		_ = json.Compact(&compact, raw) // valid: it was just decoded
		recs = append(recs, record{raw: compact.Bytes(), name: rec.Server.Name, version: rec.Server.Version,
			status: cmp.Or(o.Status, "active"), published: o.PublishedAt, latest: o.IsLatest})
	}
	return recs, nil
}

// checkLatest refuses data the registry could not hold: a name and
// version twice, or a server whose versions are not one latest.
func checkLatest(recs []record) error {
	latest := map[string]int{}
	for i, r := range recs {
		if i > 0 && recs[i-1].name == r.name && recs[i-1].version == r.version {
			return fmt.Errorf("server %s version %q is recorded twice", r.name, r.version)
		}
		n := latest[r.name]
		if r.latest {
			n++
		}
		latest[r.name] = n
	}
	for name, n := range latest {
		if n != 1 {
			return fmt.Errorf("server %s has %d latest versions, not 1", name, n)
		}
	}
	return nil
}

type mcpRegistry struct{ recs []record }

// problem answers as the registry's framework does: an RFC 9457 problem
// document, with the parameter a 422 refused.
func problem(w http.ResponseWriter, status int, detail, location string, value any) {
	p := map[string]any{"title": http.StatusText(status), "status": status, "detail": detail}
	if location != "" {
		p["errors"] = []map[string]any{{"message": detail, "location": location, "value": value}}
		p["detail"] = "validation failed"
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

func (f *mcpRegistry) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, refused := parseLimit(q.Get("limit"))
	if refused != "" {
		problem(w, http.StatusUnprocessableEntity, refused, "query.limit", q.Get("limit"))
		return
	}
	search := q.Get("search")
	if search != "" && utf8.RuneCountInString(search) < minSearchLength {
		problem(w, http.StatusUnprocessableEntity, fmt.Sprintf("expected length >= %d", minSearchLength), "query.search", search)
		return
	}
	afterName, afterVersion, _ := strings.Cut(q.Get("cursor"), ":")
	deleted := q.Get("include_deleted") == "true"
	version := q.Get("version")
	page := []json.RawMessage{}
	var last record
	for _, rec := range f.recs {
		switch {
		case q.Get("cursor") != "" && cmp.Or(cmp.Compare(rec.name, afterName), cmp.Compare(rec.version, afterVersion)) <= 0,
			!strings.Contains(strings.ToLower(rec.name), strings.ToLower(search)),
			version == "latest" && !rec.latest,
			version != "" && version != "latest" && rec.version != version,
			rec.status == "deleted" && !deleted:
			continue
		}
		if len(page) == limit {
			break
		}
		page = append(page, rec.raw)
		last = rec
	}
	meta := map[string]any{"count": len(page)}
	if len(page) == limit {
		// As the registry does: a full page names a next page, which may
		// be empty.
		meta["nextCursor"] = last.name + ":" + last.version
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"servers": page, "metadata": meta})
}

// parseLimit reads the limit parameter, or says why the registry
// refuses it.
func parseLimit(v string) (limit int, refused string) {
	if v == "" {
		return defaultLimit, ""
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return 0, "invalid integer"
	case n < 1:
		return 0, "expected number >= 1"
	case n > maxLimit:
		return 0, fmt.Sprintf("expected number <= %d", maxLimit)
	}
	return n, ""
}

// named returns the versions of the server the path names, newest
// published first, deleted ones only when asked for.
func (f *mcpRegistry) named(r *http.Request) []record {
	name, err := url.PathUnescape(r.PathValue("name"))
	if err != nil {
		return nil
	}
	deleted := r.URL.Query().Get("include_deleted") == "true"
	var out []record
	for _, rec := range f.recs {
		if rec.name == name && (rec.status != "deleted" || deleted) {
			out = append(out, rec)
		}
	}
	slices.SortStableFunc(out, func(a, b record) int { return cmp.Compare(b.published, a.published) })
	return out
}

func (f *mcpRegistry) versions(w http.ResponseWriter, r *http.Request) {
	recs := f.named(r)
	if len(recs) == 0 {
		problem(w, http.StatusNotFound, "Server not found", "", nil)
		return
	}
	list := make([]json.RawMessage, len(recs))
	for i, rec := range recs {
		list[i] = rec.raw
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"servers": list, "metadata": map[string]any{"count": len(list)}})
}

func (f *mcpRegistry) version(w http.ResponseWriter, r *http.Request) {
	want, err := url.PathUnescape(r.PathValue("version"))
	if err != nil {
		problem(w, http.StatusBadRequest, "Invalid version encoding", "", nil)
		return
	}
	recs := f.named(r)
	i := slices.IndexFunc(recs, func(rec record) bool {
		return want == "latest" && rec.latest || rec.version == want
	})
	if i < 0 {
		problem(w, http.StatusNotFound, "Server not found", "", nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(recs[i].raw)
}
