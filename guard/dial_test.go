package guard_test

// IMPORTANT: these tests never send a packet off this machine. Addresses
// other than 127.0.0.1 and ::1 appear only as CheckIP inputs, fake
// resolver answers, or arguments seen by a recording Connect stub that
// refuses to connect anywhere.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ardgate/ardgate/guard"
)

func TestCheckIP(t *testing.T) {
	const (
		ok      = ""
		refused = "refused"
	)
	tests := []struct {
		ip     string
		strict string // AllowLocal false
		local  string // AllowLocal true
	}{
		// Public addresses.
		{"93.184.216.34", ok, ok},
		{"8.8.8.8", ok, ok},
		{"1.1.1.1", ok, ok},
		{"172.32.0.1", ok, ok},
		{"100.128.0.1", ok, ok},
		{"2606:4700::1111", ok, ok},
		{"2001:4860:4860::8888", ok, ok},
		{"::ffff:93.184.216.34", ok, ok},
		{"64:ff9b::5db8:d822", ok, ok}, // NAT64 of 93.184.216.34
		// Loopback.
		{"127.0.0.1", refused, ok},
		{"127.1.2.3", refused, ok},
		{"127.255.255.254", refused, ok},
		{"::1", refused, ok},
		// RFC 1918.
		{"10.0.0.1", refused, ok},
		{"10.255.255.255", refused, ok},
		{"172.16.0.1", refused, ok},
		{"172.31.255.255", refused, ok},
		{"192.168.1.1", refused, ok},
		// Link-local and unique-local.
		{"169.254.1.1", refused, ok},
		{"fe80::1", refused, ok},
		{"fc00::1", refused, ok},
		{"fd12:3456::1", refused, ok},
		// CGNAT 100.64.0.0/10.
		{"100.64.0.1", refused, ok},
		{"100.127.255.255", refused, ok},
		// Cloud metadata: refused even with AllowLocal.
		{"169.254.169.254", refused, refused},
		{"fd00:ec2::254", refused, refused},
		{"100.100.100.200", refused, refused},
		{"169.254.170.2", refused, refused},  // ECS task credentials
		{"169.254.170.23", refused, refused}, // EKS Pod Identity
		{"fd00:ec2::23", refused, refused},
		{"168.63.129.16", refused, refused}, // Azure WireServer, a public address
		{"168.63.129.17", ok, ok},
		// SIIT's IPv4-translated form.
		{"::ffff:0:7f00:1", refused, ok},
		{"::ffff:0:a9fe:a9fe", refused, refused},
		{"::ffff:0:5db8:d822", ok, ok},
		// Unspecified, "this network", reserved, documentation.
		{"0.0.0.0", refused, refused},
		{"0.1.2.3", refused, refused},
		{"::", refused, refused},
		{"192.0.2.1", refused, refused},
		{"198.18.0.1", refused, refused},
		{"240.0.0.1", refused, refused},
		{"255.255.255.255", refused, refused},
		{"2001:db8::1", refused, refused},
		// Multicast.
		{"224.0.0.1", refused, refused},
		{"239.255.255.250", refused, refused},
		{"ff02::1", refused, refused},
		{"ff05::1:3", refused, refused},
		// IPv4-mapped forms.
		{"::ffff:127.0.0.1", refused, ok},
		{"::ffff:10.0.0.1", refused, ok},
		{"::ffff:169.254.169.254", refused, refused},
		{"::ffff:0.0.0.0", refused, refused},
		// IPv4-compatible (deprecated) forms.
		{"::127.0.0.1", refused, refused},
		{"::a9fe:a9fe", refused, refused},
		// NAT64.
		{"64:ff9b::7f00:1", refused, ok},
		{"64:ff9b::a00:1", refused, ok},
		{"64:ff9b::a9fe:a9fe", refused, refused},
		// Zones do not hide an address.
		{"fe80::1%eth0", refused, ok},
		{"::1%lo", refused, ok},
		{"fd00:ec2::254%eth0", refused, refused},
	}
	for _, tt := range tests {
		ip := netip.MustParseAddr(tt.ip)
		for _, allowLocal := range []bool{false, true} {
			want := tt.strict
			if allowLocal {
				want = tt.local
			}
			t.Run(fmt.Sprintf("%s/local=%v", tt.ip, allowLocal), func(t *testing.T) {
				err := (&guard.Dialer{AllowLocal: allowLocal}).CheckIP(ip)
				if want == ok {
					if err != nil {
						t.Errorf("CheckIP(%s) = %v, want allowed", tt.ip, err)
					}
					return
				}
				wantRefusal(t, err, "ssrf")
			})
		}
	}

	t.Run("invalid address", func(t *testing.T) {
		for _, allowLocal := range []bool{false, true} {
			wantRefusal(t, (&guard.Dialer{AllowLocal: allowLocal}).CheckIP(netip.Addr{}), "ssrf")
		}
	})
}

// recorder is a Connect stub: it records each call and connects nowhere.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

var errStub = errors.New("stub: connect not performed")

func (r *recorder) connect(_ context.Context, network, addr string) (net.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, network+" "+addr)
	return nil, errStub
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// resolver is a fake LookupIP: a fixed answer per name, or a sequence of
// answers for names that change between calls.
type resolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	lookups []string
}

func newResolver(m map[string][]string) *resolver {
	r := &resolver{answers: map[string][][]netip.Addr{}}
	for name, ips := range m {
		var as []netip.Addr
		for _, s := range ips {
			as = append(as, netip.MustParseAddr(s))
		}
		r.answers[name] = [][]netip.Addr{as}
	}
	return r
}

func (r *resolver) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, host)
	seq, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	ans := seq[0]
	if len(seq) > 1 {
		r.answers[host] = seq[1:]
	}
	return ans, nil
}

func (r *resolver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lookups)
}

func TestDialContext(t *testing.T) {
	names := map[string][]string{
		"internal.test": {"10.0.0.1"},
		"mixed.test":    {"10.0.0.1", "127.0.0.1"},
		"public.test":   {"93.184.216.34"},
		"meta-pub.test": {"169.254.169.254", "93.184.216.34"},
		"meta.test":     {"169.254.169.254"},
		"mapped.test":   {"::ffff:127.0.0.1"},
		"nat64.test":    {"64:ff9b::a9fe:a9fe"},
		"v6pub.test":    {"2606:4700::1111"},
		"empty.test":    {},
		"localhost":     {"127.0.0.1"},
	}
	tests := []struct {
		name        string
		allowLocal  bool
		addr        string
		wantConnect []string // what the stub saw
		wantRefused bool     // errors.Is(err, ErrRefused)
		wantLookups int
	}{
		{"private name refused before connect", false, "internal.test:80", nil, true, 1},
		{"private and loopback answers both refused", false, "mixed.test:443", nil, true, 1},
		{"allow local tries each answer", true, "mixed.test:443", []string{"tcp 10.0.0.1:443", "tcp 127.0.0.1:443"}, false, 1},
		{"public name connects to the checked address", false, "public.test:443", []string{"tcp 93.184.216.34:443"}, false, 1},
		{"one forbidden answer refuses the name", false, "meta-pub.test:80", nil, true, 1},
		{"one forbidden answer refuses the name, allow local", true, "meta-pub.test:80", nil, true, 1},
		{"localhost refused without lookup", false, "localhost:80", nil, true, 0},
		{"LOCALHOST. refused without lookup", false, "LOCALHOST.:80", nil, true, 0},
		{"sub.localhost refused without lookup", false, "app.localhost:80", nil, true, 0},
		{"localhost with allow local", true, "localhost:80", []string{"tcp 127.0.0.1:80"}, false, 1},
		{"IP literal v6 loopback, allow local", true, "[::1]:80", []string{"tcp [::1]:80"}, false, 0},
		{"IP literal zoned link-local, allow local", true, "[fe80::1%eth0]:80", []string{"tcp [fe80::1%eth0]:80"}, false, 0},
		{"IP literal zoned metadata, allow local", true, "[fd00:ec2::254%eth0]:80", nil, true, 0},
		{"metadata refused with allow local", true, "meta.test:80", nil, true, 1},
		{"mapped answer refused", false, "mapped.test:80", nil, true, 1},
		{"mapped answer unmapped for connect", true, "mapped.test:80", []string{"tcp 127.0.0.1:80"}, false, 1},
		{"NAT64 metadata refused", true, "nat64.test:80", nil, true, 1},
		{"IPv6 public", false, "v6pub.test:443", []string{"tcp [2606:4700::1111]:443"}, false, 1},
		{"IP literal private, no lookup", false, "10.0.0.1:80", nil, true, 0},
		{"IP literal metadata, no lookup", true, "169.254.169.254:80", nil, true, 0},
		{"IP literal v6 loopback", false, "[::1]:80", nil, true, 0},
		{"IP literal mapped", false, "[::ffff:10.0.0.1]:80", nil, true, 0},
		{"IP literal zoned link-local", false, "[fe80::1%eth0]:80", nil, true, 0},
		{"IP literal public", false, "93.184.216.34:443", []string{"tcp 93.184.216.34:443"}, false, 0},
		{"decimal spelling", true, "2130706433:80", nil, true, 0},
		{"hex spelling", true, "0x7f.1:80", nil, true, 0},
		{"short spelling", true, "127.1:80", nil, true, 0},
		{"octal spelling", true, "0177.0.0.1:80", nil, true, 0},
		{"no answers", false, "empty.test:80", nil, false, 1},
		{"lookup error", false, "nxdomain.test:80", nil, false, 1},
		{"no port", false, "public.test", nil, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			res := newResolver(names)
			d := &guard.Dialer{AllowLocal: tt.allowLocal, LookupIP: res.lookup, Connect: rec.connect}
			conn, err := d.DialContext(context.Background(), "tcp", tt.addr)
			if conn != nil {
				conn.Close()
				t.Fatal("got a connection from a stub")
			}
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, guard.ErrRefused); got != tt.wantRefused {
				t.Errorf("errors.Is(%v, ErrRefused) = %v, want %v", err, got, tt.wantRefused)
			}
			got := rec.got()
			if strings.Join(got, ",") != strings.Join(tt.wantConnect, ",") {
				t.Errorf("Connect saw %q, want %q", got, tt.wantConnect)
			}
			if len(got) > 0 && !errors.Is(err, errStub) {
				t.Errorf("error %v does not carry the connect error", err)
			}
			if n := res.count(); n != tt.wantLookups {
				t.Errorf("%d lookups, want %d", n, tt.wantLookups)
			}
		})
	}
}

// TestDialContextRebinding: a name that answers public first and then the
// metadata address is checked again at the second dial.
func TestDialContextRebinding(t *testing.T) {
	for _, allowLocal := range []bool{false, true} {
		t.Run("local="+strconv.FormatBool(allowLocal), func(t *testing.T) {
			res := &resolver{answers: map[string][][]netip.Addr{
				"rebind.test": {
					{netip.MustParseAddr("93.184.216.34")},
					{netip.MustParseAddr("169.254.169.254")},
				},
			}}
			rec := &recorder{}
			d := &guard.Dialer{AllowLocal: allowLocal, LookupIP: res.lookup, Connect: rec.connect}

			_, err := d.DialContext(context.Background(), "tcp", "rebind.test:80")
			if !errors.Is(err, errStub) || errors.Is(err, guard.ErrRefused) {
				t.Fatalf("first dial: %v, want the stub's error", err)
			}
			_, err = d.DialContext(context.Background(), "tcp", "rebind.test:80")
			wantRefusal(t, err, "ssrf", "169.254.169.254")
			if got := rec.got(); len(got) != 1 || got[0] != "tcp 93.184.216.34:80" {
				t.Errorf("Connect saw %q, want only the first, public address", got)
			}
			if res.count() != 2 {
				t.Errorf("%d lookups, want one per dial", res.count())
			}
		})
	}
}

// countingServer is a local httptest server that counts requests.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	if host, _, _ := net.SplitHostPort(srv.Listener.Addr().String()); host != "127.0.0.1" && host != "::1" {
		t.Fatalf("test server is not on loopback: %s", srv.Listener.Addr())
	}
	return srv, &hits
}

// loopbackOnly is a Connect that really dials, but only loopback: a guard
// against a test (or a broken Dialer) reaching anything off this machine.
func loopbackOnly(rec *recorder) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		rec.mu.Lock()
		rec.calls = append(rec.calls, network+" "+addr)
		rec.mu.Unlock()
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("test refuses to connect to %s: not loopback", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

func get(ctx context.Context, c *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

func TestClientLoopback(t *testing.T) {
	srv, hits := countingServer(t, nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	byName := fmt.Sprintf("http://app.test:%d/x", port)
	res := newResolver(map[string][]string{"app.test": {"127.0.0.1"}})

	tests := []struct {
		name       string
		allowLocal bool
		url        string
		connect    bool // use the real default Connect (nil)
		wantHits   int64
	}{
		{"allow local, IP literal, real dial", true, srv.URL, true, 1},
		{"allow local, name, real dial", true, byName, true, 1},
		{"allow local, name, loopback-only connect", true, byName, false, 1},
		{"strict, IP literal", false, srv.URL, true, 0},
		{"strict, name", false, byName, true, 0},
		{"strict, name, recorder", false, byName, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			rec := &recorder{}
			d := &guard.Dialer{AllowLocal: tt.allowLocal, LookupIP: res.lookup}
			if !tt.connect {
				d.Connect = loopbackOnly(rec)
			}
			c := d.Client()
			defer c.CloseIdleConnections()
			resp, err := get(t.Context(), c, tt.url)
			if tt.wantHits > 0 {
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || string(body) != "ok" {
					t.Errorf("status %d body %q", resp.StatusCode, body)
				}
			} else {
				if err == nil {
					resp.Body.Close()
					t.Fatal("request succeeded, want it refused")
				}
				wantRefusal(t, err, "ssrf", "127.0.0.1")
				if len(rec.got()) != 0 {
					t.Errorf("Connect saw %q", rec.got())
				}
			}
			if got := hits.Load(); got != tt.wantHits {
				t.Errorf("server hits = %d, want %d", got, tt.wantHits)
			}
		})
	}
}

// TestClientLoopbackIPv6: ::1 is loopback, allowed with AllowLocal like
// 127.0.0.1 (it is inside ::/96, the IPv4-compatible range).
func TestClientLoopbackIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	for _, allowLocal := range []bool{true, false} {
		c := (&guard.Dialer{AllowLocal: allowLocal}).Client()
		resp, err := get(t.Context(), c, srv.URL)
		if allowLocal {
			if err != nil {
				t.Fatalf("allow local: %v", err)
			}
			resp.Body.Close()
		} else {
			if err == nil {
				resp.Body.Close()
				t.Fatal("strict: request to ::1 succeeded")
			}
			wantRefusal(t, err, "ssrf", "::1")
		}
		c.CloseIdleConnections()
	}
	if hits.Load() != 1 {
		t.Errorf("hits = %d, want 1", hits.Load())
	}
}

// TestClientIgnoresProxyEnv: a proxy from the environment would move the
// connect out of the dialer's sight.
func TestClientIgnoresProxyEnv(t *testing.T) {
	srv, hits := countingServer(t, nil)
	proxy, proxyHits := countingServer(t, nil)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	res := newResolver(map[string][]string{"app.test": {"127.0.0.1"}})
	d := &guard.Dialer{AllowLocal: true, LookupIP: res.lookup, Connect: loopbackOnly(&recorder{})}
	c := d.Client()
	defer c.CloseIdleConnections()
	resp, err := get(t.Context(), c, fmt.Sprintf("http://app.test:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if hits.Load() != 1 || proxyHits.Load() != 0 {
		t.Errorf("server hits %d, proxy hits %d; want 1 and 0", hits.Load(), proxyHits.Load())
	}
}

// TestClientRedirects uses only local servers.
func TestClientRedirects(t *testing.T) {
	// B is the target of A's redirects.
	b, bHits := countingServer(t, nil)
	// A redirects /to?u=URL to URL, and /chain/N to /chain/N-1, /chain/0 is
	// a normal answer.
	var a *httptest.Server
	a, aHits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/to":
			http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/chain/"):
			n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/chain/"))
			if n == 0 {
				io.WriteString(w, "ok")
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/chain/%d", n-1), http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	})
	to := func(target string) string { return a.URL + "/to?u=" + url.QueryEscape(target) }
	bURL, _ := url.Parse(b.URL)
	metaURL := fmt.Sprintf("http://meta.test:%s/", bURL.Port())
	res := newResolver(map[string][]string{
		"meta.test": {"169.254.169.254"},
	})

	tests := []struct {
		name      string
		url       string
		wantRule  string // "" means success
		wantAHits int64
		wantBHits int64
	}{
		{"local A to local B", to(b.URL), "", 1, 1},
		{"to file", to("file:///etc/passwd"), "url", 1, 0},
		{"to gopher", to("gopher://127.0.0.1:70/"), "url", 1, 0},
		{"to ftp", to("ftp://127.0.0.1/x"), "url", 1, 0},
		{"to userinfo", to("http://user:pw@" + bURL.Host + "/"), "url", 1, 0},
		{"to metadata name, re-checked at dial", to(metaURL), "ssrf", 1, 0},
		{"to decimal IP", to("http://2130706433:" + bURL.Port() + "/"), "url", 1, 0},
		{"4 redirects", a.URL + "/chain/4", "", 5, 0},
		{"5 redirects", a.URL + "/chain/5", "", 6, 0},
		{"6 redirects", a.URL + "/chain/6", "redirects", 6, 0},
		{"20 redirects", a.URL + "/chain/20", "redirects", 6, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aHits.Store(0)
			bHits.Store(0)
			rec := &recorder{}
			// The servers are local, so AllowLocal; metadata stays refused.
			d := &guard.Dialer{AllowLocal: true, LookupIP: res.lookup, Connect: loopbackOnly(rec)}
			c := d.Client()
			defer c.CloseIdleConnections()
			resp, err := get(t.Context(), c, tt.url)
			if tt.wantRule == "" {
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d", resp.StatusCode)
				}
			} else {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("no error, want a refusal by %s", tt.wantRule)
				}
				wantRefusal(t, err, tt.wantRule)
			}
			if aHits.Load() != tt.wantAHits || bHits.Load() != tt.wantBHits {
				t.Errorf("hits A=%d B=%d, want %d %d", aHits.Load(), bHits.Load(), tt.wantAHits, tt.wantBHits)
			}
			for _, call := range rec.got() {
				if !strings.Contains(call, "127.0.0.1:") {
					t.Errorf("Connect saw %q", call)
				}
			}
		})
	}
}

// TestCheckRedirectPolicy calls the client's CheckRedirect directly: no
// request is sent.
func TestCheckRedirectPolicy(t *testing.T) {
	c := (&guard.Dialer{}).Client()
	if c.CheckRedirect == nil {
		t.Fatal("no CheckRedirect")
	}
	if c.Transport.(*http.Transport).Proxy != nil {
		t.Error("Transport.Proxy is set")
	}
	tests := []struct {
		target   string
		via      int
		wantRule string
	}{
		{"https://example.com/next", 1, ""},
		{"https://example.com/next", 5, ""},
		{"https://example.com/next", 6, "redirects"},
		{"https://example.com/next", 50, "redirects"},
		{"http://example.com/next", 1, ""},
		{"file:///etc/passwd", 1, "url"},
		{"gopher://example.com/", 1, "url"},
		{"ftp://example.com/", 1, "url"},
		{"https://user:pw@example.com/", 1, "url"},
		{"https://0x7f000001/", 1, "url"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/via=%d", tt.target, tt.via), func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, tt.target, nil)
			if err != nil {
				t.Fatal(err)
			}
			via := make([]*http.Request, tt.via)
			for i := range via {
				via[i], _ = http.NewRequest(http.MethodGet, "https://example.com/"+strconv.Itoa(i), nil)
			}
			err = c.CheckRedirect(req, via)
			if tt.wantRule == "" {
				if err != nil {
					t.Errorf("CheckRedirect = %v, want nil", err)
				}
				return
			}
			wantRefusal(t, err, tt.wantRule)
		})
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		raw      string
		ok       bool
		wantHost string
	}{
		{"https://example.com/x", true, "example.com"},
		{"http://example.com:8080/a?b=c#d", true, "example.com"},
		{"HTTPS://EXAMPLE.COM/", true, "EXAMPLE.COM"},
		{"https://127.0.0.1:7333/mcp", true, "127.0.0.1"}, // addresses are checked at dial time
		{"http://[::1]:80/", true, "::1"},
		{"https://sub.example.com./", true, "sub.example.com."},
		{"https://123.example.com/", true, "123.example.com"},
		{"ftp://example.com/x", false, ""},
		{"file:///etc/passwd", false, ""},
		{"gopher://example.com/", false, ""},
		{"javascript:alert(1)", false, ""},
		{"data:text/plain,hi", false, ""},
		{"ws://example.com/", false, ""},
		{"example.com/x", false, ""},
		{"//example.com/x", false, ""},
		{"", false, ""},
		{"https://user:pw@example.com/", false, ""},
		{"https://user@example.com/", false, ""},
		{"https://:pw@example.com/", false, ""},
		{"https:///x", false, ""},
		{"https://:443/", false, ""},
		{"http:example.com", false, ""},
		{"https://exa mple.com/", false, ""},
		{"https://example.com/%zz", false, ""},
		{"http://2130706433/", false, ""},
		{"http://0x7f.0.0.1/", false, ""},
		{"http://0177.0.0.1/", false, ""},
		{"http://127.1/", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			u, err := guard.CheckURL(tt.raw)
			if !tt.ok {
				if u != nil {
					t.Errorf("returned URL %v with the error", u)
				}
				wantRefusal(t, err, "url")
				return
			}
			if err != nil {
				t.Fatalf("CheckURL = %v", err)
			}
			if u.Hostname() != tt.wantHost {
				t.Errorf("host = %q, want %q", u.Hostname(), tt.wantHost)
			}
		})
	}
}

// IPv6 transition addresses are judged by the IPv4 address they carry.
func TestEmbeddedIPv4(t *testing.T) {
	d := &guard.Dialer{}
	for _, s := range []string{
		"2002:7f00:1::",                        // 6to4 of 127.0.0.1
		"2002:a9fe:a9fe::1",                    // 6to4 of 169.254.169.254
		"2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo, client 127.0.0.1 (inverted)
		"64:ff9b:1::a00:1",                     // local-use NAT64
		"fec0::1",                              // deprecated site-local
	} {
		if err := d.CheckIP(netip.MustParseAddr(s)); !errors.Is(err, guard.ErrRefused) {
			t.Errorf("%s allowed", s)
		}
	}
	// Transition addresses of public IPv4 addresses are fine.
	for _, s := range []string{"2002:5db8:d822::1", "2001:0:4136:e378:8000:63bf:a247:27dd"} {
		if err := d.CheckIP(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s refused: %v", s, err)
		}
	}
}

// The addresses the operator configured are reached wherever they are,
// without AllowLocal, and only as configured: another port of the same
// host, another name for it, and a metadata address stay refused.
func TestDialOwnAddresses(t *testing.T) {
	names := map[string][]string{
		"localhost":       {"127.0.0.1"},
		"mcp.svc.cluster": {"10.0.0.7"},
		"meta.test":       {"169.254.169.254"},
	}
	own := []string{"127.0.0.1:7334", "localhost:8080", "mcp.svc.cluster:80", "meta.test:80", "[::1]:9000"}
	for _, tt := range []struct {
		addr    string
		connect string // "" for refused
	}{
		{"127.0.0.1:7334", "tcp 127.0.0.1:7334"},
		{"localhost:8080", "tcp 127.0.0.1:8080"},
		{"mcp.svc.cluster:80", "tcp 10.0.0.7:80"},
		{"[::1]:9000", "tcp [::1]:9000"},
		{"127.0.0.1:7335", ""},      // another port
		{"localhost:7334", ""},      // another name
		{"mcp.svc.cluster:443", ""}, // another port of a name
		{"meta.test:80", ""},        // metadata, however configured
		{"10.0.0.7:80", ""},         // what the name resolves to, by address
	} {
		rec := &recorder{}
		d := &guard.Dialer{Own: own, LookupIP: newResolver(names).lookup, Connect: rec.connect}
		_, err := d.DialContext(context.Background(), "tcp", tt.addr)
		got := strings.Join(rec.got(), ",")
		if got != tt.connect || tt.connect == "" && !errors.Is(err, guard.ErrRefused) {
			t.Errorf("%s: connect saw %q, err %v; want %q", tt.addr, got, err, tt.connect)
		}
	}
}
