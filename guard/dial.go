package guard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Dialer makes every outgoing connection of the gateway. It resolves names
// itself and checks each address at dial time, so a name that resolves to
// a forbidden address, or changes its answer between check and use (DNS
// rebinding), never reaches the connect step.
type Dialer struct {
	// AllowLocal permits loopback, private and link-local targets, for
	// local testing. Cloud metadata addresses stay refused.
	AllowLocal bool
	// Own lists the addresses ("host:port", as a dial names them) that
	// the operator configured: a pinned server, agent or registry beside
	// the gateway (on localhost, or a cluster's service at a private
	// address) is reached without AllowLocal, which would open every
	// address a registry names too. Only the address as configured: a
	// redirect elsewhere is checked as any dial. Cloud metadata addresses
	// stay refused. A Dialer with Own is for the requests to what the
	// operator configured alone: it cannot tell who named an address, so
	// what a registry names, and where a server it names redirects, goes
	// through one without.
	Own []string
	// LookupIP resolves a host name; nil means net.DefaultResolver.
	LookupIP func(ctx context.Context, host string) ([]netip.Addr, error)
	// Connect is the last step, the connect itself, with an address
	// already checked. Tests replace it with a recorder; nil means a
	// net.Dialer.
	Connect func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DialContext resolves, checks and connects. It has the signature of
// http.Transport.DialContext.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := d.CheckAddr(addr); err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(addr) // CheckAddr split it
	local := d.local(addr)
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		lookup := d.LookupIP
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		if ips, err = lookup(ctx, host); err != nil {
			return nil, err
		}
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%s: no addresses", host)
	}
	// One forbidden answer refuses the name: a round-robin mix of public
	// and private addresses is a rebinding trick, not an accident.
	for _, ip := range ips {
		if err := checkIP(ip, local); err != nil {
			return nil, fmt.Errorf("%s (%s): %w", host, ip, err)
		}
	}
	connect := d.Connect
	if connect == nil {
		connect = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	var errs []error
	for _, ip := range ips {
		conn, err := connect(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

var (
	// Where clouds hand out a machine's or a task's credentials: the
	// metadata services of AWS (IPv4 and IPv6), GCP, Azure and Oracle
	// (169.254.169.254), Alibaba's, AWS ECS's task credentials, EKS Pod
	// Identity's agent (IPv4 and IPv6), and Azure's WireServer, which sits
	// at a public address.
	metadataAddrs = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("100.100.100.200"),
		netip.MustParseAddr("169.254.170.2"), netip.MustParseAddr("169.254.170.23"), netip.MustParseAddr("fd00:ec2::23"), netip.MustParseAddr("168.63.129.16")}
	localPrefixes = mustPrefixes("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16",
		"100.64.0.0/10", "::1/128", "fc00::/7", "fe80::/10", "fec0::/10")
	neverPrefixes = mustPrefixes("0.0.0.0/8", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "::/128", "ff00::/8", "2001:db8::/32", "::/96",
		"64:ff9b:1::/48") // local-use NAT64: its mapping is the site's own
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	siit      = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated (RFC 2765)
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
)

// embeddedIPv4 returns the IPv4 address an IPv6 transition address
// carries, which is where packets really go: NAT64 and SIIT (last 32 bits), 6to4
// (bits 16–48), Teredo (the client address, last 32 bits inverted).
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case nat64.Contains(ip), siit.Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	case teredo.Contains(ip):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	return ip, false
}

// CheckAddr refuses what an address to dial ("host:port") says of
// itself, before any lookup, as DialContext's first step does: its host
// (CheckHost), unless it is one of Own.
func (d *Dialer) CheckAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	return d.checkHost(host, d.local(addr))
}

// local tells whether addr may be a local address: AllowLocal, or one of
// Own.
func (d *Dialer) local(addr string) bool {
	return d.AllowLocal || slices.Contains(d.Own, strings.ToLower(addr))
}

// CheckHost refuses what a host name or address says of itself, before
// any lookup: an IP address in an unusual spelling, a localhost name, an
// address CheckIP refuses. A name that passes may still resolve to one it
// refuses (DialContext checks that).
func (d *Dialer) CheckHost(host string) error { return d.checkHost(host, d.AllowLocal) }

// checkHost is CheckHost, local addresses allowed when local is set.
func (d *Dialer) checkHost(host string, local bool) error {
	if numericSpelling(host) {
		return refuse("ssrf", "%q is an IP address in an unusual spelling", host)
	}
	if name := strings.TrimSuffix(strings.ToLower(host), "."); !local && (name == "localhost" || strings.HasSuffix(name, ".localhost")) {
		return refuse("ssrf", "%s always means this machine (allow_local_urls is off)", host)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return checkIP(ip, local)
	}
	return nil
}

// CheckIP refuses addresses an outgoing connection must not reach.
func (d *Dialer) CheckIP(ip netip.Addr) error { return checkIP(ip, d.AllowLocal) }

// checkIP is CheckIP, local addresses allowed when local is set.
func checkIP(ip netip.Addr, local bool) error {
	if !ip.IsValid() {
		return refuse("ssrf", "no valid address")
	}
	// A zone (fe80::1%eth0) only picks the interface, and a prefix never
	// contains a zoned address: drop it before checking.
	ip = ip.WithZone("").Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	if v4, ok := embeddedIPv4(ip); ok {
		ip = v4
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return refuse("ssrf", "%s is a cloud metadata address", ip)
		}
	}
	for _, p := range neverPrefixes {
		if p.Contains(ip) && ip != netip.IPv6Loopback() { // ::1 is in ::/96 but is loopback, checked below
			return refuse("ssrf", "%s is in reserved range %s", ip, p)
		}
	}
	if local {
		return nil
	}
	for _, p := range localPrefixes {
		if p.Contains(ip) {
			return refuse("ssrf", "%s is a loopback, private or link-local address (allow_local_urls is off)", ip)
		}
	}
	return nil
}

// CheckURL refuses URLs that are not plain http(s) or that carry
// credentials. Addresses are checked later, at dial time.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, refuse("url", "%q is not a URL", raw)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, refuse("url", "%q: only http and https URLs are allowed", raw)
	case u.User != nil:
		return nil, refuse("url", "%q carries credentials in the URL", raw)
	case u.Hostname() == "":
		return nil, refuse("url", "%q has no host", raw)
	case numericSpelling(u.Hostname()):
		return nil, refuse("url", "%q names an IP address in an unusual spelling (decimal, octal, hex or short form)", raw)
	}
	return u, nil
}

// numericSpelling reports hosts that some resolvers read as IPv4 addresses
// although they are not in dotted-quad form: 2130706433, 0x7f.1, 0177.0.0.1,
// 127.1. Refused outright, so no resolver gets to read them its own way.
func numericSpelling(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return false // canonical IPv4 or IPv6
	}
	parts := strings.Split(strings.ToLower(strings.TrimSuffix(host, ".")), ".")
	if len(parts) > 4 {
		return false
	}
	for _, p := range parts {
		digits := p
		if rest, ok := strings.CutPrefix(p, "0x"); ok {
			digits = rest
			if strings.Trim(digits, "0123456789abcdef") != "" {
				return false
			}
			continue
		}
		if digits == "" || strings.Trim(digits, "0123456789") != "" {
			return false
		}
	}
	return true
}

// maxRedirects bounds redirect chains; each hop is dialled, so checked.
const maxRedirects = 5

// Client returns an HTTP client whose every connection, redirects
// included, goes through d. It ignores proxy settings from the
// environment, which would move the connect out of d's sight. Callers
// bound each request with its context: MCP responses may legitimately
// take as long as the tool call behind them.
func (d *Dialer) Client() *http.Client {
	t := &http.Transport{
		Proxy:             nil,
		DialContext:       d.DialContext,
		ForceAttemptHTTP2: true,
		// Many sessions call one upstream at once; with fewer idle
		// connections kept than calls in flight, every call past the
		// limit dials anew (64 concurrent calls: 16% of the gateway's
		// CPU went to dialing with 16 kept). An idle one costs ~30 KiB.
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects { // via holds one request per redirect so far
				return refuse("redirects", "more than %d redirects", maxRedirects)
			}
			if _, err := CheckURL(req.URL.String()); err != nil {
				return err
			}
			return nil
		},
	}
}

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}
