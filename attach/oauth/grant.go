package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Grant holds the tokens of one server, for the origin they were issued
// for, and refreshes them. It lives in memory, and is kept across
// restarts only as its caller saves it (saved.go).
type Grant struct {
	cfg      *Config
	conf     *oauth2.Config
	origin   string
	resource string

	mu      sync.Mutex // held across a refresh, so one runs at a time
	tok     *oauth2.Token
	expires time.Time // zero: the server gave no lifetime
	// changed hears the grant after each refresh (OnChange, saved.go).
	changed func(Saved)
}

// expirySkew refreshes a token this long before it expires, so it does
// not expire in flight.
const expirySkew = 10 * time.Second

// maxToken bounds an access or refresh token.
const maxToken = 16 << 10

func newGrant(f *Flow, tok *oauth2.Token) (*Grant, error) {
	u, err := url.Parse(f.server.URL)
	if err != nil {
		return nil, fmt.Errorf("the server URL: %w", err)
	}
	g := &Grant{cfg: f.cfg, conf: f.conf, origin: origin(u), resource: f.server.Resource}
	if err := g.keep(tok); err != nil {
		return nil, err
	}
	return g, nil
}

// keep checks and holds tok. The caller holds mu, or owns g alone.
func (g *Grant) keep(tok *oauth2.Token) error {
	switch {
	case tok.AccessToken == "":
		return fmt.Errorf("%w: the token response has no access_token", ErrBadMetadata)
	case !strings.EqualFold(tok.Type(), "Bearer"):
		return fmt.Errorf("%w: the token is of type %q; ardgate sends Bearer tokens only", ErrBadMetadata, bounds(tok.Type()))
	}
	if err := errors.Join(bounded("access_token", tok.AccessToken, maxToken), bounded("refresh_token", tok.RefreshToken, maxToken)); err != nil {
		return err
	}
	if tok.RefreshToken == "" && g.tok != nil {
		tok.RefreshToken = g.tok.RefreshToken // a refresh may not rotate it
	}
	g.tok, g.expires = tok, time.Time{}
	if tok.ExpiresIn > 0 {
		g.expires = g.cfg.now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return nil
}

// Origin is the origin the token is for: scheme://host:port.
func (g *Grant) Origin() string { return g.origin }

// Token returns a valid access token, refreshed first if it expired.
func (g *Grant) Token(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tok.AccessToken != "" && (g.expires.IsZero() || g.cfg.now().Before(g.expires.Add(-expirySkew))) {
		return g.tok.AccessToken, nil
	}
	if err := g.refresh(ctx); err != nil {
		return "", err
	}
	return g.tok.AccessToken, nil
}

// Header is the Authorization header for a request to rawURL, refused
// with ErrOtherOrigin outside the grant's origin.
func (g *Grant) Header(ctx context.Context, rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("header for %q: %w", rawURL, err)
	}
	return g.header(ctx, u)
}

func (g *Grant) header(ctx context.Context, u *url.URL) (string, error) {
	if u.Host == "" || origin(u) != g.origin {
		return "", fmt.Errorf("a token for %s asked for %s: %w", g.origin, u.Redacted(), ErrOtherOrigin)
	}
	tok, err := g.Token(ctx)
	if err != nil {
		return "", err
	}
	return "Bearer " + tok, nil
}

// Invalidate drops the access token if it is still tok, as after a 401
// for it, so the next request refreshes.
func (g *Grant) Invalidate(tok string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tok.AccessToken == tok {
		g.tok.AccessToken = ""
	}
}

// refresh trades the refresh token for a new token (RFC 6749 §6), with
// the resource. The caller holds mu.
func (g *Grant) refresh(ctx context.Context) error {
	if g.tok.RefreshToken == "" {
		return fmt.Errorf("%s: %w (the server gave no refresh token)", g.origin, ErrExpired)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	hc := g.cfg.client()
	hc.Transport = &withResource{base: hc.Transport, tokenURL: g.conf.Endpoint.TokenURL, resource: g.resource}
	// An empty access token is invalid to x/oauth2, so it refreshes.
	tok, err := g.conf.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc), &oauth2.Token{RefreshToken: g.tok.RefreshToken}).Token()
	if err != nil {
		return fmt.Errorf("refresh the token for %s: %w: %w", g.origin, ErrExpired, tokenFailure(err))
	}
	if err := g.keep(tok); err != nil {
		return err
	}
	if g.changed != nil {
		g.changed(g.savedLocked())
	}
	return nil
}

// withResource adds the resource (RFC 8707 §2.2) to the form of a token
// request: x/oauth2 sends no extra parameter on a refresh.
type withResource struct {
	base     http.RoundTripper
	tokenURL string
	resource string
}

func (w *withResource) RoundTrip(req *http.Request) (*http.Response, error) {
	base := w.base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.Method != http.MethodPost || req.URL.String() != w.tokenURL || req.Body == nil {
		return base.RoundTrip(req)
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, maxDocument))
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the token request: %w", err)
	}
	form, err := url.ParseQuery(string(data))
	if err != nil {
		return nil, fmt.Errorf("read the token request: %w", err)
	}
	if !form.Has("resource") {
		form.Set("resource", w.resource)
	}
	body := []byte(form.Encode())
	out := req.Clone(req.Context())
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return base.RoundTrip(out)
}

// Transport returns a RoundTripper over base that sends the token on
// requests to the grant's origin only. On every other request, a
// redirect's next hop included, it strips any Authorization header. A
// 401 from the origin invalidates the token, so the next request
// refreshes it.
func (g *Grant) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &bearer{g: g, base: base}
}

type bearer struct {
	g    *Grant
	base http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.Header.Del("Authorization")
	h, err := b.g.header(req.Context(), req.URL)
	switch {
	case errors.Is(err, ErrOtherOrigin):
		return b.base.RoundTrip(out)
	case err != nil:
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, err
	}
	out.Header.Set("Authorization", h)
	resp, err := b.base.RoundTrip(out)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		b.g.Invalidate(strings.TrimPrefix(h, "Bearer "))
	}
	return resp, err
}
