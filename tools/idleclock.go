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
)

// The MCP server keeps each HTTP session's idle clock, and ends a session
// it has not seen for IdleTTL; the requests the fast path answers never
// reach it. A quarter of IdleTTL after the server last saw a session, the
// gateway has it answer a ping of the gateway's own in that session, and
// drops the answer. Letting one of the client's requests through instead
// would do as well, but a call of a proxied tool there would make the
// server's session hold every proxied tool (toServer).

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
	ping, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodPost, "/mcp", strings.NewReader(idleClockPing))
	if err != nil {
		s.seen.CompareAndSwap(now, seen)
		return
	}
	// The client's Host, which mcp-go checks against DNS rebinding as it
	// checked the client's own requests.
	ping.Host = r.Host
	ping.Header.Set("Content-Type", "application/json")
	ping.Header.Set("Accept", "application/json, text/event-stream")
	ping.Header.Set(server.HeaderKeySessionID, r.Header.Get(server.HeaderKeySessionID))
	if v := r.Header.Get(server.HeaderKeyProtocolVersion); v != "" {
		ping.Header.Set(server.HeaderKeyProtocolVersion, v)
	}
	w := &pingWriter{header: http.Header{}, status: http.StatusOK}
	released(h.streamable).ServeHTTP(w, ping)
	if w.status != http.StatusOK {
		// Not wound: the next request tries again.
		s.seen.CompareAndSwap(now, seen)
		h.g.log.Warn("the server refused the gateway's idle-clock ping", "status", w.status, "answer", guard.Text(w.body.String(), 200))
		return
	}
	h.g.requeue(s, w.body.Bytes())
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
