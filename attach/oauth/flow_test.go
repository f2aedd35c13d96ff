package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ardgate/ardgate/guard"
)

// get GETs rawURL through the grant's transport and returns the status.
func get(t *testing.T, c *Config, g *Grant, rawURL string) int {
	t.Helper()
	hc := &http.Client{Transport: g.Transport(c.HTTP.Transport)}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, rawURL, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestFlowSendsPKCEStateResourceAndScope(t *testing.T) {
	c, _ := testConfig(t)
	fk := newFake(t)
	g := authorized(t, c, fk)
	if code := get(t, c, g, fk.url("/mcp")); code != http.StatusOK {
		t.Fatalf("authorized GET /mcp: HTTP %d", code)
	}
	auth := fk.authorizeRequests()
	if len(auth) != 1 {
		t.Fatalf("%d authorize requests, want 1", len(auth))
	}
	q := auth[0]
	for k, want := range map[string]string{"code_challenge_method": "S256", "resource": fk.url("/mcp"), "scope": "mcp:read", "client_id": "client-1", "response_type": "code"} {
		if q.Get(k) != want {
			t.Errorf("authorize %s = %q, want %q", k, q.Get(k), want)
		}
	}
	if len(q.Get("state")) < 32 || len(q.Get("code_challenge")) < 43 {
		t.Errorf("state %q or code_challenge %q too short", q.Get("state"), q.Get("code_challenge"))
	}
}

func TestWellKnownFallbackWithoutChallenge(t *testing.T) {
	c, _ := testConfig(t)
	fk := newFake(t)
	s, err := c.Discover(t.Context(), fk.url("/mcp"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Resource != fk.url("/mcp") || s.TokenEndpoint != fk.url("/token") || !slices.Equal(s.Scopes, []string{"mcp:tools"}) {
		t.Errorf("discovered %+v", s)
	}
}

func TestWrongStateIsRefused(t *testing.T) {
	c, _ := testConfig(t)
	fk := newFake(t)
	f, err := c.Authorize(t.Context(), fk.url("/mcp"), challenge(t, c, fk.url("/mcp")))
	if err != nil {
		t.Fatal(err)
	}
	q := browse(t, c, f)
	if _, err := f.Exchange(t.Context(), "forged-"+q.Get("state"), q.Get("code")); !errors.Is(err, ErrStateMismatch) {
		t.Fatalf("wrong state: %v, want ErrStateMismatch", err)
	}
	if n := len(fk.requests()); n != 0 {
		t.Fatalf("a wrong state reached the token endpoint (%d requests)", n)
	}
	if _, err := f.Callback(t.Context(), q); err != nil {
		t.Fatalf("the right state after a forged one: %v", err)
	}
}

func TestReplayedCodeIsRefused(t *testing.T) {
	c, _ := testConfig(t)
	fk := newFake(t)
	f, err := c.Authorize(t.Context(), fk.url("/mcp"), challenge(t, c, fk.url("/mcp")))
	if err != nil {
		t.Fatal(err)
	}
	q := browse(t, c, f)
	if _, err := f.Callback(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Callback(t.Context(), q); !errors.Is(err, ErrCodeReused) {
		t.Errorf("replayed code: %v, want ErrCodeReused", err)
	}
	if _, err := f.Exchange(t.Context(), q.Get("state"), "another-code"); !errors.Is(err, ErrStateReused) {
		t.Errorf("state used again: %v, want ErrStateReused", err)
	}
	if n := len(fk.requests()); n != 1 {
		t.Errorf("%d token requests, want 1: a replay must not reach the server", n)
	}
}

func TestRefreshAfterExpiry(t *testing.T) {
	c, _ := testConfig(t)
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	fk := newFake(t)
	fk.expiresIn = 60
	g := authorized(t, c, fk)
	if code := get(t, c, g, fk.url("/mcp")); code != http.StatusOK {
		t.Fatalf("GET /mcp: HTTP %d", code)
	}
	fk.expire()
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if code := get(t, c, g, fk.url("/mcp")); code != http.StatusOK {
		t.Fatalf("GET /mcp after expiry: HTTP %d, want a refreshed token", code)
	}
	reqs := fk.requests()
	if len(reqs) != 2 || reqs[1].Get("grant_type") != "refresh_token" || reqs[1].Get("resource") != fk.url("/mcp") || reqs[1].Get("client_id") != "client-1" {
		t.Fatalf("token requests %v, want a code exchange then a refresh with the resource", reqs)
	}
}

func TestExpiredWithoutRefreshToken(t *testing.T) {
	c, _ := testConfig(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Now = func() time.Time { return now }
	fk := newFake(t)
	fk.expiresIn = 60
	g := authorized(t, c, fk)
	g.tok.RefreshToken = ""
	now = now.Add(time.Hour)
	if _, err := g.Token(t.Context()); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired without a refresh token: %v, want ErrExpired", err)
	}
}

// TestRefusedAddresses: metadata naming an address the guard refuses is
// refused before anything is dialed there.
func TestRefusedAddresses(t *testing.T) {
	cases := []struct {
		name string
		prm  func(map[string]any)
		asm  func(map[string]any)
	}{
		{name: "cloud metadata authorization server", prm: func(m map[string]any) { m["authorization_servers"] = []string{"https://169.254.169.254/"} }},
		{name: "name that resolves to cloud metadata", prm: func(m map[string]any) { m["authorization_servers"] = []string{"https://as.test/"} }},
		{name: "reserved token endpoint", asm: func(m map[string]any) { m["token_endpoint"] = "https://240.0.0.1/token" }},
		{name: "plain http registration off loopback", asm: func(m map[string]any) { m["registration_endpoint"] = "http://192.0.2.7/register" }},
		{name: "script authorization endpoint", asm: func(m map[string]any) { m["authorization_endpoint"] = "javascript:alert(1)" }},
		{name: "credentials in a URL", asm: func(m map[string]any) { m["token_endpoint"] = "http://user:pw@127.0.0.1:1/token" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, rec := testConfig(t)
			c.Dialer.LookupIP = func(_ context.Context, host string) ([]netip.Addr, error) {
				if host == "as.test" {
					return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
				}
				return nil, errors.New("no such host in this test")
			}
			fk := newFake(t)
			fk.prm, fk.asm = tc.prm, tc.asm
			_, err := c.Authorize(t.Context(), fk.url("/mcp"), challenge(t, c, fk.url("/mcp")))
			if !errors.Is(err, guard.ErrRefused) {
				t.Fatalf("err = %v, want a guard refusal", err)
			}
			t.Log(err)
			for _, a := range rec.seen() {
				if !strings.HasPrefix(a, "127.0.0.1:") {
					t.Errorf("dialed %s", a)
				}
			}
		})
	}
}

func TestLocalServerRefusedWithoutAllowLocal(t *testing.T) {
	rec := &dials{t: t}
	d := &guard.Dialer{Connect: rec.connect}
	c := &Config{HTTP: d.Client(), Dialer: d, RedirectURL: "http://127.0.0.1:9/cb"}
	fk := newFake(t)
	if _, err := c.Discover(t.Context(), fk.url("/mcp"), nil); !errors.Is(err, guard.ErrRefused) {
		t.Fatalf("err = %v, want a refusal of plain http on loopback", err)
	}
	if n := len(rec.seen()); n != 0 {
		t.Fatalf("%d dials, want none", n)
	}
}

func TestTokenStaysOnItsOrigin(t *testing.T) {
	c, _ := testConfig(t)
	fk := newFake(t)
	g := authorized(t, c, fk)
	var mu sync.Mutex
	var got []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer other.Close()
	// Through a redirect from the token's origin, and straight to the
	// other origin with the header already set by the caller.
	if code := get(t, c, g, fk.url("/hop?to="+other.URL+"/x")); code != http.StatusOK {
		t.Fatalf("redirect to the other origin: HTTP %d", code)
	}
	hc := &http.Client{Transport: g.Transport(c.HTTP.Transport)}
	tok, err := g.Token(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, other.URL+"/y", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != "" || got[1] != "" {
		t.Fatalf("the other origin saw Authorization %q, want none twice", got)
	}
	if _, err := g.Header(t.Context(), other.URL+"/z"); !errors.Is(err, ErrOtherOrigin) {
		t.Fatalf("Header for another origin: %v, want ErrOtherOrigin", err)
	}
	if h, err := g.Header(t.Context(), fk.url("/mcp")); err != nil || h != "Bearer "+tok {
		t.Fatalf("Header for the origin: %q, %v", h, err)
	}
}

func TestNoPKCEIsRefused(t *testing.T) {
	for name, methods := range map[string]any{"absent": nil, "plain only": []string{"plain"}} {
		t.Run(name, func(t *testing.T) {
			c, _ := testConfig(t)
			fk := newFake(t)
			fk.asm = func(m map[string]any) {
				delete(m, "code_challenge_methods_supported")
				if methods != nil {
					m["code_challenge_methods_supported"] = methods
				}
			}
			_, err := c.Discover(t.Context(), fk.url("/mcp"), challenge(t, c, fk.url("/mcp")))
			if !errors.Is(err, ErrNoPKCE) {
				t.Fatalf("err = %v, want ErrNoPKCE", err)
			}
			t.Log(err)
		})
	}
}

func TestOversizedMetadataIsRefused(t *testing.T) {
	many := make([]string, 1000)
	for i := range many {
		many[i] = "s"
	}
	cases := map[string]func(map[string]any){
		"document":      func(m map[string]any) { m["padding"] = strings.Repeat("x", 100<<10) },
		"resource_name": func(m map[string]any) { m["resource_name"] = strings.Repeat("n", 10<<10) },
		"scopes":        func(m map[string]any) { m["scopes_supported"] = many },
	}
	for name, prm := range cases {
		t.Run(name, func(t *testing.T) {
			c, _ := testConfig(t)
			fk := newFake(t)
			fk.prm = prm
			_, err := c.Discover(t.Context(), fk.url("/mcp"), nil)
			var r *guard.Refusal
			if !errors.As(err, &r) || r.Rule != "size_limit" {
				t.Fatalf("err = %v, want a size_limit refusal", err)
			}
			t.Log(err)
		})
	}
}

func TestMetadataForAnotherServerIsRefused(t *testing.T) {
	cases := map[string]struct{ prm, asm func(map[string]any) }{
		"resource":    {prm: func(m map[string]any) { m["resource"] = "https://victim.example/mcp" }},
		"sibling":     {prm: func(m map[string]any) { m["resource"] = m["resource"].(string) + "-other" }},
		"issuer":      {asm: func(m map[string]any) { m["issuer"] = "https://other.example" }},
		"no endpoint": {asm: func(m map[string]any) { delete(m, "token_endpoint") }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _ := testConfig(t)
			fk := newFake(t)
			fk.prm, fk.asm = tc.prm, tc.asm
			_, err := c.Discover(t.Context(), fk.url("/mcp"), nil)
			if !errors.Is(err, ErrBadMetadata) {
				t.Fatalf("err = %v, want ErrBadMetadata", err)
			}
			t.Log(err)
		})
	}
}

func TestConfiguredClientWithoutRegistration(t *testing.T) {
	c, _ := testConfig(t)
	fk := newFake(t)
	fk.asm = func(m map[string]any) { delete(m, "registration_endpoint") }
	s, err := c.Discover(t.Context(), fk.url("/mcp"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(t.Context(), s); !errors.Is(err, ErrNoClient) {
		t.Fatalf("no registration, no client id: %v, want ErrNoClient", err)
	}
	c.ClientID = "configured"
	r, err := c.Register(t.Context(), s)
	if err != nil || r.ClientID != "configured" || r.AuthMethod != "none" {
		t.Fatalf("configured client: %+v, %v", r, err)
	}
}

func TestRegistrationErrorIsNamed(t *testing.T) {
	c, _ := testConfig(t)
	fk := newFake(t)
	fk.asm = func(m map[string]any) { m["registration_endpoint"] = fk.url("/register-fails") }
	_, err := c.Authorize(t.Context(), fk.url("/mcp"), nil)
	if err == nil || !strings.Contains(err.Error(), "HTTP 400: invalid_redirect_uri loopback redirects only") {
		t.Fatalf("a refused registration: %v, want its OAuth error named", err)
	}
}

func TestBearerParams(t *testing.T) {
	cases := []struct {
		in   []string
		want map[string]string
	}{
		{[]string{`Bearer resource_metadata="https://a/x", scope="a b"`}, map[string]string{"resource_metadata": "https://a/x", "scope": "a b"}},
		{[]string{`Basic realm="r, x", Bearer error=invalid_token, resource_metadata="https://a/\"q\""`}, map[string]string{"error": "invalid_token", "resource_metadata": `https://a/"q"`}},
		{[]string{`Basic realm="r"`, `bearer scope=read`}, map[string]string{"scope": "read"}},
		{[]string{`Bearer scope="a", DPoP algs="ES256"`}, map[string]string{"scope": "a"}},
		{[]string{`Basic dXNlcjpwYXNz==`}, nil},
		{[]string{`Bearer scope="unterminated`}, map[string]string{}},
	}
	for _, tc := range cases {
		got := bearerParams(tc.in)
		if len(got) != len(tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%q: %s = %q, want %q", tc.in, k, got[k], v)
			}
		}
	}
}

func TestTokenEndpointFailureIsBounded(t *testing.T) {
	c, _ := testConfig(t)
	fk := newFake(t)
	fk.asm = func(m map[string]any) { m["token_endpoint"] = fk.url("/token-fails") }
	f, err := c.Authorize(t.Context(), fk.url("/mcp"), challenge(t, c, fk.url("/mcp")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Callback(t.Context(), browse(t, c, f))
	if err == nil {
		t.Fatal("a failing token endpoint gave a grant")
	}
	if len(err.Error()) > 300 || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("a failing token endpoint: %d bytes of error, want a short one naming HTTP 500: %.300v", len(err.Error()), err)
	}
	t.Log(err)
}
