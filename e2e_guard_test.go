package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func writeJSON(t *testing.T, path string, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func npmCard(id string) map[string]any {
	return map[string]any{"name": id, "packages": []any{map[string]any{
		"registryType": "npm", "identifier": "@ardgate-test/" + id, "version": "1.0.0", "transport": map[string]any{"type": "stdio"},
		"packageArguments": []any{map[string]any{"type": "positional", "value": "--transport=stdio"}},
	}}}
}

// Each safety rule refuses with an isError result that names the rule,
// and the session goes on.
func TestGuardRefusalsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	var hits atomic.Int64
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"name":"big","description":"` + strings.Repeat("x", 2<<20) + `"}`))
	}))
	defer big.Close()

	entry := func(name, typ string, data any) map[string]any {
		return map[string]any{"identifier": "urn:air:ardgate.test:mcp:" + name, "displayName": name, "type": typ, "data": data}
	}
	card := "application/mcp-server-card+json"
	impostor := entry("impostor", card, npmCard("fixture"))
	impostor["trustManifest"] = map[string]any{"identity": "did:web:evil.example"}
	unattested := entry("unattested", card, npmCard("fixture"))
	unattested["trustManifest"] = map[string]any{"identity": "did:web:ardgate.test", "attestations": []any{
		map[string]any{"type": "ISO27001", "uri": "https://ardgate.test/iso.pdf", "mediaType": "application/pdf"}}}
	attested := entry("attested", card, npmCard("fixture"))
	attested["trustManifest"] = map[string]any{"identity": "https://tools.ardgate.test", "attestations": []any{
		map[string]any{"type": "SOC2-Type2", "uri": "https://ardgate.test/soc2.pdf", "mediaType": "application/pdf"},
		// Its document is where the guard does not let the gateway go:
		// not checked, a plain claim, as with no digest.
		map[string]any{"type": "ISO27001", "uri": big.URL + "/iso.pdf", "digest": "sha256:" + strings.Repeat("0", 64)}}}
	md5 := entry("md5", card, npmCard("fixture"))
	md5["trustManifest"] = map[string]any{"identity": "did:web:ardgate.test", "attestations": []any{
		map[string]any{"type": "SOC2", "uri": "https://ardgate.test/soc2.pdf", "digest": "md5:0cc175b9c0f1b6a831c399e269772661"}}}
	loopback := entry("loopback-remote", card, map[string]any{"remotes": []any{map[string]any{"type": "streamable-http", "url": big.URL + "/mcp"}}})
	loopback["trustManifest"] = attested["trustManifest"] // so that the address is what stops it
	hostile := writeJSON(t, filepath.Join(dir, "hostile.json"), map[string]any{"specVersion": "1.0", "entries": []any{
		loopback,
		impostor, unattested, attested, md5,
		entry("old-type", "application/mcp-server+json", npmCard("fixture")),
		entry("agent-type", "application/a2a-agent-card+json", map[string]any{"name": "agent", "url": "https://agents.ardgate.test/a2a"}),
		map[string]any{"identifier": "urn:air:ardgate.test:mcp:oversize", "displayName": "oversize", "type": card, "url": big.URL + "/card.json"},
	}})
	cfg := writeJSON(t, filepath.Join(dir, "ardgate.json"), map[string]any{
		"registries": []any{
			map[string]any{"id": "hostile", "kind": "catalog", "path": hostile},
			map[string]any{"id": "team", "kind": "catalog", "path": mustAbs(t, "testdata/catalogs/fixture.json")},
		},
		"require_trust":      []string{"soc2"},
		"allow_attach_types": []string{card},
		"stdio":              map[string]any{"allow_from": []string{"hostile"}},
	})

	// allow_local_urls off: the loopback remote must be refused at dial.
	g := startStdio(t, env(true), "--config", cfg)
	cases := []struct{ urn, code, rule string }{
		{"urn:air:ardgate.test:mcp:loopback-remote", "refused", "ssrf"},
		{"urn:air:ardgate.test:mcp:impostor", "refused", "trust.identity"},
		{"urn:air:ardgate.test:mcp:unattested", "refused", "require_trust"},
		{"urn:air:ardgate.test:mcp:md5", "refused", "trust.digest"},
		// The older name of the card's type is the same type, let
		// through to the next rule; an agent's card is not.
		{"urn:air:ardgate.test:mcp:old-type", "refused", "require_trust"},
		{"urn:air:ardgate.test:mcp:agent-type", "refused", "allow_attach_types"},
		{"urn:air:ardgate.test:mcp:fixture", "refused", "require_trust"}, // no manifest at all
	}
	for _, c := range cases {
		msg := g.fails("attach_resource", map[string]any{"urn": c.urn}, c.code)
		if !strings.Contains(msg, "refused by "+c.rule) {
			t.Errorf("%s: message %q does not name rule %s", c.urn, msg, c.rule)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the loopback server was reached %d times", hits.Load())
	}
	// Discovery shows the trust report: what is checked, what is claimed.
	var d struct {
		Results []struct {
			URN   string
			Trust struct {
				IdentityMatchesPublisher bool     `json:"identity_matches_publisher"`
				Claimed                  []string `json:"claimed_attestations"`
				Note                     string
			}
			Attachable bool
		}
	}
	g.ok("discover_resources", map[string]any{"text": "attested", "registry_id": "hostile"}, &d)
	if r := d.Results[0]; r.URN != "urn:air:ardgate.test:mcp:attested" || !r.Attachable || !r.Trust.IdentityMatchesPublisher ||
		len(r.Trust.Claimed) != 2 || !strings.Contains(r.Trust.Note, "claims") {
		t.Fatalf("attested entry: %+v", r)
	}
	// A digest it cannot read is refused before any attach.
	g.ok("discover_resources", map[string]any{"text": "md5", "registry_id": "hostile"}, &d)
	if r := d.Results[0]; r.URN != "urn:air:ardgate.test:mcp:md5" || r.Attachable {
		t.Fatalf("md5 entry: %+v", r)
	}
	// The attested entry passes every rule and attaches; its result, and
	// the listing, say what was checked of it.
	type checked struct {
		Trust struct {
			Claimed    []string `json:"claimed_attestations"`
			NotChecked []string `json:"digest_not_checked"`
		}
	}
	var att checked
	g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:attested"}, &att)
	var listed struct{ Attachments []checked }
	g.ok("list_attached_resources", map[string]any{}, &listed)
	for _, c := range []checked{att, listed.Attachments[0]} {
		if len(c.Trust.Claimed) != 2 || !slices.Equal(c.Trust.NotChecked, []string{"ISO27001"}) {
			t.Errorf("the attached entry's trust: %+v", c.Trust)
		}
	}

	// A registry outside stdio.allow_from may not start processes; an
	// over-size card is refused (this gateway allows local URLs, so the
	// size cap is what stops it).
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"results":[],"pad":"` + strings.Repeat("x", 9<<20) + `"}`))
	}))
	defer huge.Close()
	cfg2 := writeJSON(t, filepath.Join(dir, "ardgate2.json"), map[string]any{
		"registries": []any{
			map[string]any{"id": "huge", "kind": "ard", "url": huge.URL},
			map[string]any{"id": "hostile", "kind": "catalog", "path": hostile},
			map[string]any{"id": "team", "kind": "catalog", "path": mustAbs(t, "testdata/catalogs/fixture.json")},
		},
		"allow_local_urls": true,
		"stdio":            map[string]any{"allow_from": []string{"hostile"}},
	})
	g2 := startStdio(t, env(true), "--config", cfg2)
	msg := g2.fails("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, "not_attachable")
	if !strings.Contains(msg, "refused by stdio.allow_from") {
		t.Errorf("allow_from message %q", msg)
	}
	msg = g2.fails("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:oversize"}, "refused")
	if !strings.Contains(msg, "refused by size_limit") {
		t.Errorf("over-size message %q", msg)
	}
	g2.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:old-type"}, nil)
	msg = g2.fails("discover_resources", map[string]any{"text": "anything", "registry_id": "huge"}, "refused")
	if !strings.Contains(msg, "refused by size_limit") {
		t.Errorf("over-size registry response: %q", msg)
	}
}

// A server pinned at a loopback address (a sidecar beside the gateway, or a
// cluster's service at a private one) is reached without allow_local_urls:
// the operator configured that address. A registry's entry at another
// loopback address is still refused, and so is one at the pinned server's
// own address: what a registry names goes through a dialer that knows no
// address of the operator's (with one dialer for both, it was attached).
func TestOwnAddressesWithoutAllowLocal(t *testing.T) {
	pinnedURL := startFixtureHTTP(t)
	other := startFixtureHTTP(t)
	cfg := writeConfig(t, map[string]any{
		"registries": []any{
			map[string]any{"id": "team", "kind": "catalog", "path": catalogWithRemote(t, other)},
			map[string]any{"id": "same", "kind": "catalog", "path": catalogWithRemote(t, pinnedURL)},
		},
		"servers": []any{map[string]any{"name": "side", "url": pinnedURL}},
	})
	g := startStdio(t, env(true), "--config", cfg)
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(g.toolNames(), "mcp_side__echo"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pinned loopback server never came up: %+v", g.list())
		}
	}
	if got := text(g.call("mcp_side__echo", map[string]any{"message": "beside"})); got != "beside" {
		t.Fatalf("echo: %q", got)
	}
	// Its audit line has no pid: a remote has none (it said pid=0).
	if line := regexp.MustCompile(`audit=attach session=stdio target=config:servers/side .*`).FindString(g.stderr.String()); line == "" || strings.Contains(line, "pid=") {
		t.Errorf("the pinned remote's audit line: %q", line)
	}
	for _, reg := range []string{"team", "same"} {
		if msg := g.fails("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:remote-fixture", "registry_id": reg}, "refused"); !strings.Contains(msg, "allow_local_urls is off") {
			t.Fatalf("a loopback remote of registry %s: %q", reg, msg)
		}
	}
}
