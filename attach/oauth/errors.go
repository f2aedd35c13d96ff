package oauth

import "errors"

// Errors callers tell apart with errors.Is. Refusals of a URL or of a
// size come from guard and wrap guard.ErrRefused.
var (
	// ErrStateMismatch: the redirect back carried a state this flow did
	// not issue. It may be a forged redirect; the flow stays open.
	ErrStateMismatch = errors.New("the authorization response's state does not match the one this flow sent")
	// ErrStateReused: the flow's state came back a second time, with
	// another code. A flow completes once.
	ErrStateReused = errors.New("this authorization flow has already completed; start a new one")
	// ErrCodeReused: an authorization code came back a second time.
	ErrCodeReused = errors.New("this authorization code was already used; start a new authorization")
	// ErrDenied: the redirect back carried an error instead of a code,
	// as when the user declines (access_denied).
	ErrDenied = errors.New("the authorization was declined")
	// ErrNoPKCE: the authorization server does not list S256 in
	// code_challenge_methods_supported, which the MCP spec requires.
	ErrNoPKCE = errors.New("the authorization server does not support PKCE with S256")
	// ErrNoClient: the authorization server offers no dynamic client
	// registration and no client id was configured for it.
	ErrNoClient = errors.New("the authorization server offers no dynamic client registration; configure a client id for this server")
	// ErrOtherOrigin: a token was asked for a URL outside the origin it
	// was issued for.
	ErrOtherOrigin = errors.New("the token belongs to another origin")
	// ErrExpired: the token expired and cannot be refreshed; the user
	// must authorize again.
	ErrExpired = errors.New("the access token expired and could not be refreshed; authorize again")
	// ErrBadMetadata: a metadata document is malformed, misses a
	// required field, or names another resource or issuer.
	ErrBadMetadata = errors.New("bad OAuth metadata")
)
