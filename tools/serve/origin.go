package serve

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// originOK tells whether the request's Origin, if any, may use the gateway.
// AllowCORS lets a page of an origin the gateway allows (originOK) read
// its answers, as a browser asks: a client in a page on localhost could
// not connect, its preflight refused for want of a token it never sends.
// It reports whether r was a preflight, which it answered.
func AllowCORS(w http.ResponseWriter, r *http.Request) bool {
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

// OriginAllowed accepts loopback origins and the gateway's own host.
func OriginAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, host) || loopbackHost(u.Host)
}

// Rebound tells a request that came to a loopback address under a Host
// that is not one: a page whose name was made to resolve to 127.0.0.1
// (DNS rebinding) driving a browser at the gateway. mcp-go's server
// refuses such a request, but only those it answers: the calls, lists
// and cancellations the gateway answers itself went through.
func Rebound(host string, local net.Addr) bool {
	return local != nil && loopbackHost(local.String()) && !loopbackHost(host)
}

// loopbackHost tells whether addr, a host or host:port, is localhost or a
// loopback address.
func loopbackHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
