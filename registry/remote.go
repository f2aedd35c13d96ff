package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// remote is what every HTTP registry client shares: the guarded HTTP
// client, the bearer token and where it may go, retries, a short response
// cache, and the entries seen in results (for Lookup when the registry has
// no lookup route).
type remote struct {
	id        string
	base      *url.URL
	token     string
	userAgent string
	http      *http.Client
	ttl       time.Duration
	retries   int
	maxBody   int64

	flight singleflight.Group
	mu     sync.Mutex
	cache  *kept[[]byte] // answers by request, nil when not kept
	seen   *kept[Entry]  // entries by canonical URN
	last   HostHealth    // outcome of the latest round trip
}

// RemoteOptions configure a remote registry client.
type RemoteOptions struct {
	// HTTP makes the requests; it must be the gateway's guarded client.
	HTTP *http.Client
	// Token, if set, is sent as a bearer token to the registry's own
	// origin only.
	Token string
	// TTL is how long identical responses are reused (default 30s;
	// below zero, they are not kept).
	TTL time.Duration
	// Retries on 429 and 5xx (default 2).
	Retries int
	// Version is the gateway's, which the User-Agent of its requests
	// names: "ardgate/<version>", or "ardgate" without one.
	Version string
}

// Limits of a remote registry client. What it keeps of a registry's
// answers is bounded in bytes as well as in count, and expires unread:
// at most 16 MiB of answers (none over a quarter of it) and 8 MiB of
// entries (cut to what is shown, see bounded) per registry, whatever the
// registry sends.
const (
	maxRegistryResponse = 8 << 20
	maxCachedResponses  = 256
	maxCachedBytes      = 16 << 20
	maxSeenEntries      = 10000
	maxSeenBytes        = 8 << 20
	// seenTTL is how long an entry a search listed can be attached
	// from, when the registry has no lookup route or no longer answers.
	seenTTL    = time.Hour
	maxBackoff = 5 * time.Second
)

func newRemote(id, baseURL string, o RemoteOptions) (*remote, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("registry %s: %q is not an http(s) base URL", id, baseURL)
	}
	if o.HTTP == nil {
		return nil, fmt.Errorf("registry %s: no HTTP client", id)
	}
	r := &remote{id: id, base: u, token: o.Token, userAgent: userAgent(o.Version), ttl: o.TTL, retries: o.Retries, maxBody: maxRegistryResponse,
		seen: newKept(maxSeenEntries, maxSeenBytes, seenTTL, func(e Entry) int { return e.size() })}
	if r.ttl == 0 {
		r.ttl = 30 * time.Second
	}
	if r.ttl > 0 {
		// By capacity: a body io.ReadAll grew holds up to a quarter more.
		r.cache = newKept(maxCachedResponses, maxCachedBytes, r.ttl, func(b []byte) int { return cap(b) })
	}
	if o.Retries == 0 {
		r.retries = 2
	}
	// The token goes to the registry's origin only: a redirect elsewhere
	// loses it, whatever the standard library's own rule would do.
	c := *o.HTTP
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, r.base) {
			req.Header.Del("Authorization")
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		return nil
	}
	r.http = &c
	return r, nil
}

// userAgent names the gateway and its version to a registry, which saw
// Go's own "Go-http-client/1.1" and could not tell whose requests they were.
func userAgent(version string) string {
	if version == "" {
		return "ardgate"
	}
	return "ardgate/" + version
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// StatusError is a registry's non-2xx answer, with its message decoded
// from whichever error body the registry speaks.
type StatusError struct {
	Registry string
	Status   int
	Code     string
	Message  string
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Code != "" {
		return fmt.Sprintf("registry %s: HTTP %d %s: %s", e.Registry, e.Status, e.Code, msg)
	}
	return fmt.Sprintf("registry %s: HTTP %d: %s", e.Registry, e.Status, msg)
}

// Unwrap maps statuses onto the package's sentinels.
func (e *StatusError) Unwrap() error {
	switch e.Status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return ErrInvalidArgument
	case http.StatusNotFound:
		return ErrNotFound
	}
	return nil
}

// do sends one request (GET when body is nil) to path under the base URL,
// retrying 429 and 5xx with backoff that honours Retry-After, and returns
// the body of a 2xx answer. Identical requests within the TTL share one
// answer; identical requests in flight share one round trip.
func (r *remote) do(ctx context.Context, method, path string, query url.Values, body []byte) ([]byte, error) {
	// path is already escaped (a server name's "/" is %2F): parse, do not
	// assign, so it is not escaped twice.
	u, err := url.Parse(strings.TrimSuffix(r.base.String(), "/") + path)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", r.id, err)
	}
	u.RawQuery = query.Encode()
	key := method + " " + u.String() + "\x00" + string(body)

	if body, ok := r.cached(key); ok {
		return body, nil
	}

	v, err, _ := r.flight.Do(key, func() (any, error) {
		var last error
		for attempt := 0; ; attempt++ {
			out, retryAfter, err := r.once(ctx, method, u.String(), body)
			r.record(err)
			if err == nil {
				r.keep(key, out)
				return out, nil
			}
			last = err
			var se *StatusError
			retryable := errors.As(err, &se) && (se.Status == http.StatusTooManyRequests || se.Status >= 500)
			if !retryable || attempt >= r.retries {
				return nil, last
			}
			if retryAfter > maxBackoff {
				// Asked to wait longer than a search would: said now, not
				// after waiting the deadline out ("did not answer").
				return nil, fmt.Errorf("%w; it asks to be asked again in %s", last, retryAfter)
			}
			wait := retryAfter
			if wait == 0 {
				wait = time.Duration(200<<attempt)*time.Millisecond + time.Duration(rand.IntN(100))*time.Millisecond
			}
			select {
			case <-time.After(min(wait, maxBackoff)):
			case <-ctx.Done():
				return nil, fmt.Errorf("%w (after %v)", ctx.Err(), last)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// cached returns the answer kept for key, unless it expired.
func (r *remote) cached(key string) ([]byte, bool) {
	if r.cache == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cache.get(key)
}

// keep keeps body, the answer for key, for the TTL.
func (r *remote) keep(key string, body []byte) {
	if r.cache == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cache.put(key, body)
}

func (r *remote) once(ctx context.Context, method, u string, body []byte) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", r.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("registry %s %w: %w", r.id, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, r.maxBody+1))
	if err != nil {
		return nil, 0, fmt.Errorf("registry %s %w: reading the response: %w", r.id, ErrUnreachable, err)
	}
	if int64(len(data)) > r.maxBody {
		return nil, 0, fmt.Errorf("registry %s: %w: larger than %d MiB", r.id, ErrTooLarge, r.maxBody>>20)
	}
	if resp.StatusCode/100 == 2 {
		return data, 0, nil
	}
	return nil, retryAfter(resp.Header.Get("Retry-After")), decodeError(r.id, resp.StatusCode, data)
}

// decodeError reads {errorCode, message} (ARD), {detail} (FastAPI, 422
// lists), RFC 9457 problems with their errors, or plain text.
func decodeError(id string, status int, body []byte) error {
	e := &StatusError{Registry: id, Status: status}
	var ard struct {
		ErrorCode string          `json:"errorCode"`
		Message   string          `json:"message"`
		Detail    json.RawMessage `json:"detail"`
		// RFC 9457 problems, as the MCP Registry's framework sends them:
		// detail says "validation failed", errors say what failed.
		Errors []struct {
			Message  string `json:"message"`
			Location string `json:"location"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &ard) == nil {
		e.Code, e.Message = ard.ErrorCode, ard.Message
		if e.Message == "" && len(ard.Detail) > 0 {
			var s string
			var list []struct {
				Msg string `json:"msg"`
				Loc []any  `json:"loc"`
			}
			switch {
			case json.Unmarshal(ard.Detail, &s) == nil:
				e.Message = s
			case json.Unmarshal(ard.Detail, &list) == nil:
				var parts []string
				for _, d := range list {
					parts = append(parts, fmt.Sprintf("%v: %s", d.Loc, d.Msg))
				}
				e.Message = strings.Join(parts, "; ")
			}
		}
		for i, p := range ard.Errors {
			sep := "; "
			if i == 0 {
				sep = ": "
			}
			e.Message += sep + strings.TrimSpace(p.Location+" "+p.Message)
		}
	} else if len(body) > 0 && len(body) < 512 {
		e.Message = strings.TrimSpace(string(body))
	}
	if len(e.Message) > 500 {
		e.Message = e.Message[:500]
	}
	return e
}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// record notes a round trip's outcome for Health. A registry answering
// 4xx is well (an unknown URN, a query it refused), but for 401 and 403,
// which every request would get; transport failures and 5xx count
// against it, and so does an answer that could not be read (malformed).
func (r *remote) record(err error) {
	var se *StatusError
	ok := err == nil || errors.As(err, &se) && se.Status < 500 && se.Status != http.StatusUnauthorized && se.Status != http.StatusForbidden
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = HostHealth{Host: r.base.String(), OK: ok, CheckedAt: time.Now()}
	if !ok {
		r.last.Error = err.Error()
	}
}

// malformed records that an answer the registry gave could not be read,
// and returns err.
func (r *remote) malformed(err error) error {
	r.record(err)
	return err
}

// Health reports the latest round trip; a registry not asked yet is
// reported unchecked (zero CheckedAt).
func (r *remote) Health() []HostHealth {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.last
	h.Host = r.base.String()
	return []HostHealth{h}
}

// remember keeps entries from results for Lookup; they were bounded as
// they were decoded.
func (r *remote) remember(entries []Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range entries {
		r.seen.put(CanonicalURN(e.Identifier), e)
	}
}

func (r *remote) recall(urn string) (Entry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen.get(CanonicalURN(urn))
}
