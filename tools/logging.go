package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/time/rate"

	"github.com/ardgate/ardgate/attach"
)

// An attached server's log messages reach the client as the gateway's own
// notifications/message, named by the attachment (logger "<name>" or
// "<name>/<the server's logger>"), at the level the client set with
// logging/setLevel: "error" and above until it sets one, as for any
// session of mcp-go's server. The level is also passed on to the servers
// (attach/logging.go), so that they do not send what would be dropped.

// Log messages relayed to one session, at most: a server that floods its
// log must not flood the client, nor the session's queue of notices,
// which its tools/list_changed share.
const (
	logsPerSecond = 100
	logBurst      = 100
)

// setLevel passes the level a client set on to its session's servers.
func (g *Gateway) setLevel(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
	if s := g.current(ctx); s != nil {
		s.att.SetLogLevel(req.Params.Level)
	}
}

// relayLog sends a log message of one of the session's servers to its
// client, if the client wants messages of that level.
func (g *Gateway) relayLog(s *session, a *attach.Attachment, m attach.LogMessage) {
	cs := s.logs.Load()
	if cs == nil || !m.Level.ShouldSendTo((*cs).GetLogLevel()) {
		return
	}
	if !s.logLimit.Allow() {
		if s.logsDropped.Add(1) == 1 {
			g.log.Warn("an attached server logs more than the client is sent: dropping its messages past that", "session", (*cs).SessionID(),
				"upstream", a.Name, "per_second", logsPerSecond)
		}
		return
	}
	logger := a.Name
	if m.Logger != "" {
		logger += "/" + m.Logger
	}
	n := mcp.NewLoggingMessageNotification(m.Level, logger, m.Data)
	if err := g.mcp.SendLogMessageToSpecificClient((*cs).SessionID(), n); err != nil {
		g.log.Debug("a log message was not relayed", "session", (*cs).SessionID(), "upstream", a.Name, "err", err)
	}
}

// newLogLimit is a session's budget of relayed log messages.
func newLogLimit() *rate.Limiter { return rate.NewLimiter(logsPerSecond, logBurst) }
