package mcpwire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/ardgate/ardgate/guard"
)

// readResponse reads what servers send, with net/http's parser, and
// refuses with a sentence what it cannot read safely; keep says whether
// the connection may carry another request.
func TestReadResponse(t *testing.T) {
	type read struct {
		status int
		media  string
		length int64
		keep   bool
	}
	cases := []struct {
		name, head string
		want       read
		err        string
	}{
		{name: "length", head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n",
			want: read{status: 200, media: "application/json", length: 12, keep: true}},
		{name: "chunked", head: "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: Chunked\r\n\r\n",
			want: read{status: 200, media: "text/event-stream", length: -1, keep: true}},
		{name: "close", head: "HTTP/1.1 200 OK\r\nConnection: Keep-Alive, close\r\nContent-Length: 2\r\n\r\n",
			want: read{status: 200, length: 2}},
		{name: "1.0", head: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n", want: read{status: 200, length: 2}},
		{name: "1.0 keep-alive", head: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n",
			want: read{status: 200, length: 2, keep: true}},
		{name: "to the end", head: "HTTP/1.1 200 OK\r\n\r\n", want: read{status: 200, length: -1}},
		{name: "no content", head: "HTTP/1.1 204 No Content\r\n\r\n", want: read{status: 204, length: 0, keep: true}},
		{name: "switching", head: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", want: read{status: 101, length: 0}},
		{name: "continue first", head: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n",
			want: read{status: 200, length: 2, keep: true}},
		{name: "length and chunked", head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
			want: read{status: 200, length: -1, keep: true}},
		{name: "same length twice", head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
			want: read{status: 200, length: 5, keep: true}},
		{name: "long header", head: "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", 10000) + "\r\nContent-Length: 1\r\n\r\n",
			want: read{status: 200, length: 1, keep: true}},

		{name: "not HTTP", head: "SSH-2.0-OpenSSH_9.6\r\n\r\n", err: "malformed HTTP response"},
		{name: "HTTP/2 preface", head: "PRI * HTTP/2.0\r\n\r\n", err: "malformed HTTP status code"},
		{name: "bad status", head: "HTTP/1.1 2000 OK\r\n\r\n", err: "malformed HTTP status code"},
		{name: "two lengths", head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", err: "multiple Content-Length"},
		{name: "negative length", head: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", err: "bad Content-Length"},
		{name: "gzip coding", head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", err: "unsupported transfer encoding"},
		{name: "no colon", head: "HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", err: "missing colon"},
		{name: "cut short", head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", err: "reading the response: unexpected EOF"},
		{name: "empty", head: "", err: "closed the connection without answering"},
		{name: "too large", head: "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Big: "+strings.Repeat("b", 1000)+"\r\n", 1100) + "\r\n", err: "larger than 1024 KiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			head := headLimit{r: strings.NewReader(c.head), left: -1}
			resp, keep, err := readResponse(bufio.NewReaderSize(&head, 4<<10), &head)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := (read{resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength, keep}); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			if head.left != -1 {
				t.Errorf("the head's bound is still on after the head (%d left): a body would be cut at it", head.left)
			}
		})
	}
}

// upstream1 is a real HTTP server on loopback that answers a Poster's
// calls in the way each call's tool asks, and counts its connections.
type upstream1 struct {
	*httptest.Server
	opened, closed atomic.Int32
	headers        chan http.Header // each call's request headers

	mu      sync.Mutex
	gate    chan struct{} // the tool "gate" answers once it is closed
	waiting atomic.Int32  // calls to "gate" so far
}

func newUpstream1(t *testing.T) *upstream1 {
	u := &upstream1{headers: make(chan http.Header, 100)}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(u.serve))
	u.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			u.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			u.closed.Add(1)
		}
	}
	t.Cleanup(func() { goleak.VerifyNone(t) }) // last: after the server and the posters have closed
	u.Start()
	t.Cleanup(u.Close)
	return u
}

// posterTo makes a Poster to url with connections of its own, closed at
// the test's end.
func posterTo(t *testing.T, url string, headers map[string]string, session string, notify func(mcp.JSONRPCNotification)) *Poster {
	t.Helper()
	hc := (&guard.Dialer{AllowLocal: true}).Client()
	p := NewPoster(url, headers, hc, &Conns{}, func() string { return session }, notify, answerPing)
	if p.pool == nil {
		t.Fatal("a plain-http server's Poster has no connections of its own")
	}
	t.Cleanup(func() {
		p.Close()
		hc.CloseIdleConnections()
	})
	return p
}

func (u *upstream1) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/moved" {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case u.headers <- r.Header.Clone():
	default:
	}
	result := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, req.ID, req.Params.Name)
	flusher := w.(http.Flusher)
	switch req.Params.Name {
	case "json":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(result)))
		io.WriteString(w, result)
	case "chunked":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, result[:10])
		flusher.Flush()
		io.WriteString(w, result[10:])
	case "close":
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, result)
	case "events", "events-linger":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", result)
		flusher.Flush()
		if req.Params.Name == "events-linger" {
			time.Sleep(100 * time.Millisecond) // the stream ends after the answer was read
		}
	case "gate":
		u.waiting.Add(1)
		u.mu.Lock()
		gate := u.gate
		u.mu.Unlock()
		<-gate
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, result)
	case "hang":
		w.Header().Set("Content-Type", "application/json")
		flusher.Flush()
		<-r.Context().Done()
	case "error":
		http.Error(w, "the tool broke", http.StatusInternalServerError)
	}
}

// call makes a tools/call of tool through p and returns the text it got.
func call1(t *testing.T, ctx context.Context, p *Poster, id int, tool string) (string, error) {
	t.Helper()
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool)
	resp, err := p.Call(ctx, fmt.Sprint("int64:", id), []byte(line))
	if err != nil {
		return "", err
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil || len(res.Content) != 1 {
		return "", fmt.Errorf("result %s: %v", resp.Result, err)
	}
	return res.Content[0].Text, nil
}

// idleCount is how many connections the pool holds idle.
func (p *connPool) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited 5 s for %s", what)
		}
	}
}

// A plain-http server's calls go out on the Poster's own connections: one
// kept across calls of every shape, a new one only where the last cannot
// carry another request, and all closed when the Poster is.
func TestPosterOwnConnections(t *testing.T) {
	up := newUpstream1(t)
	var notes atomic.Int32
	p := posterTo(t, up.URL+"/mcp", map[string]string{"x-api-key": "k1"}, "s-1", func(mcp.JSONRPCNotification) { notes.Add(1) })
	p.Version = "2025-06-18"
	ctx := context.Background()

	for i, tool := range []string{"json", "chunked", "json", "chunked"} {
		if got, err := call1(t, ctx, p, i, tool); err != nil || got != tool {
			t.Fatalf("call %d (%s): %q, %v", i, tool, got, err)
		}
	}
	if n := up.opened.Load(); n != 1 {
		t.Errorf("four calls one after another opened %d connections, want 1", n)
	}
	h := <-up.headers
	for k, want := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Session-Id": "s-1", "Mcp-Protocol-Version": "2025-06-18", "X-Api-Key": "k1", "User-Agent": "Go-http-client/1.1"} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s: %q, want %q", k, got, want)
		}
	}

	// A request body too large to copy beside its head goes out from
	// where it lies, on the same connection.
	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"json","arguments":{"pad":%q}}}`, strings.Repeat("x", 300<<10))
	if resp, err := p.Call(ctx, "int64:5", []byte(big)); err != nil || !strings.Contains(string(resp.Result), `"json"`) || up.opened.Load() != 1 {
		t.Errorf("a 300 KiB request: %v, %v, %d connections opened, want 1", resp, err, up.opened.Load())
	}

	// An event stream is read up to the event that answers the call; the
	// rest of it, which may come later, is read to its end off the call,
	// and its connection kept.
	for i, tool := range []string{"events", "events-linger"} {
		p.pool.closeIdle()
		before := up.opened.Load()
		if got, err := call1(t, ctx, p, 10+i, tool); err != nil || got != tool {
			t.Fatalf("%s: %q, %v", tool, got, err)
		}
		waitFor(t, "the stream's connection to come back", func() bool { return p.pool.idleCount() == 1 })
		if got, err := call1(t, ctx, p, 11, "json"); err != nil || got != "json" || up.opened.Load() != before+1 {
			t.Errorf("after %s: %q, %v, %d connections opened, want 1", tool, got, err, up.opened.Load()-before)
		}
	}
	if n := notes.Load(); n != 2 {
		t.Errorf("%d notifications heard from two event streams, want 2", n)
	}

	// Connection: close, then a server that closes the idle connections:
	// each next call goes out on a new one, without an error.
	before := up.opened.Load()
	if got, err := call1(t, ctx, p, 12, "close"); err != nil || got != "close" {
		t.Fatalf("close: %q, %v", got, err)
	}
	if got, err := call1(t, ctx, p, 13, "json"); err != nil || got != "json" || up.opened.Load() != before+1 {
		t.Errorf("after Connection: close: %q, %v, %d connections opened, want 1", got, err, up.opened.Load()-before)
	}
	up.CloseClientConnections()
	waitFor(t, "the server to close them", func() bool { return up.closed.Load() == up.opened.Load() })
	if got, err := call1(t, ctx, p, 14, "json"); err != nil || got != "json" || up.opened.Load() != before+2 {
		t.Errorf("after the server closed its idle connections: %q, %v, %d opened, want 2", got, err, up.opened.Load()-before)
	}

	// Ten at once: ten connections, all kept for the next ten.
	run := func(base int) {
		up.mu.Lock()
		up.gate = make(chan struct{})
		up.mu.Unlock()
		up.waiting.Store(0)
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				if got, err := call1(t, ctx, p, base+i, "gate"); err != nil || got != "gate" {
					t.Errorf("concurrent call: %q, %v", got, err)
				}
			})
		}
		waitFor(t, "ten calls in flight", func() bool { return up.waiting.Load() == 10 })
		close(up.gate)
		wg.Wait()
	}
	opened := up.opened.Load()
	run(100)
	if n := up.opened.Load() - opened; n != 9 {
		t.Errorf("ten calls at once, with one connection idle, opened %d, want 9", n)
	}
	opened = up.opened.Load()
	run(200)
	if n := up.opened.Load() - opened; n != 0 {
		t.Errorf("ten calls after ten opened %d connections, want 0", n)
	}

	// One at a time, the calls after them take the connection used last,
	// and the others stay idle until they are idle too long: then the
	// next connection given back closes them.
	since := time.Now()
	for i := range 5 {
		if got, err := call1(t, ctx, p, 300+i, "json"); err != nil || got != "json" {
			t.Fatalf("call %d after the burst: %q, %v", i, got, err)
		}
	}
	p.pool.mu.Lock()
	var used int
	for _, c := range p.pool.idle {
		if c.idleSince.After(since) {
			used++
		} else {
			c.idleSince = c.idleSince.Add(-2 * idleTimeout) // as if long idle
		}
	}
	idle := len(p.pool.idle)
	p.pool.mu.Unlock()
	if idle != 10 || used != 1 {
		t.Errorf("five calls one at a time used %d of the %d idle connections, want 1 of 10", used, idle)
	}
	closedBefore := up.closed.Load()
	if got, err := call1(t, ctx, p, 310, "json"); err != nil || got != "json" {
		t.Fatalf("a call after the others were long idle: %q, %v", got, err)
	}
	if n := p.pool.idleCount(); n != 1 || up.opened.Load() != opened {
		t.Errorf("%d connections idle after the long-idle ones went, want 1; %d opened, want 0", n, up.opened.Load()-opened)
	}
	waitFor(t, "the long-idle connections to close", func() bool { return up.closed.Load() == closedBefore+9 })

	// A server's error status and its sentence; the connection stays.
	if _, err := call1(t, ctx, p, 20, "error"); err == nil || !strings.Contains(err.Error(), "HTTP 500: the tool broke") {
		t.Errorf("a 500: %v", err)
	}

	// A call whose context ends mid-response returns at once with the
	// context's error, and its connection, which still carries the unread
	// response, is not kept: were it, the next call would take it, the
	// pool being emptied first, and fail.
	p.pool.closeIdle()
	ctx2, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	start := time.Now()
	_, err := call1(t, ctx2, p, 21, "hang")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("a call past its deadline: %v after %s", err, time.Since(start))
	}
	if got, err := call1(t, ctx, p, 22, "json"); err != nil || got != "json" {
		t.Errorf("after a timed-out call: %q, %v", got, err)
	}

	// Closing the Poster, its last user, closes the pool's connections.
	p.Close()
	waitFor(t, "every connection to close", func() bool { return up.closed.Load() == up.opened.Load() })
	if _, err := call1(t, ctx, p, 30, "json"); !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("a call after close: %v", err)
	}
	// Nor is one dialled for what comes late (an answer to the server).
	opened = up.opened.Load()
	if _, err := p.pool.get(ctx); !errors.Is(err, net.ErrClosed) || up.opened.Load() != opened {
		t.Errorf("a connection asked of the shut pool: %v, %d opened", err, up.opened.Load()-opened)
	}
}

// The Poster writes a request itself only where it can do so as net/http
// would; anything else goes through the client.
func TestPosterOwnConnectionsWhen(t *testing.T) {
	hc := (&guard.Dialer{AllowLocal: true}).Client()
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{}).DialContext}}
	cases := []struct {
		name    string
		url     string
		headers map[string]string
		hc      *http.Client
		own     bool
	}{
		{"plain http", "http://127.0.0.1:1/mcp?x=1", nil, hc, true},
		{"default port", "http://example.test/mcp", map[string]string{"Authorization": "Bearer t"}, hc, true},
		{"https", "https://127.0.0.1:1/mcp", nil, hc, false},
		{"Host header", "http://127.0.0.1:1/mcp", map[string]string{"host": "other"}, hc, false},
		{"framing header", "http://127.0.0.1:1/mcp", map[string]string{"Transfer-Encoding": "chunked"}, hc, false},
		{"header injection", "http://127.0.0.1:1/mcp", map[string]string{"X-A": "1\r\nX-B: 2"}, hc, false},
		{"bad header name", "http://127.0.0.1:1/mcp", map[string]string{"X A": "1"}, hc, false},
		{"a proxy", "http://127.0.0.1:1/mcp", nil, proxied, false},
		{"no transport", "http://127.0.0.1:1/mcp", nil, &http.Client{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cs Conns
			p := NewPoster(c.url, c.headers, c.hc, &cs, func() string { return "" }, nil, nil)
			defer p.Close()
			if (p.pool != nil) != c.own {
				t.Fatalf("own connections: %v, want %v", p.pool != nil, c.own)
			}
			if c.own && (p.pool.addr == "" || !strings.Contains(p.pool.addr, ":")) {
				t.Errorf("pool address %q", p.pool.addr)
			}
		})
	}
	var cs Conns
	a := NewPoster("http://127.0.0.1:1/a", nil, hc, &cs, nil, nil, nil)
	b := NewPoster("http://127.0.0.1:1/b", nil, hc, &cs, nil, nil, nil)
	if a.pool != b.pool {
		t.Error("two posters to one host:port have pools of their own")
	}
	a.Close()
	a.Close() // twice: released once
	if len(cs.pools) != 1 {
		t.Errorf("%d pools after one of two users closed, want 1", len(cs.pools))
	}
	b.Close()
	if len(cs.pools) != 0 {
		t.Errorf("%d pools after both closed, want 0", len(cs.pools))
	}
}

// A session id the server gave that would break the header is refused
// with a sentence, not sent.
func TestPosterSessionIDInjection(t *testing.T) {
	up := newUpstream1(t)
	p := posterTo(t, up.URL+"/mcp", nil, "s\r\nX-Evil: 1", nil)
	if _, err := call1(t, context.Background(), p, 1, "json"); err == nil || !strings.Contains(err.Error(), "session id") {
		t.Fatalf("a session id with a line break: %v", err)
	}
	if n := up.opened.Load(); n != 0 {
		t.Errorf("%d connections opened for a request that was refused", n)
	}
}

// A call the server redirects is sent again through net/http, which
// follows the redirect.
func TestPosterRedirect(t *testing.T) {
	up := newUpstream1(t)
	p := posterTo(t, up.URL+"/moved", nil, "", nil)
	if got, err := call1(t, context.Background(), p, 1, "json"); err != nil || got != "json" {
		t.Fatalf("a redirected call: %q, %v", got, err)
	}
}

// The configured headers (a token among them) go to the server's own
// origin only: a call it redirects to another origin (here another port)
// reaches it without them, nor the session's id or a Referer. net/http
// carried them along, Authorization too to another port of the same host.
func TestPosterRedirectElsewhere(t *testing.T) {
	var got atomic.Pointer[http.Header]
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		got.Store(&h)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"a":1}}`)
	}))
	defer elsewhere.Close()
	var mine atomic.Int64
	mover := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") == "secret" && r.Header.Get("Authorization") == "Bearer tok" {
			mine.Add(1)
		}
		http.Redirect(w, r, elsewhere.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer mover.Close()
	p := posterTo(t, mover.URL+"/mcp", map[string]string{"X-Api-Key": "secret", "Authorization": "Bearer tok"}, "s-1", nil)
	resp, err := p.Call(context.Background(), "int64:1", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
	if err != nil || string(resp.Result) != `{"a":1}` {
		t.Fatalf("the redirected call: %v, %v", resp, err)
	}
	if h := got.Load(); h == nil || h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" || h.Get("Mcp-Session-Id") != "" || h.Get("Referer") != "" {
		t.Errorf("the other origin got the server's headers: %v", h)
	}
	if mine.Load() == 0 {
		t.Error("the server itself never got its headers")
	}
}

// A server that answers with something other than HTTP, or breaks off,
// gives an error that says so, and the Poster goes on.
func TestPosterHostileServer(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // last: after the Poster has closed
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	answers := []string{
		"SSH-2.0-OpenSSH_9.6\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"jsonrpc\"",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 43\r\n\r\n" + `{"jsonrpc":"2.0","id":4,"result":{"a":1}}  `,
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, a := range answers {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(conn)
			if _, err := http.ReadRequest(br); err == nil {
				io.WriteString(conn, a)
			}
			conn.Close()
		}
	})
	defer wg.Wait()
	defer ln.Close()
	p := posterTo(t, "http://"+ln.Addr().String()+"/mcp", nil, "", nil)
	for i, want := range []string{"malformed HTTP response", "unexpected EOF", "invalid byte in chunk length"} {
		line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, i+1)
		if _, err := p.Call(context.Background(), fmt.Sprint(i+1), []byte(line)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("answer %d: %v, want an error saying %q", i, err, want)
		}
	}
	resp, err := p.Call(context.Background(), "int64:4", []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}`))
	if err != nil || string(resp.Result) != `{"a":1}` {
		t.Errorf("a good answer after three bad ones: %v, %v", resp, err)
	}
}

// answerPing answers a server's requests as an upstream that declared no
// client capability does: a ping with {}, any other as not found.
func answerPing(_ context.Context, req transport.JSONRPCRequest) *transport.JSONRPCResponse {
	if req.Method == string(mcp.MethodPing) {
		return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Result: json.RawMessage(`{}`)}
	}
	return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "not answered: "+req.Method, nil)
}
