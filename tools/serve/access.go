package serve

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// originOK tells whether the request's Origin, if any, may use the gateway.
// allowCORS lets a page of an origin the gateway allows (originOK) read
// its answers, as a browser asks: a client in a page on localhost could
// not connect, its preflight refused for want of a token it never sends.
// It reports whether r was a preflight, which it answered.
func allowCORS(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// originAllowed accepts loopback origins and the gateway's own host.
func originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, host) || guard.LoopbackHost(u.Host)
}

// Access is the gateway's HTTP access rules.
type Access struct {
	// Token, when set, must come as "Authorization: Bearer <token>".
	Token string
}

// Guard applies the rules before next, MCP, sees a request: the Host and
// Origin checks against DNS rebinding from browsers, CORS, the bearer
// token, and the body cap. mcp-go's server checks the Host too, but only
// of what it answers: the calls, lists and cancellations the gateway
// answers itself would go through.
func (a Access) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr); guard.Rebound(r.Host, local) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		if !originOK(r) {
			http.Error(w, "Forbidden: Origin "+r.Header.Get("Origin")+" may not use this gateway", http.StatusForbidden)
			return
		}
		if allowCORS(w, r) {
			return // a preflight, answered before the token: it carries none
		}
		if !a.Authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ardgate"`)
			http.Error(w, "Unauthorized: send Authorization: Bearer <ARDGATE_AUTH_TOKEN>", http.StatusUnauthorized)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, jsonrpc.MaxMessage)
		next.ServeHTTP(w, r)
	})
}

// originOK tells whether the request's Origin, if any, may use the gateway.
func originOK(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o == "" || originAllowed(o, r.Host)
}

// Authorized tells whether the request carries the bearer token, when
// the gateway has one.
func (a Access) Authorized(r *http.Request) bool {
	if a.Token == "" {
		return true
	}
	// The scheme's name is case-insensitive (RFC 9110, 11.1).
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(got), []byte(a.Token)) == 1
}
