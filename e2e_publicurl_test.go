package main

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ardgate/ardgate/testdata/browser"
)

// Behind a proxy that ends TLS and serves the gateway under a path, as an
// operator puts it on the web: with public_url set, the keys page is
// given under the proxy's https URL, Chromium fills it in there, and its
// post, whose Origin is the proxy's, is taken though the gateway was
// reached over plain http (it was refused as from another origin).
func TestKeysPageBehindTLSProxy(t *testing.T) {
	browser.Need(t)
	var gateway atomic.Pointer[url.URL]
	proxy := httptest.NewTLSServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(gateway.Load())
		r.Out.URL.Path = strings.TrimPrefix(r.In.URL.Path, "/ardgate")
		r.Out.URL.RawPath = ""
	}})
	defer proxy.Close()
	public := proxy.URL + "/ardgate"
	mcpURL, _ := startHTTP(t, env(true, "ARDGATE_PUBLIC_URL="+public+"/"), "--catalog", keysCatalog)
	base, err := url.Parse(strings.TrimSuffix(mcpURL, "/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	gateway.Store(base)

	s := &keysSession{gateway: connectHTTP(t, mcpURL)}
	kr := s.keysRequired()
	if !strings.HasPrefix(kr.URL, public+"/credentials/") {
		t.Fatalf("the page is at %q, not under public_url %s", kr.URL, public)
	}
	if resp, err := http.Get(base.String() + strings.TrimPrefix(kr.URL, public)); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the page on the gateway's own listener: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	secret := newSecret()
	fillKeysPage(t, kr.URL, secret)
	s.keyArrived(secret)
}
