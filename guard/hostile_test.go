package guard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// hostileRig is the real dialer with only its edges replaced: a fake
// resolver, and a last step that dials loopback for real (where a local
// server counts hits) but only records any other target. No test here
// sends a packet off this machine.
type hostileRig struct {
	hits      atomic.Int64 // requests the local counting server received
	port      string       // its port
	mu        sync.Mutex
	offBox    []string // non-loopback addresses that reached the connect step
	lookups   map[string]int
	allowedIP netip.Addr // the public address "allowed.test" resolves to
}

func newHostileRig(t *testing.T) *hostileRig {
	t.Helper()
	r := &hostileRig{lookups: map[string]int{}, allowedIP: netip.MustParseAddr("93.184.216.34")}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.hits.Add(1)
		fmt.Fprint(w, "secret internal data")
	}))
	t.Cleanup(srv.Close)
	_, r.port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return r
}

// lookup is the fake resolver.
func (r *hostileRig) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	r.mu.Lock()
	r.lookups[host]++
	n := r.lookups[host]
	r.mu.Unlock()
	addrs := map[string][]string{
		"localhost":        {"127.0.0.1", "::1"},
		"metadata.test":    {"169.254.169.254"},
		"internal.test":    {"10.0.0.1"},
		"cgnat.test":       {"100.64.1.1"},
		"v6private.test":   {"fd12::1"},
		"mapped.test":      {"::ffff:192.168.0.1"},
		"mixed.test":       {"93.184.216.34", "10.1.2.3"},
		"mixedlocal.test":  {"93.184.216.34", "127.0.0.1"},
		"allowed.test":     {r.allowedIP.String()},
		"loopback6.test":   {"::1"},
		"nat64-meta.test":  {"64:ff9b::a9fe:a9fe"},
		"zero.test":        {"0.0.0.0"},
		"broadcast.test":   {"255.255.255.255"},
		"multicast6.test":  {"ff02::1"},
		"sixtofour.test":   {"::127.0.0.1"},
		"alibaba-md.test":  {"100.100.100.200"},
		"ec2-v6-meta.test": {"fd00:ec2::254"},
	}
	if host == "rebind.test" {
		// DNS rebinding: a public answer first, the metadata service next.
		if n == 1 {
			return []netip.Addr{r.allowedIP}, nil
		}
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	}
	list, ok := addrs[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range list {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

// connect is the last step: loopback is dialled for real, anything else is
// recorded and refused. "allowed.test"'s public address is answered in
// memory by a handler that redirects to the local counting server.
func (r *hostileRig) connect(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(addr)
	ip := netip.MustParseAddr(host)
	if ip.IsLoopback() {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	r.mu.Lock()
	r.offBox = append(r.offBox, addr)
	r.mu.Unlock()
	if ip == r.allowedIP {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			if _, err := http.ReadRequest(bufio.NewReader(server)); err != nil {
				return
			}
			fmt.Fprintf(server, "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:%s/stolen\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", r.port)
		}()
		return client, nil
	}
	return nil, errors.New("recording stub: not dialled")
}

// Every hostile target is refused by the real dialer, the local server
// that stands for "inside" counts zero hits, and nothing forbidden reaches
// the connect step.
func TestHostileTargets(t *testing.T) {
	r := newHostileRig(t)
	d := &Dialer{LookupIP: r.lookup, Connect: r.connect}
	client := d.Client()
	p := r.port
	cases := []string{
		// loopback, in every spelling
		"http://127.0.0.1:" + p + "/",
		"http://127.1.2.3:" + p + "/",
		"http://[::1]:" + p + "/",
		"http://localhost:" + p + "/",
		"http://LOCALHOST.:" + p + "/",
		"http://[::ffff:127.0.0.1]:" + p + "/",
		"http://[0:0:0:0:0:ffff:7f00:1]:" + p + "/",
		"http://2130706433:" + p + "/",
		"http://0x7f000001:" + p + "/",
		"http://0177.0.0.1:" + p + "/",
		"http://017700000001:" + p + "/",
		"http://127.1:" + p + "/",
		"http://0x7f.0x0.0x0.0x1:" + p + "/",
		"http://loopback6.test:" + p + "/",
		"http://[::127.0.0.1]:" + p + "/",
		"http://sixtofour.test:" + p + "/",
		"http://0.0.0.0:" + p + "/",
		"http://[::]:" + p + "/",
		"http://zero.test:" + p + "/",
		"http://mixedlocal.test:" + p + "/",
		// private
		"http://10.0.0.1/",
		"http://172.16.5.4/",
		"http://172.31.255.255/",
		"http://192.168.1.1/",
		"http://[fd00::1]/",
		"http://[fc00::1]/",
		"http://internal.test/",
		"http://v6private.test/",
		"http://mapped.test/",
		"http://[::ffff:10.0.0.1]/",
		"http://mixed.test/",
		// link-local and cloud metadata
		"http://169.254.169.254/latest/meta-data/",
		"http://169.254.1.1/",
		"http://[fe80::1]/",
		"http://[fd00:ec2::254]/",
		"http://ec2-v6-meta.test/",
		"http://metadata.test/computeMetadata/v1/",
		"http://100.100.100.200/",
		"http://alibaba-md.test/",
		"http://[64:ff9b::a9fe:a9fe]/",
		"http://nat64-meta.test/",
		"http://[64:ff9b::7f00:1]:" + p + "/",
		// CGNAT, multicast, broadcast, reserved
		"http://100.64.0.1/",
		"http://100.127.255.254/",
		"http://cgnat.test/",
		"http://224.0.0.1/",
		"http://[ff02::1]/",
		"http://multicast6.test/",
		"http://255.255.255.255/",
		"http://broadcast.test/",
		"http://240.0.0.1/",
		// schemes and URL tricks
		"file:///etc/passwd",
		"gopher://127.0.0.1:" + p + "/_GET",
		"dict://127.0.0.1:" + p + "/",
		"ftp://127.0.0.1:" + p + "/",
		"http://user:pass@example.com/",
		"http://allowed.test@127.0.0.1:" + p + "/",
		// an allowed host that redirects inside
		"http://allowed.test/start",
		// DNS rebinding: the second lookup of the same name answers metadata
		"http://rebind.test/a",
		"http://rebind.test/b",
	}
	if len(cases) < 40 {
		t.Fatalf("only %d hostile cases", len(cases))
	}
	for _, raw := range cases {
		t.Run(raw, func(t *testing.T) {
			if _, err := CheckURL(raw); err != nil {
				if !errors.Is(err, ErrRefused) {
					t.Fatalf("CheckURL error is not a refusal: %v", err)
				}
				return // refused before any dial, as the gateway does
			}
			req, err := http.NewRequest(http.MethodGet, raw, nil)
			if err != nil {
				return
			}
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("fetched %s: HTTP %d", raw, resp.StatusCode)
			}
			if !errors.Is(err, ErrRefused) && !strings.Contains(err.Error(), "recording stub") {
				t.Fatalf("%s failed, but not by the guard: %v", raw, err)
			}
		})
	}
	if n := r.hits.Load(); n != 0 {
		t.Fatalf("the local server was reached %d times", n)
	}
	for _, addr := range r.offBox {
		if addr != net.JoinHostPort(r.allowedIP.String(), "80") {
			t.Errorf("a forbidden address reached the connect step: %s", addr)
		}
	}
	if r.lookups["rebind.test"] != 2 {
		t.Errorf("rebind.test resolved %d times, want 2 (once per request, at dial time)", r.lookups["rebind.test"])
	}
}

// The rig can tell a hit when the guard lets one through: with
// allow_local_urls on, the same loopback target is reached.
func TestHostileRigCountsHits(t *testing.T) {
	r := newHostileRig(t)
	d := &Dialer{AllowLocal: true, LookupIP: r.lookup, Connect: r.connect}
	resp, err := d.Client().Get("http://127.0.0.1:" + r.port + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if r.hits.Load() != 1 {
		t.Fatalf("hits = %d, want 1", r.hits.Load())
	}
	// Metadata stays refused even with allow_local_urls.
	if _, err := d.Client().Get("http://169.254.169.254/"); !errors.Is(err, ErrRefused) {
		t.Fatalf("metadata with allow_local_urls: %v", err)
	}
}

// Proxy settings in the environment must not move the connect out of the
// guard's sight.
func TestProxyEnvironmentIgnored(t *testing.T) {
	r := newHostileRig(t)
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:"+r.port)
	t.Setenv("http_proxy", "http://127.0.0.1:"+r.port)
	d := &Dialer{LookupIP: r.lookup, Connect: r.connect}
	_, err := d.Client().Get("http://internal.test/")
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("via proxy env: %v", err)
	}
	if r.hits.Load() != 0 {
		t.Fatal("the proxy (the local server) was used")
	}
}
