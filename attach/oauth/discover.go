package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
)

// Server is what discovery learned of a protected MCP server and of the
// authorization server that issues its tokens.
type Server struct {
	// URL is the MCP endpoint as addressed.
	URL string
	// Resource is the server's resource identifier (RFC 8707), sent on
	// every authorization and token request.
	Resource string
	// Name is the resource_name its metadata gives, for messages; it
	// may be empty.
	Name string
	// Issuer is the authorization server's issuer identifier.
	Issuer string
	// AuthorizationEndpoint, TokenEndpoint and RegistrationEndpoint are
	// the authorization server's endpoints, each checked; the last may
	// be empty.
	AuthorizationEndpoint, TokenEndpoint, RegistrationEndpoint string
	// Scopes are those to ask for: the challenge's, or else the ones
	// the resource metadata lists.
	Scopes []string
}

// resourceMeta is the part of Protected Resource Metadata (RFC 9728 §2)
// used here.
type resourceMeta struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
	ResourceName         string   `json:"resource_name"`
}

// serverMeta is the part of authorization server metadata (RFC 8414 §2)
// used here.
type serverMeta struct {
	Issuer                        string   `json:"issuer"`
	AuthorizationEndpoint         string   `json:"authorization_endpoint"`
	TokenEndpoint                 string   `json:"token_endpoint"`
	RegistrationEndpoint          string   `json:"registration_endpoint"`
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
	ScopesSupported               []string `json:"scopes_supported"`
}

// Discover finds how to authorize at the MCP server at serverURL, from
// the header of the 401 it answered (h may be nil): its resource
// metadata, then its authorization server's metadata.
func (c *Config) Discover(ctx context.Context, serverURL string, h http.Header) (*Server, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	su, err := c.checkURL("the server URL", serverURL)
	if err != nil {
		return nil, err
	}
	params := bearerParams(h.Values("WWW-Authenticate"))
	candidates := resourceMetadataURLs(su)
	if u := params["resource_metadata"]; u != "" {
		candidates = []string{u} // the spec has the challenge's URL win
	}
	prm, err := c.resourceMeta(ctx, su, candidates)
	if err != nil {
		return nil, fmt.Errorf("discover the authorization of %s: %w", serverURL, err)
	}
	asm, err := c.serverMeta(ctx, prm.AuthorizationServers[0])
	if err != nil {
		return nil, fmt.Errorf("discover the authorization server of %s: %w", serverURL, err)
	}
	s := &Server{
		URL: serverURL, Resource: prm.Resource, Name: prm.ResourceName, Issuer: asm.Issuer,
		AuthorizationEndpoint: asm.AuthorizationEndpoint, TokenEndpoint: asm.TokenEndpoint,
		RegistrationEndpoint: asm.RegistrationEndpoint,
		Scopes:               strings.Fields(params["scope"]),
	}
	if err := boundedList("the challenge's scope", s.Scopes); err != nil {
		return nil, err
	}
	if len(s.Scopes) == 0 {
		s.Scopes = prm.ScopesSupported
	}
	return s, nil
}

// resourceMetadataURLs are the well-known places of a server's resource
// metadata (RFC 9728 §3.1), the path-aware one first, as the MCP spec
// orders them.
func resourceMetadataURLs(server *url.URL) []string {
	origin := server.Scheme + "://" + server.Host
	var out []string
	if p := strings.TrimSuffix(server.EscapedPath(), "/"); p != "" {
		out = append(out, origin+"/.well-known/oauth-protected-resource"+p)
	}
	return append(out, origin+"/.well-known/oauth-protected-resource")
}

// serverMetadataURLs are the places of an issuer's metadata, in the
// order of the MCP spec: RFC 8414 then OpenID Connect Discovery, the
// well-known part inserted before the issuer's path.
func serverMetadataURLs(issuer *url.URL) []string {
	origin := issuer.Scheme + "://" + issuer.Host
	p := strings.TrimSuffix(issuer.EscapedPath(), "/")
	if p == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p,
		origin + p + "/.well-known/openid-configuration",
	}
}

// first fetches the first of candidates that answers with a JSON
// document into v. A refusal ends the search: the other candidates are on
// the same origin, and a hostile answer is not retried elsewhere.
func (c *Config) first(ctx context.Context, what string, candidates []string, v any) (string, error) {
	var errs []error
	for _, raw := range candidates {
		if _, err := c.checkURL(what, raw); err != nil {
			return "", err
		}
		err := c.getJSON(ctx, raw, v)
		switch {
		case err == nil:
			return raw, nil
		case errors.Is(err, guard.ErrRefused):
			return "", fmt.Errorf("fetch %s: %w", what, err)
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("%w: no %s found: %w", ErrBadMetadata, what, errors.Join(errs...))
}

// resourceMeta fetches and checks the server's resource metadata.
func (c *Config) resourceMeta(ctx context.Context, server *url.URL, candidates []string) (*resourceMeta, error) {
	var prm resourceMeta
	at, err := c.first(ctx, "protected resource metadata", candidates, &prm)
	if err != nil {
		return nil, err
	}
	switch {
	case prm.Resource == "":
		return nil, fmt.Errorf("%w: %s names no resource", ErrBadMetadata, at)
	case !bindsTo(prm.Resource, server):
		// RFC 9728 §3.3: else a server could have tokens minted for
		// another one.
		return nil, fmt.Errorf("%w: %s is for resource %s, not %s", ErrBadMetadata, at, prm.Resource, server)
	case len(prm.AuthorizationServers) == 0:
		return nil, fmt.Errorf("%w: %s names no authorization server", ErrBadMetadata, at)
	}
	if err := errors.Join(bounded("resource", prm.Resource, maxURLLen), bounded("resource_name", prm.ResourceName, maxText),
		boundedList("scopes_supported", prm.ScopesSupported), boundedURLs("authorization_servers", prm.AuthorizationServers)); err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	return &prm, nil
}

// boundedURLs refuses a list of URLs too long, or with one too long.
func boundedURLs(field string, ss []string) error {
	if len(ss) > maxList {
		return &guard.Refusal{Rule: "size_limit", Reason: fmt.Sprintf("%s has more than %d entries", field, maxList)}
	}
	for _, s := range ss {
		if err := bounded(field, s, maxURLLen); err != nil {
			return err
		}
	}
	return nil
}

// bindsTo tells whether resource identifies server: the same origin, and
// a path that is the server's or a parent of it at a segment boundary.
func bindsTo(resource string, server *url.URL) bool {
	r, err := url.Parse(resource)
	if err != nil || r.Host == "" || r.RawQuery != "" || r.Fragment != "" || !sameOrigin(r, server) {
		return false
	}
	rp, sp := strings.TrimSuffix(r.EscapedPath(), "/"), strings.TrimSuffix(server.EscapedPath(), "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}

// origin is a URL's scheme and address, port spelled out.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + config.DialAddr(u)
}

func sameOrigin(a, b *url.URL) bool { return origin(a) == origin(b) }

// serverMeta fetches and checks the metadata of the authorization server
// issuer names.
func (c *Config) serverMeta(ctx context.Context, issuer string) (*serverMeta, error) {
	iu, err := c.checkURL("the authorization server", issuer)
	if err != nil {
		return nil, err
	}
	var asm serverMeta
	at, err := c.first(ctx, "authorization server metadata", serverMetadataURLs(iu), &asm)
	if err != nil {
		return nil, err
	}
	// RFC 8414 §3.3: the issuer must be the one asked for. A final
	// slash is spelled either way in practice.
	if strings.TrimSuffix(asm.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		return nil, fmt.Errorf("%w: %s declares issuer %q, not %q", ErrBadMetadata, at, asm.Issuer, issuer)
	}
	if err := c.checkServerMeta(&asm); err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	return &asm, nil
}

// checkServerMeta refuses metadata that lacks an endpoint or PKCE, or
// whose URLs or lists a check refuses.
func (c *Config) checkServerMeta(asm *serverMeta) error {
	if asm.AuthorizationEndpoint == "" || asm.TokenEndpoint == "" {
		return fmt.Errorf("%w: it lacks authorization_endpoint or token_endpoint", ErrBadMetadata)
	}
	if err := errors.Join(boundedList("code_challenge_methods_supported", asm.CodeChallengeMethodsSupported),
		boundedList("scopes_supported", asm.ScopesSupported)); err != nil {
		return err
	}
	// The MCP spec: absent, or without S256, means no PKCE to rely on.
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return fmt.Errorf("%w (it lists code challenge methods %v)", ErrNoPKCE, asm.CodeChallengeMethodsSupported)
	}
	for _, f := range [][2]string{{"authorization_endpoint", asm.AuthorizationEndpoint}, {"token_endpoint", asm.TokenEndpoint}, {"registration_endpoint", asm.RegistrationEndpoint}} {
		if f[1] == "" {
			continue
		}
		if _, err := c.checkURL(f[0], f[1]); err != nil {
			return err
		}
	}
	return nil
}
