package oauth

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"testing"

	"github.com/ardgate/ardgate/guard"
)

func TestPendingCallback(t *testing.T) {
	c, _ := testConfig(t)
	fk := newFake(t)
	var p Pending
	h := challenge(t, c, fk.url("/mcp"))
	f1, err := c.Authorize(t.Context(), fk.url("/mcp"), h)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := c.Authorize(t.Context(), fk.url("/mcp"), h)
	if err != nil {
		t.Fatal(err)
	}
	p.Add(f1)
	p.Add(f2)
	q := browse(t, c, f2)
	if f, g, err := p.Callback(t.Context(), q); err != nil || f != f2 || g == nil {
		t.Fatalf("callback: flow %p (want %p), %v", f, f2, err)
	}
	if _, _, err := p.Callback(t.Context(), q); !errors.Is(err, ErrCodeReused) {
		t.Errorf("replayed callback: %v, want ErrCodeReused", err)
	}
	if _, _, err := p.Callback(t.Context(), url.Values{"state": {"unknown"}, "code": {"c"}}); !errors.Is(err, ErrStateMismatch) {
		t.Errorf("unknown state: %v, want ErrStateMismatch", err)
	}
	p.Remove(f2)
	if _, _, err := p.Callback(t.Context(), q); !errors.Is(err, ErrStateMismatch) {
		t.Errorf("callback of a removed flow: %v, want ErrStateMismatch", err)
	}
}

func TestDeniedAndMixUpAreRefused(t *testing.T) {
	c, _ := testConfig(t)
	fk := newFake(t)
	h := challenge(t, c, fk.url("/mcp"))
	f, err := c.Authorize(t.Context(), fk.url("/mcp"), h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Callback(t.Context(), url.Values{"state": {f.State()}, "error": {"access_denied"}}); !errors.Is(err, ErrDenied) {
		t.Fatalf("declined: %v, want ErrDenied", err)
	}
	if _, err := f.Exchange(t.Context(), f.State(), "late-code"); !errors.Is(err, ErrStateReused) {
		t.Errorf("a code after a decline: %v, want ErrStateReused", err)
	}
	f, err = c.Authorize(t.Context(), fk.url("/mcp"), h)
	if err != nil {
		t.Fatal(err)
	}
	q := browse(t, c, f)
	q.Set("iss", "https://other-issuer.example")
	if _, err := f.Callback(t.Context(), q); !errors.Is(err, ErrBadMetadata) {
		t.Errorf("another issuer's response: %v, want ErrBadMetadata", err)
	}
	if n := len(fk.requests()); n != 0 {
		t.Errorf("%d token requests, want none", n)
	}
}

// TestRedirectToPlainHTTPIsRefused: a metadata URL that redirects to
// plain http off loopback is refused, though the address is one the
// dialer allows.
func TestRedirectToPlainHTTPIsRefused(t *testing.T) {
	c, _ := testConfig(t)
	c.Dialer.LookupIP = func(_ context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil // as.test
	}
	fk := newFake(t)
	port := fk.srv.Listener.Addr().(*net.TCPAddr).Port
	to := "http://as.test:" + strconv.Itoa(port) + "/.well-known/oauth-protected-resource/mcp"
	h := http.Header{"Www-Authenticate": {`Bearer resource_metadata="` + fk.url("/hop?to="+url.QueryEscape(to)) + `"`}}
	_, err := c.Discover(t.Context(), fk.url("/mcp"), h)
	if !errors.Is(err, guard.ErrRefused) {
		t.Fatalf("err = %v, want the redirect refused", err)
	}
	t.Log(err)
}
