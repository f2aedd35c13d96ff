package oauth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"

	"golang.org/x/oauth2"
)

// Registration is the client ardgate is at an authorization server.
type Registration struct {
	// ClientID identifies the client; ClientSecret is empty for a
	// public client.
	ClientID, ClientSecret string
	// AuthMethod is how the client authenticates at the token endpoint
	// (token_endpoint_auth_method); empty means try both ways.
	AuthMethod string
}

// registration is the part of an RFC 7591 §3.2.1 response used here.
type registration struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	AuthMethod   string `json:"token_endpoint_auth_method"`
}

// Register returns the client to use at s's authorization server: the
// configured one, else one registered dynamically (RFC 7591) as a public
// client with this Config's redirect URL.
func (c *Config) Register(ctx context.Context, s *Server) (*Registration, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.ClientID != "" {
		r := &Registration{ClientID: c.ClientID, ClientSecret: c.ClientSecret}
		if r.ClientSecret == "" {
			r.AuthMethod = "none"
		}
		return r, nil
	}
	if s.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("register at %s: %w", s.Issuer, ErrNoClient)
	}
	if _, err := c.checkURL("registration_endpoint", s.RegistrationEndpoint); err != nil {
		return nil, err
	}
	body := map[string]any{
		"client_name":                cmp.Or(c.ClientName, "ardgate"),
		"redirect_uris":              []string{c.RedirectURL},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	}
	var r registration
	if err := c.postJSON(ctx, s.RegistrationEndpoint, body, http.StatusCreated, &r); err != nil {
		return nil, fmt.Errorf("register a client at %s: %w", s.Issuer, err)
	}
	if r.ClientID == "" {
		return nil, fmt.Errorf("register a client at %s: %w: the answer has no client_id", s.Issuer, ErrBadMetadata)
	}
	if err := errors.Join(bounded("client_id", r.ClientID, maxText), bounded("client_secret", r.ClientSecret, maxText),
		bounded("token_endpoint_auth_method", r.AuthMethod, maxText)); err != nil {
		return nil, fmt.Errorf("register a client at %s: %w", s.Issuer, err)
	}
	return &Registration{ClientID: r.ClientID, ClientSecret: r.ClientSecret, AuthMethod: r.AuthMethod}, nil
}

// authStyle is how x/oauth2 sends the client's credentials for method.
func authStyle(method string) oauth2.AuthStyle {
	switch method {
	case "client_secret_basic":
		return oauth2.AuthStyleInHeader
	case "client_secret_post", "none":
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleAutoDetect
}
