package attach

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// An attached MCP server's log messages (notifications/message) go to the
// session's client, through Session.OnLog. The client's logging/setLevel
// is passed on to each of the session's own servers that declared they
// log, and to each attached later, so that a server sends no more than the
// client asked for. A shared connection (a stateless pinned server) serves
// other sessions: its messages are not the session's, and its level not
// the session's to set.

// LogMessage is one log message of an attached server's.
type LogMessage struct {
	Level mcp.LoggingLevel
	// Logger is the server's own name for what logged, if it gave one.
	Logger string
	Data   any
}

// setLevelTimeout bounds passing the client's level on to one server.
const setLevelTimeout = 10 * time.Second

// logMessage reads a notifications/message. ok is false for one without a
// level or data, which is no log message.
func logMessage(n mcp.JSONRPCNotification) (m LogMessage, ok bool) {
	f := n.Params.AdditionalFields
	level, _ := f["level"].(string)
	data, has := f["data"]
	if level == "" || !has {
		return m, false
	}
	logger, _ := f["logger"].(string)
	return LogMessage{Level: mcp.LoggingLevel(level), Logger: logger, Data: data}, true
}

// SetLogLevel records the least level of log message the client wants,
// and asks the session's own servers that log for that level.
func (s *Session) SetLogLevel(level mcp.LoggingLevel) {
	s.mu.Lock()
	s.logLevel = level
	s.mu.Unlock()
	s.passLevel()
}

// passLevel asks each of the session's own servers that log, and does not
// have the client's level yet, for it; in the background, as a server may
// be slow to answer. A streamable HTTP server among them is listened to
// between calls from then on. It runs at every change of the session's
// attachments too, which is how a server attached, started or reached
// again later gets the level.
func (s *Session) passLevel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logLevel == "" || s.closed {
		return
	}
	for _, a := range s.atts {
		a.mu.Lock()
		up, shared := a.up, a.release != nil
		a.mu.Unlock()
		if up == nil || shared || !up.logs {
			continue
		}
		up.listen() // to hear what it logs between calls
		if !up.wantLevel(s.logLevel) {
			continue
		}
		s.wg.Go(func() { up.setLevel(s.ctx) })
	}
}

// wantLevel records level as the one the server should have, and reports
// whether it must be told.
func (u *upstream) wantLevel(level mcp.LoggingLevel) bool {
	u.levelMu.Lock()
	defer u.levelMu.Unlock()
	if u.levelWant == level {
		return false
	}
	u.levelWant = level
	return true
}

// setLevel tells the server the level it should have, one request at a
// time, so that the last level asked for is the one it keeps.
func (u *upstream) setLevel(ctx context.Context) {
	u.levelSend.Lock()
	defer u.levelSend.Unlock()
	u.levelMu.Lock()
	level := u.levelWant
	u.levelMu.Unlock()
	if level == u.levelSent {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, setLevelTimeout)
	defer cancel()
	var req mcp.SetLevelRequest
	req.Params.Level = level
	if err := u.client.SetLevel(ctx, req); err != nil {
		u.log.Debug("the client's log level was not passed on", "level", level, "err", fmt.Errorf("logging/setLevel: %w", err))
		return
	}
	u.levelSent = level
}

// log passes a log message of a's server on to the client.
func (s *Session) log(a *Attachment, m LogMessage) {
	if s.OnLog != nil {
		s.OnLog(a, m)
	}
}
