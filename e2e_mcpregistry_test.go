package main

import (
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ardgate/ardgate/testdata/registryfixture"
)

// The MCP Registry's deprecated servers, as its server lists them: one
// whose latest version is deprecated is discovered, and attached, as its
// newest active version; one with none is discovered not attachable,
// saying why in the registry's words, and attached by its URN (it said
// unknown_urn), its note saying it is deprecated (it said nothing); a
// deleted one is unknown. The url is configured as the
// API's, ending in /v0.1, which asked /v0.1/v0.1/servers.
func TestMCPRegistryDeprecatedServers(t *testing.T) {
	h, err := registryfixture.MCPRegistry("testdata/mcpregistry/servers.json", "testdata/registryfixture/versions.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(h)
	defer reg.Close()
	cfg := writeJSON(t, filepath.Join(t.TempDir(), "ardgate.json"), map[string]any{
		"registries":       []any{map[string]any{"id": "mcp", "kind": "mcp-registry", "url": reg.URL + "/v0.1"}},
		"allow_local_urls": true,
		"stdio":            map[string]any{"allow_from": []string{"mcp"}},
	})
	g := startStdio(t, env(true), "--config", cfg)

	var d discovered
	g.ok("discover_resources", map[string]any{"text": "weather forecast", "page_size": 20}, &d)
	for _, c := range []struct {
		urn        string
		attachable bool
		why        string
		launches   string // the package attach_resource starts
	}{
		{"urn:air:acme.github.io:mcp:weather-station", true, "", "@acme/weather-station@1.1.0"},
		{"urn:air:acme.github.io:mcp:legacy-forecast", false, `deprecated by its registry ("Superseded by io.github.acme/weather-station."); attach_resource with its urn attaches it`, "@acme/legacy-forecast@0.9.0"},
		{"urn:air:acme.github.io:mcp:weather-radar", true, "", "@acme/weather-radar@1.2.0"},
	} {
		i := slices.IndexFunc(d.Results, func(r discoveredEntry) bool { return r.URN == c.urn })
		if i < 0 || d.Results[i].Attachable != c.attachable || !strings.Contains(d.Results[i].WhyNotAttachable, c.why) {
			t.Errorf("%s: %+v; want attachable %v, saying %q", c.urn, d.Results, c.attachable, c.why)
			continue
		}
		var a attached
		g.ok("attach_resource", map[string]any{"urn": c.urn}, &a)
		if !strings.Contains(a.Endpoint, c.launches) {
			t.Errorf("%s: launched %q; want %s", c.urn, a.Endpoint, c.launches)
		}
		const deprecated = `Its registry marks it deprecated ("Superseded by io.github.acme/weather-station.")`
		if strings.Contains(a.Note, deprecated) == c.attachable {
			t.Errorf("%s: note %q; want %q only for a deprecated entry", c.urn, a.Note, deprecated)
		}
	}
	if slices.ContainsFunc(d.Results, func(r discoveredEntry) bool { return strings.HasSuffix(r.URN, ":weather-archive") }) {
		t.Errorf("a deleted server is discovered: %+v", d.Results)
	}
	g.fails("attach_resource", map[string]any{"urn": "urn:air:acme.github.io:mcp:weather-archive"}, "unknown_urn")
}
