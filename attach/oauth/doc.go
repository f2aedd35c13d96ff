// Package oauth is the OAuth 2.1 client side of the MCP authorization spec
// (2025-11-25), for attaching remote MCP servers that answer 401.
//
// It holds discovery (a WWW-Authenticate challenge, Protected Resource
// Metadata of RFC 9728, and authorization server metadata of RFC 8414 or
// OpenID Connect), dynamic client registration (RFC 7591), the
// authorization code flow with PKCE S256, state and the resource indicator
// (RFC 8707), token refresh, and a RoundTripper that sends the token to
// the origin it was issued for and nowhere else.
//
// Every request goes through the *http.Client the caller gives (the
// guarded one), and every URL a server names is checked before it is
// fetched. Nothing is stored on disk here: tokens live in the Grant,
// which its caller may save (Saved) and restore, as attach does in
// attach/credstore when the operator set credentials.store.
//
// It may import the standard library, guard, config (for DialAddr) and
// golang.org/x/oauth2. It imports nothing else of ardgate: attach uses it.
package oauth
