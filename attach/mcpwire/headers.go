package mcpwire

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/server"
)

// originHeaders sends a remote server's configured headers (its token
// among them) with every request to the server's origin. mcp-go's
// streamable HTTP transport sets configured headers on most of its
// requests but not on the DELETE that ends a session, so a server that
// asks for a token on every request never heard its sessions end. A
// redirect to another origin gets none of them.
type originHeaders struct {
	next    http.RoundTripper
	origin  *url.URL // the server's URL, whose origin gets the headers
	headers map[string]string
}

// WithHeaders returns hc sending headers to the origin of serverURL. A
// request redirected to another origin goes without the session's own
// headers either (its id, protocol version, last event id) and without a
// Referer, which net/http copies or sets on a redirect.
func WithHeaders(hc *http.Client, serverURL string, headers map[string]string) *http.Client {
	u, err := url.Parse(serverURL)
	if err != nil {
		return hc
	}
	c := *hc
	if len(headers) > 0 {
		next := c.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.Transport = originHeaders{next: next, origin: u, headers: headers}
	}
	check := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !SameOrigin(req.URL, u) {
			for _, h := range sessionHeaders {
				req.Header.Del(h)
			}
		}
		if check == nil && len(via) >= 10 { // net/http's own policy, which a CheckRedirect replaces
			return errors.New("stopped after 10 redirects")
		}
		if check == nil {
			return nil
		}
		return check(req, via)
	}
	return &c
}

// sessionHeaders are the headers of a request that belong to its server's
// session, and the Referer that names the server's URL.
var sessionHeaders = []string{server.HeaderKeySessionID, server.HeaderKeyProtocolVersion, "Last-Event-ID", "Referer"}

func (o originHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	if !SameOrigin(r.URL, o.origin) {
		return o.next.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper leaves its request as it came
	for k, v := range o.headers {
		if r.Header.Get(k) == "" {
			r.Header.Set(k, v)
		}
	}
	return o.next.RoundTrip(r)
}

// SameOrigin tells whether a and b have the same scheme and host.
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}
