package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
)

// Config is what the caller gives for every flow. Flows and grants keep
// a pointer to it: do not change it once used.
type Config struct {
	// HTTP makes every request of the flow and of refreshes: the client
	// of a guard.Dialer. Required.
	HTTP *http.Client
	// Dialer checks the address of each URL before it is fetched, so a
	// refused address is never dialed. Its AllowLocal also permits
	// plain http on loopback; otherwise every URL must be https. nil
	// means a Dialer that allows nothing local.
	Dialer *guard.Dialer
	// RedirectURL is where the authorization server sends the user's
	// browser back: ardgate's /oauth/callback, or a loopback listener
	// opened for the flow. Required.
	RedirectURL string
	// ClientName names ardgate to the authorization server when it
	// registers a client.
	ClientName string
	// ClientID and ClientSecret are a client registered beforehand.
	// When ClientID is set it is used instead of dynamic registration.
	ClientID, ClientSecret string
	// Now is the clock for token expiry; nil means time.Now.
	Now func() time.Time
}

// Bounds on what a server sends.
const (
	// maxDocument bounds a metadata, registration or token document.
	maxDocument = 64 << 10
	// maxURLLen bounds a URL in metadata.
	maxURLLen = 2048
	// maxText bounds a name, client id, secret or scope.
	maxText = 512
	// maxList bounds a list in metadata.
	maxList = 64
	// fetchTimeout bounds each request of the flow.
	fetchTimeout = 30 * time.Second
)

func (c *Config) dialer() *guard.Dialer {
	if c.Dialer == nil {
		return &guard.Dialer{}
	}
	return c.Dialer
}

func (c *Config) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

func (c *Config) check() error {
	switch {
	case c.HTTP == nil:
		return errors.New("oauth: no HTTP client configured")
	case c.RedirectURL == "":
		return errors.New("oauth: no redirect URL configured")
	}
	return nil
}

// checkURL refuses a URL a server named (field says where) before it is
// fetched or shown: not http(s), credentials in it, too long, plain http
// off loopback or without AllowLocal, or an address the Dialer refuses.
func (c *Config) checkURL(field, raw string) (*url.URL, error) {
	if len(raw) > maxURLLen {
		return nil, &guard.Refusal{Rule: "size_limit", Reason: fmt.Sprintf("%s is longer than %d bytes", field, maxURLLen)}
	}
	u, err := guard.CheckURL(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	d := c.dialer()
	if u.Scheme != "https" && !(d.AllowLocal && loopback(u.Hostname())) {
		return nil, &guard.Refusal{Rule: "url", Reason: fmt.Sprintf("%s %s is plain http: OAuth needs https (http only on loopback, with allow_local_urls)", field, raw)}
	}
	if err := d.CheckAddr(config.DialAddr(u)); err != nil {
		return nil, fmt.Errorf("%s %s: %w", field, raw, err)
	}
	return u, nil
}

// loopback tells whether host names this machine.
func loopback(host string) bool {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// maxRedirects bounds a redirect chain when the caller's client sets no
// policy, as net/http's default does.
const maxRedirects = 10

// client is the caller's client, with each redirect's target checked as
// a URL a server named: a metadata URL on https must not lead to http.
func (c *Config) client() *http.Client {
	hc := *c.HTTP
	next := c.HTTP.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if next != nil {
			if err := next(req, via); err != nil {
				return err
			}
		} else if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		_, err := c.checkURL("a redirect", req.URL.String())
		return err
	}
	return &hc
}

// statusError is a response other than the one expected, with the OAuth
// error it names, if any (RFC 6749 §5.2, RFC 7591 §3.2.2).
type statusError struct {
	url    string
	status int
	oauth  string
}

func (e *statusError) Error() string {
	if e.oauth != "" {
		return fmt.Sprintf("%s answered HTTP %d: %s", e.url, e.status, e.oauth)
	}
	return fmt.Sprintf("%s answered HTTP %d", e.url, e.status)
}

// newStatusError reads the OAuth error of a body, bounded.
func newStatusError(u *url.URL, status int, body []byte) *statusError {
	var oe struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &oe) // a body that is not an OAuth error names none
	return &statusError{url: u.String(), status: status, oauth: strings.TrimSpace(bounds(oe.Error) + " " + bounds(oe.Description))}
}

// getJSON fetches raw, already checked, into v.
func (c *Config) getJSON(ctx context.Context, raw string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", raw, err)
	}
	return c.do(req, http.StatusOK, v)
}

// postJSON posts body as JSON to raw, already checked, and decodes the
// answer into v; want is the status of success.
func (c *Config) postJSON(ctx context.Context, raw string, body any, want int, v any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("post %s: %w", raw, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, raw, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("post %s: %w", raw, err)
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, want, v)
}

// do sends req through the caller's client and decodes a JSON answer of
// at most maxDocument bytes into v.
func (c *Config) do(req *http.Request, want int, v any) error {
	ctx, cancel := context.WithTimeout(req.Context(), fetchTimeout)
	defer cancel()
	req = req.WithContext(ctx)
	req.Header.Set("Accept", "application/json")
	resp, err := c.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", req.URL, err)
	}
	if len(data) > maxDocument {
		return &guard.Refusal{Rule: "size_limit", Reason: fmt.Sprintf("%s sent more than %d KiB", req.URL, maxDocument>>10)}
	}
	if resp.StatusCode != want && !(want == http.StatusCreated && resp.StatusCode == http.StatusOK) {
		return newStatusError(req.URL, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s is not the JSON expected: %v", ErrBadMetadata, req.URL, err)
	}
	return nil
}

// bounded refuses a text field over max bytes.
func bounded(field, s string, max int) error {
	if len(s) > max {
		return &guard.Refusal{Rule: "size_limit", Reason: fmt.Sprintf("%s is longer than %d bytes", field, max)}
	}
	return nil
}

// boundedList refuses a list with too many entries or an entry too long.
func boundedList(field string, ss []string) error {
	if len(ss) > maxList {
		return &guard.Refusal{Rule: "size_limit", Reason: fmt.Sprintf("%s has more than %d entries", field, maxList)}
	}
	for _, s := range ss {
		if err := bounded(field, s, maxText); err != nil {
			return err
		}
	}
	return nil
}
