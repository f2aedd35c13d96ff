package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/tools/serve"
)

// The MCP server keeps each HTTP session's idle clock, and ends a session
// it has not seen for IdleTTL; the requests the fast path answers never
// reach it. A quarter of IdleTTL after the server last saw a session, the
// gateway has it answer a ping of the gateway's own in that session, and
// drops the answer. Letting one of the client's requests through instead
// would do as well, but a call of a proxied tool there would make the
// server's session hold every proxied tool (toServer).
//
// A session is not idle while a call of it runs or its GET stream is
// open, though its client sends nothing: the server swept a session in
// the middle of a call longer than IdleTTL (a slow tool, a wait_task of
// five minutes), and a client's open GET stream with it. Every quarter of
// IdleTTL, a busy session's clock is wound too (busyClock).

// idleClockPing winds a session's idle clock.
const idleClockPing = `{"jsonrpc":"2.0","id":"ardgate-idle-clock","method":"ping"}`

// windIdleClock winds the idle clock of s, the session of r, when the
// server has not seen it for a quarter of IdleTTL. One request at a time
// winds it.
func (h *HTTP) windIdleClock(r *http.Request, s *session) {
	now := time.Now().UnixNano()
	seen := s.seen.Load()
	if time.Duration(now-seen) <= h.idleTTL/4 || !s.seen.CompareAndSwap(seen, now) {
		return
	}
	if !h.ping(r.Context(), s, r.Host, r.Header.Get(server.HeaderKeySessionID), r.Header.Get(server.HeaderKeyProtocolVersion)) {
		s.seen.CompareAndSwap(now, seen) // not wound: the next request tries again
	}
}

// ping has the server answer the gateway's ping in session s, whose id
// is sid, as a request to host in protocol version (none when ""), and
// reports whether it did.
func (h *HTTP) ping(ctx context.Context, s *session, host, sid, version string) bool {
	ping, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, "/mcp", strings.NewReader(idleClockPing))
	if err != nil {
		return false
	}
	// The client's Host, which mcp-go checks against DNS rebinding as it
	// checked the client's own requests.
	ping.Host = host
	ping.Header.Set("Content-Type", "application/json")
	ping.Header.Set("Accept", "application/json, text/event-stream")
	ping.Header.Set(server.HeaderKeySessionID, sid)
	if version != "" {
		ping.Header.Set(server.HeaderKeyProtocolVersion, version)
	}
	w := &pingWriter{header: http.Header{}, status: http.StatusOK}
	serve.Released(h.streamable).ServeHTTP(w, ping)
	if w.status != http.StatusOK {
		h.g.log.Warn("the server refused the gateway's idle-clock ping", "status", w.status, "answer", guard.Text(w.body.String(), 200))
		return false
	}
	h.g.requeue(s, w.body.Bytes())
	return true
}

// busyClock starts, once per session, the timer that winds the idle
// clock of s, the session of r, every quarter of IdleTTL while a call of
// it runs or its GET stream is open. The timer ends with the session.
func (h *HTTP) busyClock(r *http.Request, s *session) {
	if s.clock.Load() != nil {
		return
	}
	s.clockOnce.Do(func() {
		host, sid := r.Host, r.Header.Get(server.HeaderKeySessionID)
		every := h.idleTTL / 4
		s.clock.Store(time.AfterFunc(every, func() {
			if h.g.lookup(sid) != s {
				return // the session ended
			}
			if s.fast.Busy() || s.streams.Load() > 0 {
				s.seen.Store(time.Now().UnixNano())
				h.ping(context.Background(), s, host, sid, "")
			}
			s.clock.Load().Reset(every)
		}))
	})
}

// requeue gives back to the server the notifications it sent a session
// with an answer the gateway drops: the server sends what it holds for a
// session with its next answer, whichever request that is.
func (g *Gateway) requeue(s *session, answer []byte) {
	ch := s.notices.Load()
	if ch == nil {
		return
	}
	for line := range bytes.SplitSeq(answer, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok && !bytes.HasPrefix(line, []byte("{")) {
			continue
		}
		if !ok {
			data = line // answered as JSON
		}
		var m struct {
			ID json.RawMessage `json:"id"`
			mcp.JSONRPCNotification
		}
		if json.Unmarshal(data, &m) != nil || m.Method == "" || m.ID != nil {
			continue // the ping's answer
		}
		n := m.JSONRPCNotification
		select {
		case *ch <- n:
		default:
			g.log.Warn("a notification the server sent with the gateway's idle-clock ping could not be queued again", "method", n.Method)
		}
	}
}

// pingWriter keeps the answer to the gateway's ping.
type pingWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *pingWriter) Header() http.Header         { return w.header }
func (w *pingWriter) WriteHeader(code int)        { w.status = code }
func (w *pingWriter) Write(p []byte) (int, error) { return w.body.Write(p) }
func (w *pingWriter) Flush()                      {}
