package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
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
// server's session hold every proxied tool (tools' toServer).
//
// A session is not idle while a call of it runs or its GET stream is
// open, though its client sends nothing: the server swept a session in
// the middle of a call longer than IdleTTL (a slow tool, a wait_task of
// five minutes), and a client's open GET stream with it. Every quarter of
// IdleTTL, a busy session's clock is wound too (Busy).

// Clocks are the timers of each HTTP session that mcp-go's server cannot
// keep right by itself: its idle clock, which the fast path hides
// requests from, and the reaper of a session whose client left without a
// DELETE (reap.go).
type Clocks struct {
	// Server is mcp-go's streamable HTTP server, which keeps the idle
	// clock and ends sessions.
	Server http.Handler
	// IdleTTL is how long the server keeps a session it has not seen;
	// ReapAfter, how long a session may show no sign of life.
	IdleTTL, ReapAfter time.Duration
	Log                *slog.Logger
	Sessions           Sessions
}

// Sessions is what the clocks ask of the tool surface.
type Sessions interface {
	// Live tells whether s is still the session whose id is sid.
	Live(sid string, s *Session) bool
	// Reaping notes that session sid, quiet for quiet, is being ended.
	Reaping(sid string, quiet time.Duration)
}

// idleClockPing winds a session's idle clock.
const idleClockPing = `{"jsonrpc":"2.0","id":"ardgate-idle-clock","method":"ping"}`

// Wind winds the idle clock of s, the session of r, when the server has
// not seen it for a quarter of IdleTTL. One request at a time winds it.
func (h *Clocks) Wind(r *http.Request, s *Session) {
	now := time.Now().UnixNano()
	seen := s.Seen.Load()
	if time.Duration(now-seen) <= h.IdleTTL/4 || !s.Seen.CompareAndSwap(seen, now) {
		return
	}
	if !h.ping(r.Context(), s, r.Host, r.Header.Get(server.HeaderKeySessionID), r.Header.Get(server.HeaderKeyProtocolVersion)) {
		s.Seen.CompareAndSwap(now, seen) // not wound: the next request tries again
	}
}

// ping has the server answer the gateway's ping in session s, whose id
// is sid, as a request to host in protocol version (none when ""), and
// reports whether it did.
func (h *Clocks) ping(ctx context.Context, s *Session, host, sid, version string) bool {
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
	Released(h.Server).ServeHTTP(w, ping)
	if w.status != http.StatusOK {
		h.Log.Warn("the server refused the gateway's idle-clock ping", "status", w.status, "answer", guard.Text(w.body.String(), 200))
		return false
	}
	s.Requeue(w.body.Bytes(), h.Log)
	return true
}

// Busy starts, once per session, the timer that winds the idle clock of
// s, the session of r, every quarter of IdleTTL while a call of
// it runs or its GET stream is open. The timer ends with the session.
func (h *Clocks) Busy(r *http.Request, s *Session) {
	if s.Clock.Load() != nil {
		return
	}
	s.ClockOnce.Do(func() {
		host, sid := r.Host, r.Header.Get(server.HeaderKeySessionID)
		every := h.IdleTTL / 4
		s.Clock.Store(time.AfterFunc(every, func() {
			if !h.Sessions.Live(sid, s) {
				return // the session ended
			}
			if s.Fast.Busy() || s.Streams.Load() > 0 {
				s.Seen.Store(time.Now().UnixNano())
				h.ping(context.Background(), s, host, sid, "")
			}
			s.Clock.Load().Reset(every)
		}))
	})
}

// Requeue gives back to the server the notifications it sent the session
// with an answer the gateway drops: the server sends what it holds for a
// session with its next answer, whichever request that is.
func (s *Session) Requeue(answer []byte, log *slog.Logger) {
	ch := s.Notices.Load()
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
			log.Warn("a notification the server sent with the gateway's idle-clock ping could not be queued again", "method", n.Method)
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
