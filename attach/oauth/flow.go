package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/oauth2"
)

// Flow is one authorization: the URL the user opens, and what checks the
// redirect back. It completes once.
type Flow struct {
	cfg      *Config
	server   *Server
	conf     *oauth2.Config
	verifier string
	state    string
	url      string

	mu   sync.Mutex
	done bool   // a code was taken
	code string // the code taken
}

// Authorize discovers, registers and starts a flow in one call: what an
// attach does with the 401 of the server at serverURL.
func (c *Config) Authorize(ctx context.Context, serverURL string, h http.Header) (*Flow, error) {
	s, err := c.Discover(ctx, serverURL, h)
	if err != nil {
		return nil, err
	}
	r, err := c.Register(ctx, s)
	if err != nil {
		return nil, err
	}
	return c.Start(s, r)
}

// Start begins a flow at s for client r: a fresh PKCE verifier and state,
// and the authorization URL carrying the challenge, the state, the
// scopes and the resource.
func (c *Config) Start(s *Server, r *Registration) (*Flow, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	for _, f := range [][2]string{{"authorization_endpoint", s.AuthorizationEndpoint}, {"token_endpoint", s.TokenEndpoint}} {
		if _, err := c.checkURL(f[0], f[1]); err != nil {
			return nil, err
		}
	}
	conf := &oauth2.Config{
		ClientID:     r.ClientID,
		ClientSecret: r.ClientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: s.AuthorizationEndpoint, TokenURL: s.TokenEndpoint, AuthStyle: authStyle(r.AuthMethod)},
		RedirectURL:  c.RedirectURL,
		Scopes:       s.Scopes,
	}
	f := &Flow{cfg: c, server: s, conf: conf, verifier: oauth2.GenerateVerifier(), state: randomState()}
	f.url = conf.AuthCodeURL(f.state, oauth2.S256ChallengeOption(f.verifier), oauth2.SetAuthURLParam("resource", s.Resource))
	return f, nil
}

// randomState is 256 random bits, URL-safe.
func randomState() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// URL is the authorization URL for the user to open.
func (f *Flow) URL() string { return f.url }

// State is the flow's state, by which a callback finds its flow.
func (f *Flow) State() string { return f.state }

// Server is what discovery found of the server.
func (f *Flow) Server() *Server { return f.server }

// Callback completes the flow from the query of the redirect back: its
// state, its issuer when it names one (RFC 9207), then its code, or the
// error it carries instead (ErrDenied).
func (f *Flow) Callback(ctx context.Context, q url.Values) (*Grant, error) {
	if !f.stateIs(q.Get("state")) {
		return nil, ErrStateMismatch
	}
	if iss := q.Get("iss"); iss != "" && strings.TrimSuffix(iss, "/") != strings.TrimSuffix(f.server.Issuer, "/") {
		// A mix-up: another authorization server answered.
		return nil, fmt.Errorf("%w: the authorization response comes from issuer %q, not %q", ErrBadMetadata, bounds(iss), f.server.Issuer)
	}
	if e := q.Get("error"); e != "" {
		f.mu.Lock()
		f.done = true
		f.mu.Unlock()
		return nil, fmt.Errorf("%w: %s %s", ErrDenied, bounds(e), bounds(q.Get("error_description")))
	}
	return f.Exchange(ctx, q.Get("state"), q.Get("code"))
}

// bounds cuts text from a server to a length fit for a message.
func bounds(s string) string {
	if len(s) > maxText {
		s = s[:maxText] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

func (f *Flow) stateIs(state string) bool {
	return subtle.ConstantTimeCompare([]byte(state), []byte(f.state)) == 1
}

// Exchange trades the code for a token, once: a wrong state is refused
// and leaves the flow open, and a second call is refused whatever it
// carries.
func (f *Flow) Exchange(ctx context.Context, state, code string) (*Grant, error) {
	if !f.stateIs(state) {
		return nil, ErrStateMismatch
	}
	if code == "" {
		return nil, fmt.Errorf("the authorization response has no code")
	}
	f.mu.Lock()
	done, used := f.done, f.code
	if !done {
		f.done, f.code = true, code
	}
	f.mu.Unlock()
	switch {
	case done && used == code:
		return nil, ErrCodeReused
	case done:
		return nil, ErrStateReused
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	tok, err := f.conf.Exchange(f.cfg.clientContext(ctx), code, oauth2.VerifierOption(f.verifier), oauth2.SetAuthURLParam("resource", f.server.Resource))
	if err != nil {
		return nil, fmt.Errorf("exchange the authorization code at %s: %w", f.server.TokenEndpoint, tokenFailure(err))
	}
	return newGrant(f, tok)
}

// tokenFailure bounds what a token endpoint's refusal says: x/oauth2
// puts the whole answer in its error, and the message may reach a user.
func tokenFailure(err error) error {
	var re *oauth2.RetrieveError
	switch {
	case !errors.As(err, &re):
		return err
	case re.ErrorCode != "":
		return fmt.Errorf("the token endpoint answered %s %s", bounds(re.ErrorCode), bounds(re.ErrorDescription))
	case re.Response != nil:
		return fmt.Errorf("the token endpoint answered HTTP %d", re.Response.StatusCode)
	}
	return errors.New("the token endpoint refused the request")
}

// clientContext carries the caller's client to x/oauth2, which takes it
// from the context.
func (c *Config) clientContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.client())
}
