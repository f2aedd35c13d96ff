package serve

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Session is what the transport keeps of one client session: its calls in
// flight, where the MCP server queues its notifications, and the signs of
// life that wind the server's idle clock and keep the session from being
// reaped. The tools package's session embeds it.
type Session struct {
	// Fast are the session's calls in flight on the fast path, for the
	// client to cancel.
	Fast Inflight
	// Notices is where the MCP server queues the session's notifications
	// (tools/list_changed); set once it registered the session.
	Notices atomic.Pointer[chan<- mcp.JSONRPCNotification]
	// Seen is when the MCP server last saw a request of this HTTP session
	// (unix nanoseconds): the fast path leaves the session's idle clock to
	// the server, and winds it now and then.
	Seen atomic.Int64
	// Streams counts the session's open GET streams; Clock winds the
	// server's idle clock while the session is busy, started once.
	Streams   atomic.Int32
	Clock     atomic.Pointer[time.Timer]
	ClockOnce sync.Once
	// Heard is when the client's last request came or ended (unix
	// nanoseconds), and Requests counts those of them under way: the
	// signs of life that keep the session from being reaped. Reaper is the
	// timer that reaps it, started once.
	Heard    atomic.Int64
	Requests atomic.Int32
	Reaper   atomic.Pointer[time.Timer]
	ReapOnce sync.Once
}

// NoticesQueued tells whether the MCP server holds notifications for the
// session. Over HTTP, a client with no GET stream gets them only with the
// answer to its next request that reaches the server.
func (s *Session) NoticesQueued() bool {
	ch := s.Notices.Load()
	return ch != nil && len(*ch) > 0
}
