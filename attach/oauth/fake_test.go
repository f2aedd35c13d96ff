package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ardgate/ardgate/guard"
)

// fake is an MCP server at /mcp and its authorization server, on one
// loopback httptest server. Its token endpoint checks PKCE, the resource
// and single use of codes, as a strict server does.
type fake struct {
	t   *testing.T
	srv *httptest.Server
	// prm and asm may change the metadata before it is served.
	prm func(map[string]any)
	asm func(map[string]any)
	// expiresIn is the lifetime of each token issued, in seconds.
	expiresIn int

	mu        sync.Mutex
	codes     map[string]url.Values // code -> the authorize request
	used      map[string]bool
	tokens    map[string]bool // valid access tokens
	refresh   map[string]bool
	tokenReqs []url.Values
	n         int
}

func newFake(t *testing.T) *fake {
	f := &fake{t: t, expiresIn: 3600, codes: map[string]url.Values{}, used: map[string]bool{}, tokens: map[string]bool{}, refresh: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", f.mcp)
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", f.serve(f.resourceMeta))
	mux.HandleFunc("/.well-known/oauth-authorization-server", f.serve(f.serverMeta))
	mux.HandleFunc("POST /register", f.register)
	mux.HandleFunc("/authorize", f.authorize)
	mux.HandleFunc("POST /token", f.token)
	mux.HandleFunc("POST /register-fails", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_redirect_uri","error_description":"loopback redirects only"}`))
	})
	mux.HandleFunc("POST /token-fails", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(strings.Repeat("<html>", 100<<10)))
	})
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusTemporaryRedirect)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) url(p string) string { return f.srv.URL + p }

func (f *fake) resourceMeta() map[string]any {
	m := map[string]any{"resource": f.url("/mcp"), "authorization_servers": []string{f.srv.URL}, "scopes_supported": []string{"mcp:tools"}, "resource_name": "Fake"}
	if f.prm != nil {
		f.prm(m)
	}
	return m
}

func (f *fake) serverMeta() map[string]any {
	m := map[string]any{
		"issuer": f.srv.URL, "authorization_endpoint": f.url("/authorize"), "token_endpoint": f.url("/token"),
		"registration_endpoint": f.url("/register"), "code_challenge_methods_supported": []string{"S256"},
		"response_types_supported": []string{"code"},
	}
	if f.asm != nil {
		f.asm(m)
	}
	return m
}

func (f *fake) serve(doc func() map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc())
	}
}

func (f *fake) mcp(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	ok := f.tokens[r.Header.Get("Authorization")]
	f.mu.Unlock()
	if !ok {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", resource_metadata=%q, scope="mcp:read"`, f.url("/.well-known/oauth-protected-resource/mcp")))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	_, _ = w.Write([]byte(`{"ok":true}`))
}

func (f *fake) register(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"client_id":"client-1","token_endpoint_auth_method":"none"}`))
}

func (f *fake) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	f.n++
	code := "code-" + strconv.Itoa(f.n)
	f.codes[code] = q
	f.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (f *fake) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenReqs = append(f.tokenReqs, r.PostForm)
	if r.PostForm.Get("resource") != f.url("/mcp") {
		tokenError(w, "invalid_target")
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		auth, ok := f.codes[code]
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || f.used[code] || base64.RawURLEncoding.EncodeToString(sum[:]) != auth.Get("code_challenge") || auth.Get("resource") != f.url("/mcp") {
			tokenError(w, "invalid_grant")
			return
		}
		f.used[code] = true
	case "refresh_token":
		if !f.refresh[r.PostForm.Get("refresh_token")] {
			tokenError(w, "invalid_grant")
			return
		}
	default:
		tokenError(w, "unsupported_grant_type")
		return
	}
	f.n++
	access, refresh := "access-"+strconv.Itoa(f.n), "refresh-"+strconv.Itoa(f.n)
	f.tokens["Bearer "+access], f.refresh[refresh] = true, true
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": f.expiresIn, "refresh_token": refresh})
}

func tokenError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = fmt.Fprintf(w, `{"error":%q}`, code)
}

// expire ends every access token issued so far, as a server does when
// their time is up.
func (f *fake) expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.tokens)
}

func (f *fake) authorizeRequests() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []url.Values
	for _, q := range f.codes {
		out = append(out, q)
	}
	return out
}

func (f *fake) requests() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]url.Values(nil), f.tokenReqs...)
}

// dials records every address a test dials, and refuses, failing the
// test, any that is not loopback: nothing leaves the machine.
type dials struct {
	t  *testing.T
	mu sync.Mutex
	to []string
}

func (d *dials) connect(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.to = append(d.to, addr)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		d.t.Errorf("dialed %s, not a loopback address", addr)
		return nil, fmt.Errorf("test refuses to dial %s", addr)
	}
	return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
}

func (d *dials) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.to...)
}

// testConfig is a Config over a guarded client that allows loopback and
// dials loopback only, and the dials it makes.
func testConfig(t *testing.T) (*Config, *dials) {
	rec := &dials{t: t}
	d := &guard.Dialer{AllowLocal: true, Connect: rec.connect}
	hc := d.Client()
	t.Cleanup(hc.CloseIdleConnections)
	return &Config{HTTP: hc, Dialer: d, RedirectURL: "http://127.0.0.1:9/oauth/callback", ClientName: "ardgate test"}, rec
}

// challenge is the 401 an unauthenticated POST to serverURL gets.
func challenge(t *testing.T, c *Config, serverURL string) http.Header {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, serverURL, nil)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unauthenticated POST: HTTP %d, want 401", resp.StatusCode)
	}
	return resp.Header
}

// browse opens the flow's URL as a browser would, without following the
// redirect back, and returns the query the redirect carries.
func browse(t *testing.T, c *Config, f *Flow) url.Values {
	t.Helper()
	hc := *c.HTTP
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.URL(), nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("authorize: HTTP %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query()
}

// authorized runs the whole flow at fk and returns its grant.
func authorized(t *testing.T, c *Config, fk *fake) *Grant {
	t.Helper()
	f, err := c.Authorize(t.Context(), fk.url("/mcp"), challenge(t, c, fk.url("/mcp")))
	if err != nil {
		t.Fatal(err)
	}
	g, err := f.Callback(t.Context(), browse(t, c, f))
	if err != nil {
		t.Fatal(err)
	}
	return g
}
