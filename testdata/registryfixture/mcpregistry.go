// Package registryfixture serves recorded registry data the way the real
// registries do, for tests.
package registryfixture

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// MCPRegistry serves a recorded page of the official MCP Registry API
// (GET /v0.1/servers with search, limit and cursor, and
// GET /v0.1/servers/{name}/versions/latest) from the file at path.
func MCPRegistry(path string) (http.Handler, error) {
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
	name := func(s json.RawMessage) string {
		var rec struct{ Server struct{ Name string } }
		_ = json.Unmarshal(s, &rec)
		return rec.Server.Name
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if rest, ok := strings.CutPrefix(r.URL.Path, "/v0.1/servers/"); ok {
			want := strings.TrimSuffix(rest, "/versions/latest")
			for _, s := range page.Servers {
				if name(s) == want {
					_, _ = w.Write(s)
					return
				}
			}
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"detail":"Server not found"}`)
			return
		}
		if r.URL.Path != "/v0.1/servers" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"detail":"Not Found"}`)
			return
		}
		q := strings.ToLower(r.URL.Query().Get("search"))
		var matched []json.RawMessage
		for _, s := range page.Servers {
			if strings.Contains(strings.ToLower(name(s)), q) {
				matched = append(matched, s)
			}
		}
		start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
		if err != nil || limit <= 0 {
			limit = 30
		}
		start = min(max(start, 0), len(matched))
		end := min(start+limit, len(matched))
		meta := map[string]any{"count": end - start}
		if end < len(matched) {
			meta["nextCursor"] = strconv.Itoa(end)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"servers": matched[start:end], "metadata": meta})
	}), nil
}
