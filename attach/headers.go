package attach

import (
	"net/http"
	"net/url"
)

// originHeaders sends a remote server's configured headers (its token
// among them) with every request to the server's origin. mcp-go's
// streamable HTTP transport sets configured headers on most of its
// requests but not on the DELETE that ends a session, so a server that
// asks for a token on every request never heard its sessions end. A
// redirect to another origin gets none of them.
type originHeaders struct {
	next    http.RoundTripper
	origin  string
	headers map[string]string
}

// withHeaders returns hc sending headers to the origin of serverURL.
func withHeaders(hc *http.Client, serverURL string, headers map[string]string) *http.Client {
	u, err := url.Parse(serverURL)
	if len(headers) == 0 || err != nil {
		return hc
	}
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = originHeaders{next: next, origin: u.Scheme + "://" + u.Host, headers: headers}
	return &c
}

func (o originHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme+"://"+r.URL.Host != o.origin {
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
