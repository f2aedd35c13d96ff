package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/testdata/browser"
)

const (
	keyedURN    = "urn:air:ardgate.test:mcp:keyed"
	keysCatalog = "testdata/catalogs/keys.json"
)

// keysRequired is the structuredContent of an attach's keys_required.
type keysRequired struct {
	Error, Code, URN, URL string
	Keys                  []string
}

// keysSession is a gateway session whose every tool result is kept, to
// look for a key's value in.
type keysSession struct {
	*gateway
	results []string
}

func (s *keysSession) call(name string, args any) *mcp.CallToolResult {
	s.t.Helper()
	res := s.gateway.call(name, args)
	b, _ := json.Marshal(res)
	s.results = append(s.results, string(b))
	return res
}

// discoverKeyed checks that discovery calls the keyed entry attachable,
// needing a key the user is asked for.
func (s *keysSession) discoverKeyed() {
	s.t.Helper()
	var d struct {
		Note    string
		Results []struct {
			URN        string
			Attachable bool
			Why        string   `json:"why_not_attachable"`
			NeedsKeys  []string `json:"needs_keys"`
			MayNeedEnv []string `json:"may_need_env"`
		}
	}
	decode(s.t, s.call("discover_resources", map[string]any{"text": "fixture API key", "registry_id": "keys"}), &d)
	if len(d.Results) != 1 || d.Results[0].URN != keyedURN || !d.Results[0].Attachable ||
		!slices.Equal(d.Results[0].NeedsKeys, []string{"FIXTURE_API_KEY"}) || !slices.Equal(d.Results[0].MayNeedEnv, []string{"FIXTURE_REGION"}) ||
		!strings.Contains(d.Note, "needs_keys is attachable") {
		s.t.Fatalf("discovery of the keyed entry: %+v, note %q", d.Results, d.Note)
	}
}

// keysRequired attaches the keyed entry, which must fail as keys_required
// naming FIXTURE_API_KEY, with the page's URL in the sentence.
func (s *keysSession) keysRequired() keysRequired {
	s.t.Helper()
	res := s.call("attach_resource", map[string]any{"urn": keyedURN})
	var kr keysRequired
	decode(s.t, res, &kr)
	if !res.IsError || kr.Code != "keys_required" || kr.URN != keyedURN || !slices.Equal(kr.Keys, []string{"FIXTURE_API_KEY"}) ||
		!strings.Contains(text(res), kr.URL) || !strings.Contains(text(res), "attach_resource again") || kr.Error != text(res) {
		s.t.Fatalf("attach of the keyed entry: %+v (%s)", kr, text(res))
	}
	return kr
}

// keyArrived attaches the keyed entry, now that its page was filled in,
// and checks through the fixture that its environment holds secret.
func (s *keysSession) keyArrived(secret string) {
	s.t.Helper()
	if res := s.call("attach_resource", map[string]any{"urn": keyedURN}); res.IsError {
		s.t.Fatalf("attach once the key was given: %s", text(res))
	}
	var got struct {
		Set    bool
		SHA256 string
	}
	decode(s.t, s.call("mcp_keyed__env_digest", map[string]any{"name": "FIXTURE_API_KEY"}), &got)
	sum := sha256.Sum256([]byte(secret))
	if !got.Set || got.SHA256 != hex.EncodeToString(sum[:]) {
		s.t.Fatalf("the server's FIXTURE_API_KEY: %+v, want the value typed in the page", got)
	}
}

// noSecret fails t where secret is in any of the session's results or
// in where, named by the keys.
func (s *keysSession) noSecret(secret string, where map[string]string) {
	s.t.Helper()
	for i, r := range s.results {
		if strings.Contains(r, secret) {
			s.t.Errorf("tool result %d holds the key: %s", i, r)
		}
	}
	for name, text := range where {
		if strings.Contains(text, secret) {
			s.t.Errorf("the key is in %s", name)
		}
	}
}

// newSecret is a key's value, as a user would paste it.
func newSecret() string { return "fk-" + rand.Text() }

// TestStdioKeysPage attaches a package that requires FIXTURE_API_KEY,
// which the operator did not set, over stdio: discovery calls it
// attachable, the attach answers keys_required with a page on a loopback
// listener opened for it, Chromium fills the page in as the user, the
// listener closes, and the next attach launches the server with the key
// in its environment. The key is in no result and not in the log.
func TestStdioKeysPage(t *testing.T) {
	browser.Need(t)
	secret := newSecret()
	s := &keysSession{gateway: startStdio(t, env(true), "--catalog", keysCatalog, "--log-level", "debug")}
	s.discoverKeyed()
	kr := s.keysRequired()
	page, err := url.Parse(kr.URL)
	if err != nil || page.Hostname() != "127.0.0.1" || !strings.HasPrefix(page.Path, "/credentials/") {
		t.Fatalf("the page is at %q, not on a loopback listener", kr.URL)
	}
	if again := s.keysRequired(); again.URL != kr.URL {
		t.Errorf("an attach before the page was filled in opened another: %s", again.URL)
	}
	fillKeysPage(t, kr.URL, secret)
	waitClosed(t, page.Host)
	s.keyArrived(secret)
	s.noSecret(secret, map[string]string{"the gateway's log": s.stderr.String()})
}

// TestHTTPKeysPage is TestStdioKeysPage over streamable HTTP, where the
// page is on the gateway's own listener, with the hostile cases: a wrong
// token, a post with a wrong CSRF token, from another site, or replayed,
// are each refused and change nothing. The key is in no result, not in
// the log and not in the metrics.
func TestHTTPKeysPage(t *testing.T) {
	browser.Need(t)
	secret := newSecret()
	mcpURL, stderr := startHTTP(t, env(true), "--catalog", keysCatalog, "--log-level", "debug")
	s := &keysSession{gateway: connectHTTP(t, mcpURL)}
	s.discoverKeyed()
	kr := s.keysRequired()
	base := strings.TrimSuffix(mcpURL, "/mcp")
	if !strings.HasPrefix(kr.URL, base+"/credentials/") {
		t.Fatalf("the page is at %q, not on the gateway's listener %s", kr.URL, base)
	}
	page, err := url.Parse(kr.URL)
	if err != nil {
		t.Fatal(err)
	}
	csrf := keysPage(t, kr.URL)
	form := url.Values{"csrf": {csrf}, "FIXTURE_API_KEY": {"forged"}}
	for _, c := range []struct {
		name   string
		url    string
		form   url.Values
		header map[string]string
		want   int
	}{
		{"a wrong token", base + "/credentials/" + rand.Text(), form, nil, http.StatusNotFound},
		{"no token", base + "/credentials/", form, nil, http.StatusNotFound},
		{"a wrong CSRF token", kr.URL, url.Values{"csrf": {rand.Text()}, "FIXTURE_API_KEY": {"forged"}}, nil, http.StatusForbidden},
		{"no CSRF token", kr.URL, url.Values{"FIXTURE_API_KEY": {"forged"}}, nil, http.StatusForbidden},
		{"a cross-site Origin", kr.URL, form, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"a null Origin from another site", kr.URL, form, map[string]string{"Origin": "null", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"a cross-site fetch", kr.URL, form, map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"a rebound Host", kr.URL, form, map[string]string{"Host": "rebind.example:" + page.Port()}, http.StatusMisdirectedRequest},
		{"an empty key", kr.URL, url.Values{"csrf": {csrf}, "FIXTURE_API_KEY": {""}}, nil, http.StatusBadRequest},
		{"a body too large", kr.URL, url.Values{"csrf": {csrf}, "FIXTURE_API_KEY": {strings.Repeat("k", 70<<10)}}, nil, http.StatusBadRequest},
	} {
		if got := postForm(t, c.url, c.form, c.header); got != c.want {
			t.Errorf("%s: HTTP %d, want %d", c.name, got, c.want)
		}
	}
	if again := s.keysRequired(); again.URL != kr.URL {
		t.Fatalf("a refused post ended the page: the attach opened %s", again.URL)
	}
	fillKeysPage(t, kr.URL, secret)
	if got := postForm(t, kr.URL, url.Values{"csrf": {csrf}, "FIXTURE_API_KEY": {"replayed"}}, nil); got != http.StatusBadRequest {
		t.Errorf("a replayed post: HTTP %d, want 400", got)
	}
	if resp, err := http.Get(kr.URL); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("the page once used: %v %v, want 400", resp, err)
	} else {
		resp.Body.Close()
	}
	s.keyArrived(secret)
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(metrics), "ardgate_") {
		t.Fatalf("/metrics: HTTP %d %.200s", resp.StatusCode, metrics)
	}
	s.noSecret(secret, map[string]string{"the gateway's log": stderr.String(), "the metrics": string(metrics)})
	for _, forged := range []string{"forged", "replayed"} {
		if strings.Contains(stderr.String(), forged) {
			t.Errorf("the log holds a value posted: %q", forged)
		}
	}
}

// fillKeysPage has Chromium, as the user, type secret into the page at
// raw and save it.
func fillKeysPage(t *testing.T, raw, secret string) {
	t.Helper()
	said, err := browser.FillForm(context.Background(), t.TempDir(), raw, map[string]string{"FIXTURE_API_KEY": secret})
	if err != nil || !strings.Contains(said, "return to your client") {
		t.Fatalf("the page after the post says %q (%v)", said, err)
	}
}

// keysUser is a client's side of URL-mode elicitation whose user fills
// in the page the link opens with secret, in Chromium, and accepts.
// A consent, in form mode, it accepts, and counts.
type keysUser struct {
	secret, dir string
	mu          sync.Mutex
	asked       []mcp.ElicitationParams
	consents    []string // the messages of the consents asked
}

func (u *keysUser) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.mu.Lock()
	if req.Params.Mode != mcp.ElicitationModeURL {
		u.consents = append(u.consents, req.Params.Message)
		u.mu.Unlock()
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
	}
	u.asked = append(u.asked, req.Params)
	u.mu.Unlock()
	said, err := browser.FillForm(ctx, u.dir, req.Params.URL, map[string]string{"FIXTURE_API_KEY": u.secret})
	if err != nil {
		return nil, err
	}
	if !strings.Contains(said, "return to your client") {
		return nil, fmt.Errorf("the page after the post says %q", said)
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
}

// TestURLElicitationKeysPage attaches the keyed package for a client
// that declared URL-mode elicitation, over stdio and over HTTP: the
// gateway asks the client to send its user to the page, Chromium fills
// it in, and the attach succeeds in that one call, with the key in the
// server's environment and in no result nor the log. With consent
// always, the user consents to the launch once in that call, not again
// when the attach goes on after the page.
func TestURLElicitationKeysPage(t *testing.T) {
	browser.Need(t)
	catalog, err := filepath.Abs(keysCatalog)
	if err != nil {
		t.Fatal(err)
	}
	bothModes := client.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}})
	for _, side := range []string{"stdio", "http", "stdio, consent always"} {
		t.Run(side, func(t *testing.T) {
			user := &keysUser{secret: newSecret(), dir: t.TempDir()}
			opts := []client.ClientOption{urlMode, client.WithElicitationHandler(user)}
			var g *gateway
			switch side {
			case "stdio":
				g = startStdioClient(t, env(true), opts, "--catalog", keysCatalog, "--log-level", "debug")
			case "stdio, consent always":
				cfg := writeConfig(t, map[string]any{"consent": "always", "catalogs": []string{catalog}})
				g = startStdioClient(t, env(true), []client.ClientOption{bothModes, client.WithElicitationHandler(user)}, "--config", cfg, "--log-level", "debug")
			default:
				url, stderr := startHTTP(t, env(true), "--catalog", keysCatalog, "--log-level", "debug")
				tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening())
				if err != nil {
					t.Fatal(err)
				}
				g = &gateway{t: t, stderr: stderr}
				g.connect(tr, append([]client.ClientOption{client.WithProtocolVersion(mcp.ProtocolVersion20251125)}, opts...)...)
				t.Cleanup(func() { _ = g.c.Close() })
			}
			s := &keysSession{gateway: g}
			s.keyArrived(user.secret)
			user.mu.Lock()
			asked := user.asked
			user.mu.Unlock()
			if len(asked) != 1 || asked[0].Mode != mcp.ElicitationModeURL || !strings.Contains(asked[0].URL, "/credentials/") ||
				!strings.Contains(asked[0].Message, "FIXTURE_API_KEY") || !strings.Contains(asked[0].Message, "published by ardgate.test") {
				t.Fatalf("the client was asked %+v", asked)
			}
			g.waitNoteThat(string(mcp.MethodNotificationElicitationComplete), 5*time.Second, func(n mcp.JSONRPCNotification) bool {
				return n.Params.AdditionalFields["elicitationId"] == asked[0].ElicitationID
			})
			user.mu.Lock()
			consents := user.consents
			user.mu.Unlock()
			if want := map[bool]int{true: 1}[side == "stdio, consent always"]; len(consents) != want {
				t.Errorf("the user was asked to consent %d times, want %d", len(consents), want)
			}
			for _, msg := range consents {
				if !strings.Contains(msg, "the values you type on ardgate's keys page for: FIXTURE_API_KEY.") {
					t.Errorf("the consent does not name the keys passed to the launch: %s", msg)
				}
			}
			s.noSecret(user.secret, map[string]string{"the gateway's log": g.stderr.String()})
		})
	}
}

var csrfField = regexp.MustCompile(`<input type=hidden name=csrf value="([^"]+)">`)

// keysPage GETs the page at raw as a browser would, checks the headers
// that keep it to itself, and returns its form's CSRF token.
func keysPage(t *testing.T, raw string) string {
	t.Helper()
	resp, err := http.Get(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "form-action 'self'", "frame-ancestors 'none'", "style-src 'sha256-"} {
		if !strings.Contains(csp, want) {
			t.Errorf("the page's Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Referrer-Policy") != "same-origin" ||
		!strings.Contains(string(body), `name="FIXTURE_API_KEY" type=password`) || !strings.Contains(string(body), "the fixture&#39;s settings page") ||
		strings.Contains(string(body), "\x1b") {
		t.Fatalf("the page: HTTP %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	m := csrfField.FindStringSubmatch(string(body))
	if m == nil {
		t.Fatalf("the page has no CSRF field:\n%s", body)
	}
	return m[1]
}

// postForm posts form to raw with header and returns the status.
func postForm(t *testing.T, raw string, form url.Values, header map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, raw, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		if k == "Host" {
			req.Host = v // what a browser sends for a name a site made resolve to 127.0.0.1
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestKeysMaskedInStderr attaches a package that, as a server refused by
// its API does, prints the key it was given to its stderr and exits: the
// attach's failure shows the stderr with the key masked by its name, and
// the key is in no result and in no line of the gateway's log.
func TestKeysMaskedInStderr(t *testing.T) {
	browser.Need(t)
	const urn = "urn:air:ardgate.test:mcp:leaky"
	secret := newSecret()
	s := &keysSession{gateway: startStdio(t, env(true), "--catalog", "testdata/catalogs/keys-leak.json", "--log-level", "debug")}
	var kr keysRequired
	decode(t, s.call("attach_resource", map[string]any{"urn": urn}), &kr)
	if kr.Code != "keys_required" {
		t.Fatalf("the first attach: %+v", kr)
	}
	fillKeysPage(t, kr.URL, secret)
	res := s.call("attach_resource", map[string]any{"urn": urn})
	if !res.IsError || !strings.Contains(text(res), "Bearer [FIXTURE_API_KEY redacted]") || !strings.Contains(text(res), "keys the user gave for it are forgotten") {
		t.Fatalf("the attach of a server that prints its key: %s", text(res))
	}
	// The gateway logs each line before it answers, as the crash tests
	// of e2e_stdio_test.go rely on.
	if !strings.Contains(s.stderr.String(), `upstream stderr session=stdio upstream=leaky line="mcpfixture: HTTP 401 from the API, sent Authorization: Bearer [FIXTURE_API_KEY redacted]"`) {
		t.Errorf("the masked line was not logged:\n%s", s.stderr.String())
	}
	s.noSecret(secret, map[string]string{"the gateway's log": s.stderr.String()})
}
