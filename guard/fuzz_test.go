package guard

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// FuzzCheckURL: whatever the URL, either CheckURL refuses it, or dialling
// it never reaches the connect step with a forbidden address.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/mcp", "http://127.0.0.1/", "http://[::ffff:127.0.0.1]/", "http://2130706433/",
		"http://0x7f.1/", "file:///etc/passwd", "http://a@b/", "http://[fe80::1%25eth0]/", "http://169.254.169.254/",
		"HTTP://LOCALHOST./", "http://[64:ff9b::a9fe:a9fe]/", "http://%31%32%37.0.0.1/", "http://127.0.0.1:0/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := CheckURL(raw)
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("CheckURL(%q) error is not a refusal: %v", raw, err)
			}
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.User != nil {
			t.Fatalf("CheckURL(%q) let through %v", raw, u)
		}
		var reached []string
		d := &Dialer{
			// Names resolve to the metadata address: every dial of a name
			// must be refused; literal addresses are judged by the oracle.
			LookupIP: func(context.Context, string) ([]netip.Addr, error) {
				return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
			},
			Connect: func(_ context.Context, _, addr string) (net.Conn, error) {
				reached = append(reached, addr)
				return nil, errors.New("stub")
			},
		}
		port := u.Port()
		if port == "" {
			port = "80"
		}
		_, _ = d.DialContext(context.Background(), "tcp", net.JoinHostPort(u.Hostname(), port))
		// The oracle is the standard library's view, not CheckIP itself:
		// nothing loopback, private, link-local, unspecified or multicast
		// may reach the connect step.
		for _, addr := range reached {
			host, _, _ := net.SplitHostPort(addr)
			ip, err := netip.ParseAddr(host)
			if err != nil {
				t.Fatalf("%q reached the connect step with %s", raw, addr)
			}
			ip = ip.WithZone("").Unmap()
			if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() ||
				ip.IsLinkLocalMulticast() || ip == netip.MustParseAddr("169.254.169.254") {
				t.Fatalf("%q reached the connect step with forbidden %s", raw, addr)
			}
		}
	})
}

// FuzzTrust: the gate never panics, and whenever it passes an identity,
// that identity's host is the publisher or under it.
func FuzzTrust(f *testing.F) {
	for _, s := range []struct{ pub, id, att string }{
		{"acme.com", "did:web:acme.com", "SOC2-Type2"},
		{"acme.com", "https://api.acme.com/x", "HIPAA"},
		{"acme.com", "spiffe://acme.com/ns/a", ""},
		{"acme.com", "did:web:acme.com.evil.io", ""},
		{"acme.com", "https://evilacme.com", ""},
		{"acme.com", "did:web:acme.com%3A8443:user", "x"},
		{"acme.com", "https://user@acme.com/", ""},
		{"acme.com", "did:web:", ""},
	} {
		f.Add(s.pub, s.id, s.att)
	}
	f.Fuzz(func(t *testing.T, publisher, identity, attestation string) {
		manifest, _ := json.Marshal(TrustManifest{Identity: identity, Attestations: []Attestation{{Type: attestation}}})
		gate := &Trust{Require: []string{"soc2"}}
		r, err := gate.Check(publisher, manifest)
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("gate error is not a refusal: %v", err)
			}
			return
		}
		host, herr := IdentityHost(identity)
		pub := strings.TrimSuffix(strings.ToLower(publisher), ".")
		if herr != nil || !(host == pub || strings.HasSuffix(host, "."+pub)) || !r.IdentityMatchesPublisher {
			t.Fatalf("gate passed identity %q (host %q, %v) for publisher %q", identity, host, herr, publisher)
		}
		if !strings.Contains(strings.ToLower(attestation), "soc2") {
			t.Fatalf("gate passed without the required attestation: %q", attestation)
		}
	})
}
