package tools

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/tools/serve"
)

// Progress on the fast path.
//
// A call whose _meta carries a progress token takes the fast path too.
// Clients that send a token with every call (Claude Code and the MCP
// Inspector do) would otherwise send all their calls through the MCP
// server. The upstream gets a token of the gateway's (attach.Progress),
// and what it reports reaches the client under the client's own.
//
// Over stdio, each progress notification is one more frame
// (serve.Stdio.Notify). Over HTTP, the answer stays JSON while the
// upstream reports nothing. Its first progress turns the answer into an
// event stream, as mcp-go's server answers: the progress, then the result;
// so does a call quiet for the stream heartbeat, to carry comments
// (serve/heartbeat.go).
// Its events carry no ids, so a stream that breaks cannot be resumed. The
// call upstream is cancelled then, as for a broken JSON answer; mcp-go's
// server cancels it too, but keeps the stream's events, ending with the
// cancelled result, for a resumption.

// A notifier hears the upstream's progress on a fast call.
type notifier interface {
	Notify(mcp.JSONRPCNotification)
}

// progress asks for the upstream's progress on the call, for notify,
// when the client asked for it. A call without a token allocates nothing
// here.
func (c callFrame) progress(notify notifier) *attach.Progress {
	if c.Progress == nil {
		return nil
	}
	return &attach.Progress{Token: c.Progress, To: notify.Notify}
}

// notify sends a notification of the request ctx belongs to (its progress)
// to the client. Over HTTP it goes on the request's own stream
// (serve.ServerCall.Notify); mcp-go's server would hand it to whichever of the
// session's streams read first. Over stdio, where there is one stream,
// the server sends it.
func (g *Gateway) notify(ctx context.Context, method string, params map[string]any) error {
	if c := serve.ServerCallOf(ctx); c != nil {
		msg, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "method": method, "params": params})
		if err != nil {
			return err
		}
		if c.Notify(msg) {
			return nil
		}
	}
	return g.mcp.SendNotificationToClient(ctx, method, params)
}
