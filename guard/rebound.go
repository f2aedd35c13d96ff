package guard

import (
	"net"
	"net/netip"
	"strings"
)

// Rebound tells a request that came to a loopback address under a Host
// that is not one: a page whose name was made to resolve to 127.0.0.1
// (DNS rebinding) driving a browser at the gateway, or at a page of its
// own (the keys page, on the gateway's listener or on a loopback one).
// local is the address the request came to (http.LocalAddrContextKey).
func Rebound(host string, local net.Addr) bool {
	return local != nil && LoopbackHost(local.String()) && !LoopbackHost(host)
}

// LoopbackHost tells whether addr, a host or host:port, is localhost or
// a loopback address.
func LoopbackHost(addr string) bool {
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
