package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/testdata/mcpfixture"
	"github.com/ardgate/ardgate/testdata/registryfixture"
)

// The official MCP Registry, served locally from a recorded page: its
// servers are discovered and attached like catalog entries (the npm
// package launches through the stand-in npx).
func TestMCPRegistryDiscoverAndAttach(t *testing.T) {
	h, err := registryfixture.MCPRegistry("testdata/mcpregistry/servers.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(h)
	defer reg.Close()
	cfg := writeJSON(t, filepath.Join(t.TempDir(), "ardgate.json"), map[string]any{
		"registries":       []any{map[string]any{"id": "mcp", "kind": "mcp-registry", "url": reg.URL}},
		"allow_local_urls": true,
		"stdio":            map[string]any{"allow_from": []string{"mcp"}},
	})
	g := startStdio(t, env(true), "--config", cfg)

	var d discovered
	g.ok("discover_resources", map[string]any{"text": "magic frontend components", "page_size": 5}, &d)
	i := slices.IndexFunc(d.Results, func(r discoveredEntry) bool { return r.URN == "urn:air:21st-dev.github.io:mcp:magic-mcp" })
	if i < 0 || !d.Results[i].Attachable || d.Results[i].RegistryID != "mcp" {
		t.Fatalf("magic-mcp not discovered as attachable: %+v", d.Results)
	}

	var a attached
	g.ok("attach_resource", map[string]any{"urn": "urn:air:21st-dev.github.io:mcp:magic-mcp"}, &a)
	if !strings.Contains(a.Endpoint, "@21st-dev/magic@0.0.46") {
		t.Fatalf("launched %q, want the registry's npm package", a.Endpoint)
	}
	g.waitNote("notifications/tools/list_changed", 10*time.Second)
	if got := text(g.call("mcp_magic_mcp__echo", map[string]any{"message": "from the registry"})); got != "from the registry" {
		t.Fatalf("echo = %q", got)
	}
	// A URN never discovered in this session is looked up by name.
	var b attached
	g.ok("attach_resource", map[string]any{"urn": "urn:air:circleci-public.github.io:mcp:mcp-server-circleci", "registry_id": "mcp"}, &b)
	if !strings.Contains(b.Endpoint, "@circleci/mcp-server-circleci@0.7.1") {
		t.Fatalf("launched %q", b.Endpoint)
	}
}

// headerRecorder wraps a handler and remembers every Authorization header
// it was sent.
type headerRecorder struct {
	mu   sync.Mutex
	seen []string
	next http.Handler
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.seen = append(h.seen, r.Header.Get("Authorization"))
	h.mu.Unlock()
	h.next.ServeHTTP(w, r)
}

func (h *headerRecorder) sawToken(tok string) (yes bool, requests int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.seen {
		yes = yes || strings.Contains(a, tok)
	}
	return yes, len(h.seen)
}

// `ardgate registry serve` as a real ARD registry for the gateway: search
// and lookup go through it with the registry's token, which never reaches
// the host serving the artifact nor the attached server.
func TestRegistryServeAndTokenScope(t *testing.T) {
	// Servers are closed by t.Cleanup registered before the gateway starts,
	// so they close after it: its open event streams would block Close.
	mcpHandler := server.NewStreamableHTTPServer(mcpfixture.New("up"))
	upstream := &headerRecorder{next: mcpHandler}
	up := httptest.NewServer(upstream)
	t.Cleanup(func() { _ = mcpHandler.Shutdown(context.Background()); up.Close() })
	artifacts := &headerRecorder{next: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"name":"team/tools","remotes":[{"type":"streamable-http","url":"`+up.URL+`"}]}`)
	})}
	art := httptest.NewServer(artifacts)
	t.Cleanup(art.Close)

	dir := t.TempDir()
	catalog := writeJSON(t, filepath.Join(dir, "team.json"), map[string]any{"specVersion": "1.0", "entries": []any{
		map[string]any{"identifier": "urn:air:team.example:mcp:toolbox", "displayName": "Team toolbox", "type": "application/mcp-server-card+json",
			"url": art.URL + "/cards/toolbox.json", "description": "echo and add tools of the team"},
	}})
	regURL, stopReg := startRegistryServe(t, "--catalog", catalog)
	t.Cleanup(stopReg)
	registryProxy := &headerRecorder{next: httputil.NewSingleHostReverseProxy(mustURL(t, regURL))}
	reg := httptest.NewServer(registryProxy)
	t.Cleanup(reg.Close)

	cfg := writeJSON(t, filepath.Join(dir, "ardgate.json"), map[string]any{
		"registries":       []any{map[string]any{"id": "team", "kind": "ard", "url": reg.URL, "token_env": "TEAM_TOKEN"}},
		"allow_local_urls": true,
	})
	g := startStdio(t, env(false, "TEAM_TOKEN=s3cret-team-token"), "--config", cfg)
	var d discovered
	g.ok("discover_resources", map[string]any{"text": "team toolbox echo"}, &d)
	if len(d.Results) != 1 || d.Results[0].URN != "urn:air:team.example:mcp:toolbox" || !d.Results[0].Attachable {
		t.Fatalf("discover through registry serve: %+v", d)
	}
	g.ok("attach_resource", map[string]any{"urn": "urn:air:team.example:mcp:toolbox"}, nil)
	if got := text(g.call("mcp_toolbox__echo", map[string]any{"message": "scoped"})); got != "scoped" {
		t.Fatalf("echo = %q", got)
	}
	if yes, n := registryProxy.sawToken("s3cret-team-token"); !yes {
		t.Fatalf("the registry never got its token (%d requests)", n)
	}
	for name, h := range map[string]*headerRecorder{"artifact host": artifacts, "attached server": upstream} {
		if yes, n := h.sawToken("s3cret"); yes || n == 0 {
			t.Fatalf("%s: token seen %v in %d requests", name, yes, n)
		}
	}
}

func startRegistryServe(t *testing.T, args ...string) (string, func()) {
	t.Helper()
	cmd := exec.Command(gatewayBin, append([]string{"registry", "serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Env = env(false)
	pipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		var rec struct{ URL string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.URL != "" {
			go io.Copy(io.Discard, pipe)
			return strings.TrimSuffix(rec.URL, "/"), func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }
		}
	}
	_ = cmd.Wait()
	t.Fatal("registry serve did not start")
	return "", nil
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// The "source" of search results is the URL the request reached the
// registry at, Host header and all, unless --source gives it.
func TestRegistryServeSource(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "http://any.example.com/"},
		{[]string{"--source", "https://registry.example.com/"}, "https://registry.example.com/"},
	} {
		regURL, stop := startRegistryServe(t, append([]string{"--catalog", "testdata/catalogs/fixture.json"}, tc.args...)...)
		req, _ := http.NewRequest(http.MethodPost, regURL+"/search", strings.NewReader(`{"query":{"text":"echo"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Host = "any.example.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page struct{ Results []struct{ Source string } }
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		stop()
		if err != nil || len(page.Results) == 0 || page.Results[0].Source != tc.want {
			t.Errorf("%v: %+v %v, want source %s", tc.args, page, err, tc.want)
		}
	}
}

// Everruns' Quick Start config (../shared/seeds/everruns-ard.txt, "1.
// Enable the capability on an agent"), taken as written but for its
// registry's url, here ardgate's own registry on loopback, and so
// allow_local_urls: discover finds an entry with no registry_id, and
// attach_resource attaches it, though the config allows only the older
// name of the MCP server card's type (the entry has the newer).
func TestEverrunsQuickStart(t *testing.T) {
	regURL, stop := startRegistryServe(t, "--catalog", catalogWithRemote(t, startFixtureHTTP(t)))
	t.Cleanup(stop)
	quickStart := `{ "registries": [ { "id": "public", "url": "` + regURL + `", "federation": "none" } ], "require_trust": [], "allow_attach_types": ["application/mcp-server+json", "application/a2a-agent-card+json"], "max_attachments": 5, "allow_local_urls": true}`
	path := filepath.Join(t.TempDir(), "everruns.json")
	if err := os.WriteFile(path, []byte(quickStart), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startStdio(t, env(true), "--config", path)
	var d discovered
	g.ok("discover_resources", map[string]any{"text": "echo fixture"}, &d)
	const urn = "urn:air:ardgate.test:mcp:remote-fixture"
	i := slices.IndexFunc(d.Results, func(r discoveredEntry) bool { return r.URN == urn })
	if i < 0 || d.Results[i].RegistryID != "public" || !d.Results[i].Attachable {
		t.Fatalf("the remote fixture through the Quick Start's registry: %+v", d.Results)
	}
	g.ok("attach_resource", map[string]any{"urn": urn}, nil)
	if got := text(g.call("mcp_remote_fixture__echo", map[string]any{"message": "everruns"})); got != "everruns" {
		t.Fatalf("echo = %q", got)
	}
}
