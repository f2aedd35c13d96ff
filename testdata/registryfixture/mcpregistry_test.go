package registryfixture

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
)

// serve starts the fixture over the recorded corpus and the versioned
// servers, on loopback.
func serve(t *testing.T) *httptest.Server {
	t.Helper()
	h, err := MCPRegistry("../mcpregistry/servers.json", "versions.json")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

type listed struct {
	Servers []struct {
		Server struct{ Name, Version string }
		Meta   struct {
			Official struct {
				Status, StatusMessage string
				IsLatest              bool
			} `json:"io.modelcontextprotocol.registry/official"`
		} `json:"_meta"`
	}
	Metadata struct {
		NextCursor string
		Count      int
	}
}

// get fetches path and decodes a list, returning the status and body.
func get(t *testing.T, ts *httptest.Server, path string) (int, listed, string) {
	t.Helper()
	resp, err := http.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var l listed
	if resp.StatusCode == http.StatusOK && json.Unmarshal(body, &l) != nil {
		// One server's record, not a list.
		var one struct {
			Server struct{ Name, Version string }
		}
		if err := json.Unmarshal(body, &one); err != nil {
			t.Fatalf("%s: %v: %s", path, err, body)
		}
	}
	return resp.StatusCode, l, string(body)
}

// Pages go on from the cursor of a full page's last server, "name:version",
// sorted by name: a list whose length the limit divides ends with an
// empty page, as the registry's does; the cursor is not an offset.
func TestMCPRegistryCursors(t *testing.T) {
	ts := serve(t)
	for _, c := range []struct {
		query string
		limit int
		total int // servers listed
		pages int // pages read, the last empty when limit divides total
	}{
		{"version=latest&search=weather", 2, 4, 3},
		{"search=weather", 3, 7, 3}, // every version, deleted ones left out
		{"search=ACME", 3, 6, 3},
		{"version=latest", 100, 467, 5},
		{"version=latest&search=weather-station", 1, 1, 2},
	} {
		var names []string
		pages := 0
		for cursor := ""; ; {
			q := fmt.Sprintf("/v0.1/servers?%s&limit=%d", c.query, c.limit)
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			status, l, body := get(t, ts, q)
			if status != http.StatusOK {
				t.Fatalf("%s: %d %s", q, status, body)
			}
			pages++
			for _, s := range l.Servers {
				names = append(names, s.Server.Name+":"+s.Server.Version)
			}
			switch {
			case len(l.Servers) == c.limit && l.Metadata.NextCursor != names[len(names)-1]:
				t.Fatalf("%s: a full page's cursor is %q, not its last server's name:version", q, l.Metadata.NextCursor)
			case len(l.Servers) < c.limit && l.Metadata.NextCursor != "":
				t.Fatalf("%s: a short page names a cursor %q", q, l.Metadata.NextCursor)
			}
			if cursor = l.Metadata.NextCursor; cursor == "" {
				break
			}
		}
		// By name, then version: "a/b:1" comes before "a/b-c:1".
		sorted := slices.IsSortedFunc(names, func(x, y string) int {
			xn, xv, _ := strings.Cut(x, ":")
			yn, yv, _ := strings.Cut(y, ":")
			return cmp.Or(cmp.Compare(xn, yn), cmp.Compare(xv, yv))
		})
		if len(names) != c.total || pages != c.pages || !sorted {
			t.Errorf("%s, limit %d: %d servers in %d pages, sorted %v; want %d in %d, sorted", c.query, c.limit, len(names), pages, sorted, c.total, c.pages)
		}
	}
}

// What the registry's validator refuses gets its 422: a search shorter
// than three characters, counted in runes, and a limit outside 1..100.
func TestMCPRegistryRefusals(t *testing.T) {
	ts := serve(t)
	for _, c := range []struct {
		query    string
		status   int
		location string
	}{
		{"search=ab", 422, "query.search"},
		{"search=" + url.QueryEscape("éé"), 422, "query.search"}, // four bytes, two runes
		{"search=" + url.QueryEscape("日本"), 422, "query.search"},
		{"search=" + url.QueryEscape("ééé"), 200, ""},
		{"search=abc", 200, ""},
		{"limit=101", 422, "query.limit"},
		{"limit=0", 422, "query.limit"},
		{"limit=ten", 422, "query.limit"},
		{"limit=100", 200, ""},
	} {
		status, _, body := get(t, ts, "/v0.1/servers?"+c.query)
		if status != c.status || c.location != "" && !strings.Contains(body, `"location":"`+c.location+`"`) {
			t.Errorf("%s: %d %s; want %d at %s", c.query, status, body, c.status, c.location)
		}
	}
}

// A server's name is one path segment, its slash sent as %2F; its
// versions are listed newest first, "latest" is the latest version,
// whatever its status, and a deleted version is not served unless asked
// for.
func TestMCPRegistryVersions(t *testing.T) {
	ts := serve(t)
	for _, c := range []struct {
		path    string
		status  int
		version string // of the one server, or the list's versions
		says    string
	}{
		{"/v0.1/servers/io.github.acme%2Fweather-station/versions/latest", 200, "2.0.0", `"statusMessage":"2.0.0 sends the API key`},
		{"/v0/servers/io.github.acme%2Fweather-station/versions/latest", 200, "2.0.0", `"status":"deprecated"`},
		{"/v0.1/servers/io.github.acme%2Fweather-station/versions/1.1.0", 200, "1.1.0", `"status":"active"`},
		{"/v0.1/servers/io.github.acme%2Fweather-station/versions", 200, "2.0.0 1.1.0 1.0.0", ""},
		{"/v0.1/servers/io.github.acme/weather-station/versions/latest", 404, "", "404 page not found"},
		{"/v0.1/servers/io.github.acme%2Fweather-archive/versions/latest", 404, "", "Server not found"},
		{"/v0.1/servers/io.github.acme%2Fweather-archive/versions/latest?include_deleted=true", 200, "1.0.0", `"status":"deleted"`},
		{"/v0.1/servers/io.github.acme%2Fweather-archive/versions", 404, "", "Server not found"},
		{"/v0.1/servers/io.github.21st-dev%2Fmagic-mcp/versions/latest", 200, "0.0.1-seed", `"isLatest":true`},
		{"/v0.1/v0.1/servers", 404, "", "404 page not found"},
	} {
		status, l, body := get(t, ts, c.path)
		var one struct{ Server struct{ Version string } }
		_ = json.Unmarshal([]byte(body), &one)
		got := one.Server.Version
		if len(l.Servers) > 0 {
			var vs []string
			for _, s := range l.Servers {
				vs = append(vs, s.Server.Version)
			}
			got = strings.Join(vs, " ")
		}
		if status != c.status || got != c.version || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d, version %q, %s; want %d, %q, saying %s", c.path, status, got, body, c.status, c.version, c.says)
		}
	}
}

// Data the registry could not hold is refused as the fixture loads it.
func TestMCPRegistryRefusesImpossibleData(t *testing.T) {
	dir := t.TempDir()
	for name, servers := range map[string]string{
		"two latest": `{"server":{"name":"a.b/c","version":"1"},"_meta":{"io.modelcontextprotocol.registry/official":{"isLatest":true}}},
			{"server":{"name":"a.b/c","version":"2"},"_meta":{"io.modelcontextprotocol.registry/official":{"isLatest":true}}}`,
		"no latest": `{"server":{"name":"a.b/c","version":"1"}}`,
		"twice":     `{"server":{"name":"a.b/c","version":"1"}},{"server":{"name":"a.b/c","version":"1"}}`,
	} {
		path := dir + "/" + strings.ReplaceAll(name, " ", "-") + ".json"
		if err := os.WriteFile(path, []byte(`{"servers":[`+servers+`]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := MCPRegistry(path); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}
