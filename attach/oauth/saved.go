package oauth

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"golang.org/x/oauth2"
)

// A grant may be kept across restarts of the gateway (attach/credstore,
// when the operator set credentials.store): Save gives what a grant is,
// Restore makes it a grant again, and OnChange hears each token a
// refresh brings, so that a rotated refresh token is kept too.

// Saved is a grant as it is kept: its tokens, and what a refresh needs of
// the client and the authorization server.
type Saved struct {
	Version      int       `json:"version"`
	Origin       string    `json:"origin"`
	Resource     string    `json:"resource"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	TokenURL     string    `json:"token_url"`
	AuthStyle    int       `json:"auth_style"`
	Scopes       []string  `json:"scopes,omitempty"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type"`
	Expires      time.Time `json:"expires,omitzero"`
}

// savedVersion is Saved's.
const savedVersion = 1

// Save is the grant as it is kept.
func (g *Grant) Save() Saved {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.savedLocked()
}

// savedLocked is Save's; the caller holds mu.
func (g *Grant) savedLocked() Saved {
	return Saved{Version: savedVersion, Origin: g.origin, Resource: g.resource,
		ClientID: g.conf.ClientID, ClientSecret: g.conf.ClientSecret, TokenURL: g.conf.Endpoint.TokenURL,
		AuthStyle: int(g.conf.Endpoint.AuthStyle), Scopes: slices.Clone(g.conf.Scopes),
		AccessToken: g.tok.AccessToken, RefreshToken: g.tok.RefreshToken, TokenType: g.tok.TokenType, Expires: g.expires}
}

// OnChange has fn hear the grant as it is after each refresh. fn runs
// while the grant is held: it must not call the grant's methods.
func (g *Grant) OnChange(fn func(Saved)) {
	g.mu.Lock()
	g.changed = fn
	g.mu.Unlock()
}

// ErrSavedGrant: a saved grant that cannot be used as it is: of another
// version, or incomplete. It is to be forgotten, and authorized again.
var ErrSavedGrant = errors.New("the saved grant cannot be used")

// Restore makes s, saved, a grant for the server at serverURL again,
// refreshed through c: its origin must be that server's, and its token
// endpoint one c would fetch. An expired access token is refreshed at
// its first use.
func (c *Config) Restore(serverURL string, s Saved) (*Grant, error) {
	u, err := url.Parse(serverURL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("the server URL: %w", err)
	case s.Version != savedVersion:
		return nil, fmt.Errorf("%w: it is of version %d, not %d", ErrSavedGrant, s.Version, savedVersion)
	case s.Origin != origin(u):
		return nil, fmt.Errorf("a grant saved for %s, asked for %s: %w", s.Origin, u.Redacted(), ErrOtherOrigin)
	case c.HTTP == nil:
		return nil, errors.New("oauth: no HTTP client configured")
	}
	if _, err := c.checkURL("token_endpoint", s.TokenURL); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSavedGrant, err)
	}
	g := &Grant{cfg: c, origin: s.Origin, resource: s.Resource, conf: &oauth2.Config{ClientID: s.ClientID, ClientSecret: s.ClientSecret,
		Endpoint: oauth2.Endpoint{TokenURL: s.TokenURL, AuthStyle: oauth2.AuthStyle(s.AuthStyle)}, Scopes: slices.Clone(s.Scopes)}}
	if err := g.keep(&oauth2.Token{AccessToken: s.AccessToken, RefreshToken: s.RefreshToken, TokenType: s.TokenType}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSavedGrant, err)
	}
	g.expires = s.Expires
	return g, nil
}
