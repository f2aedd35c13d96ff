package mcpwire

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"
)

// streamServer is a server whose GET stream follows a script: the
// n-th GET is answered by gets[n], or held open when there is none.
type streamServer struct {
	*httptest.Server
	gets []func(w http.ResponseWriter)

	mu      sync.Mutex
	headers []http.Header // each GET's
	posts   []string      // the bodies POSTed
	posted  chan struct{}
}

func newStreamServer(t *testing.T, gets ...func(w http.ResponseWriter)) *streamServer {
	s := &streamServer{gets: gets, posted: make(chan struct{}, 10)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			s.mu.Lock()
			s.posts = append(s.posts, string(b))
			s.mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			s.posted <- struct{}{}
			return
		}
		s.mu.Lock()
		n := len(s.headers)
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		if n < len(s.gets) {
			s.gets[n](w)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *streamServer) got() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// events answers a GET with an event stream of body, which then ends.
func events(body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}
}

// status answers a GET with code.
func status(code int) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) { http.Error(w, "no", code) }
}

// posterFor makes a Poster to s, on connections of its own or through
// net/http's client, as a plain-http or an https server's would be.
func posterFor(t *testing.T, url string, own bool, notify func(mcp.JSONRPCNotification)) *Poster {
	t.Helper()
	if own {
		return posterTo(t, url+"/mcp", map[string]string{"x-api-key": "k1"}, "s-1", notify)
	}
	hc := &http.Client{Transport: &http.Transport{}}
	p := NewPoster(url+"/mcp", map[string]string{"x-api-key": "k1"}, hc, &Conns{}, func() string { return "s-1" }, notify, answerPing)
	if p.pool != nil {
		t.Fatal("a Poster through net/http has connections of its own")
	}
	t.Cleanup(func() {
		p.Close()
		hc.CloseIdleConnections()
	})
	return p
}

// listening runs p.listen and returns a channel closed once it returns.
func listening(p *Poster) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Listen(slog.New(slog.DiscardHandler))
	}()
	return done
}

// The stream is read for notifications and requests, opened again where
// it ended after the wait the server asked for, and again after a
// failure; it ends with the Poster.
func TestListen(t *testing.T) {
	for _, own := range []bool{true, false} {
		t.Run(fmt.Sprintf("own connections %v", own), func(t *testing.T) {
			t.Cleanup(func() { goleak.VerifyNone(t) })
			s := newStreamServer(t,
				events("retry: 20\n\n"+
					"id: 7\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"+
					"id: 8\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"method\":\"ping\"}\n\n"+
					"id: 9\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_ch"), // cut off: not read whole
				status(http.StatusInternalServerError),
				events("id: 10\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"roots/list\"}\n\n"),
			)
			notes := make(chan string, 10)
			p := posterFor(t, s.URL, own, func(n mcp.JSONRPCNotification) { notes <- n.Method })
			p.Version = "2025-06-18"
			start := time.Now()
			done := listening(p)

			select {
			case m := <-notes:
				if m != "notifications/tools/list_changed" {
					t.Errorf("heard %s", m)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the stream's notification never came")
			}
			for range 2 {
				select {
				case <-s.posted:
				case <-time.After(5 * time.Second):
					t.Fatal("the server's requests were not answered")
				}
			}
			waitFor(t, "the fourth GET", func() bool { return len(s.got()) == 4 })
			// Without the server's retry: 20, the waits would be 1 s, 1 s
			// and 1 s.
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("four GETs took %s: the server's retry field was not heeded", d)
			}
			s.mu.Lock()
			posts := strings.Join(s.posts, "\n")
			s.mu.Unlock()
			for _, want := range []string{`{"jsonrpc":"2.0","id":"p1","result":{}}`, `"id":"r1","error":{"code":-32601`} {
				if !strings.Contains(posts, want) {
					t.Errorf("answers POSTed:\n%s\nwant one with %s", posts, want)
				}
			}

			h := s.got()
			for k, want := range map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": "s-1",
				"Mcp-Protocol-Version": "2025-06-18", "X-Api-Key": "k1", "Last-Event-ID": ""} {
				if got := h[0].Get(k); got != want {
					t.Errorf("the first GET's %s: %q, want %q", k, got, want)
				}
			}
			for i, want := range []string{"", "8", "8", "10"} {
				if got := h[i].Get("Last-Event-ID"); got != want {
					t.Errorf("GET %d: Last-Event-ID %q, want %q", i+1, got, want)
				}
			}
			if len(notes) != 0 {
				t.Errorf("%d more notifications, from an event cut off", len(notes))
			}

			p.Close()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the listener did not end with the Poster")
			}
		})
	}
}

// A server that offers no stream, or forgot the session, is asked once.
func TestListenStops(t *testing.T) {
	for _, code := range []int{http.StatusMethodNotAllowed, http.StatusNotFound} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Cleanup(func() { goleak.VerifyNone(t) })
			s := newStreamServer(t, status(code))
			p := posterFor(t, s.URL, true, nil)
			select {
			case <-listening(p):
			case <-time.After(5 * time.Second):
				t.Fatalf("still listening after HTTP %d", code)
			}
			if n := len(s.got()); n != 1 {
				t.Errorf("%d GETs, want 1", n)
			}
		})
	}
}

// A server that sends a line without end on the stream is cut off once
// it is past a message's cap, and the stream opened again.
func TestListenFlood(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const flood = 64 << 20
	var sent atomic.Int64
	s := newStreamServer(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := []byte(strings.Repeat("x", 64<<10))
		io.WriteString(w, "retry: 20\n\ndata: ")
		for sent.Load() < flood {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			sent.Add(int64(len(chunk)))
		}
	})
	p := posterFor(t, s.URL, true, nil)
	done := listening(p)
	waitFor(t, "the stream opened again", func() bool { return len(s.got()) == 2 })
	if n := sent.Load(); n >= flood {
		t.Errorf("the listener read all %d MiB of one line before giving up on it", n>>20)
	}
	p.Close()
	<-done
}

// A server that floods requests on the stream gets every one answered,
// with no more than a few answers on their way at once: the rest wait on
// the stream's reader.
func TestListenRequestFlood(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const pings = 300
	var inFlight, most, answered atomic.Int64
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(2 * time.Millisecond)
			inFlight.Add(-1)
			answered.Add(1)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if gets.Add(1) == 1 {
			for i := range pings {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n\n", i)
			}
			return
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	p := posterFor(t, srv.URL, true, nil)
	done := listening(p)
	waitFor(t, "every ping answered", func() bool { return answered.Load() == pings })
	if m := most.Load(); m > maxAnswering+1 {
		t.Errorf("%d answers on their way at once, want at most %d", m, maxAnswering+1)
	}
	p.Close()
	<-done
}

// Answers run off the caller up to maxAnswering at once; past that, on
// the caller, which returns once the answer is done.
func TestAnswering(t *testing.T) {
	a := newAnswering()
	release := make(chan struct{})
	var running atomic.Int32
	for range maxAnswering {
		a.run("ping", func() {
			running.Add(1)
			<-release
			running.Add(-1)
		})
	}
	waitFor(t, "the answers off the caller to start", func() bool { return running.Load() == maxAnswering })
	inline := false
	a.run("ping", func() { inline = true })
	if !inline {
		t.Error("with the answers off the caller all taken, the next did not run on the caller")
	}
	// A request relayed to the client, whose answer may wait for a
	// person, never runs on the caller.
	block, returned := make(chan struct{}), make(chan struct{})
	go func() {
		a.run("elicitation/create", func() { <-block })
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Error("a relayed request ran on the caller")
	}
	close(block)
	close(release)
	waitFor(t, "the answers to end", func() bool { return len(a) == 0 })
	off := make(chan struct{})
	a.run("ping", func() { <-off }) // would block the test, were it run on the caller
	close(off)
}

// A server that ends its stream at once, every time, asking for no wait,
// is asked again no more often than every listenRetryMin.
func TestListenRetryFloor(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "retry: 1\n\n")
	}))
	t.Cleanup(srv.Close)
	p := posterFor(t, srv.URL, true, nil)
	done := listening(p)
	time.Sleep(time.Second)
	p.Close()
	<-done
	if n := gets.Load(); n < 2 || n > int64(time.Second/listenRetryMin)+1 {
		t.Errorf("%d GETs in a second, want 2 to %d", n, time.Second/listenRetryMin+1)
	}
}
