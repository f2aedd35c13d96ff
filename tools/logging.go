package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/time/rate"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/tools/serve"
)

// An attached server's log messages reach the client as the gateway's own
// notifications/message, named by the attachment (logger "<name>" or
// "<name>/<the server's logger>"), at the level the client set with
// logging/setLevel: "error" and above until it sets one, as for any
// session of mcp-go's server. The level is also passed on to the servers
// (attach/logging.go), so that they do not send what would be dropped.

// Log messages relayed to one session, at most: a server that floods its
// log must not flood the client.
const (
	logsPerSecond = 100
	logBurst      = 100
)

// noticeReserve is the room in an HTTP session's queue of notices (mcp-go
// keeps 100) that log messages leave free. A client with no GET stream
// gets the queue only with the answer to its next request, and a queue
// full of log messages would drop the tools/list_changed that tells it
// its tools changed.
const noticeReserve = 10

// setLevel passes the level a client set on to its session's servers.
func (g *Gateway) setLevel(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
	if s := g.current(ctx); s != nil {
		s.att.SetLogLevel(req.Params.Level)
	}
}

// relayLog sends a log message of one of the session's servers to its
// client, if the client wants messages of that level. Over stdio it is
// written at once, so that it keeps its place before the result of the
// call that logged it, which the fast path writes.
func (g *Gateway) relayLog(s *session, a *attach.Attachment, m attach.LogMessage) {
	cs := s.logs.Load()
	if cs == nil || !m.Level.ShouldSendTo((*cs).GetLogLevel()) {
		return
	}
	id := (*cs).SessionID()
	if !s.logLimit.Allow() {
		g.dropLog(s, a, fmt.Sprintf("an attached server logs more than the client is sent (%d a second): dropping its messages past that", logsPerSecond))
		return
	}
	logger := a.Name
	if m.Logger != "" {
		logger += "/" + m.Logger
	}
	params := map[string]any{"level": m.Level, "logger": logger, "data": m.Data}
	if r := g.stdioOut.Load(); r != nil && !s.perSession {
		r.Notify(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{Method: string(mcp.MethodNotificationMessage), Params: mcp.NotificationParams{AdditionalFields: params}}})
		return
	}
	if ch := s.Notices.Load(); ch != nil && len(*ch) >= cap(*ch)-noticeReserve {
		g.dropLog(s, a, "the client takes no notifications now (no GET stream, no request): dropping log messages until it does")
		return
	}
	if err := g.mcp.SendNotificationToSpecificClient(id, string(mcp.MethodNotificationMessage), params); err != nil {
		g.log.Debug("a log message was not relayed", "session", id, "upstream", a.Name, "err", err)
	}
}

// dropLog counts a log message not relayed, and says why the first time.
func (g *Gateway) dropLog(s *session, a *attach.Attachment, why string) {
	if s.logsDropped.Add(1) == 1 {
		g.log.Warn(why, "session", s.att.ID, "upstream", a.Name)
	}
}

// setLevelMethod is logging/setLevel as a frame spells it.
var setLevelMethod = []byte(`"logging/setLevel"`)

// logLevels are MCP's log levels, least first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// levelRefusal answers frame when it is a logging/setLevel without a level
// MCP knows: -32602 naming the levels, where mcp-go's server named none,
// said "invalid logging level" of a missing one, and spoke of Go struct
// fields of one that is not a string.
func levelRefusal(frame []byte) []byte {
	id, method, params, ok := request(frame)
	if !ok || !bytes.Equal(method, setLevelMethod) || !jsonrpc.ObjectOrAbsent(params) {
		return nil // params that are not an object are refused at the door
	}
	var p struct{ Level json.RawMessage }
	if jsonrpc.IsObject(params) {
		_ = json.Unmarshal(params, &p)
	}
	var level string
	if json.Unmarshal(p.Level, &level) == nil && slices.Contains(logLevels, level) {
		return nil
	}
	got := "none"
	if len(p.Level) > 0 && string(p.Level) != "null" {
		got = guard.Text(string(p.Level), 40)
	}
	m := serve.Message{Message: jsonrpc.Message{ID: id}}
	return m.RefusedAs(mcp.INVALID_PARAMS, fmt.Sprintf("logging/setLevel needs params.level, one of %s; got %s", strings.Join(logLevels, ", "), got))
}

// newLogLimit is a session's budget of relayed log messages.
func newLogLimit() *rate.Limiter { return rate.NewLimiter(logsPerSecond, logBurst) }
