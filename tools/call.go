package tools

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// proxy is the handler of one exposed upstream tool.
func (g *Gateway) proxy(name string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.forward(ctx, req, name, req.GetRawArguments()), nil
	}
}

// forward calls an exposed tool of the caller's session. The upstream's
// result, structuredContent included, comes back untouched; the caller's
// progress token is passed on and the upstream's progress relayed.
func (g *Gateway) forward(ctx context.Context, req mcp.CallToolRequest, name string, args any) *mcp.CallToolResult {
	s := g.current(ctx)
	if s == nil {
		return failure("internal", "no session")
	}
	relay := func(n mcp.JSONRPCNotification) {
		if err := g.mcp.SendNotificationToClient(ctx, n.Method, n.Params.AdditionalFields); err != nil {
			g.log.Debug("progress not relayed", "err", err)
		}
	}
	res, err := s.att.Call(ctx, name, args, req.Params.Meta, relay)
	if err != nil {
		if ctx.Err() != nil {
			return failure("cancelled", "the call to %s was cancelled: %v", name, context.Cause(ctx))
		}
		return fromError(err)
	}
	return res
}

const callSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "Exposed tool name, mcp_<attachment>__<tool>, as attach_resource returned it."},
    "arguments": {"type": "object", "description": "The tool's arguments, as its input schema describes them."}
  },
  "required": ["name"],
  "additionalProperties": false
}`

func (g *Gateway) callTool() server.ServerTool {
	t := mcp.NewToolWithRawSchema("call_attached_tool",
		"Call a tool of an attached resource by its exposed name. Use it when attached tools do not show up in your tool list.",
		json.RawMessage(callSchema))
	f, tr := false, true
	t.Annotations = mcp.ToolAnnotation{Title: "Call attached tool", ReadOnlyHint: &f, DestructiveHint: &tr, IdempotentHint: &f, OpenWorldHint: &tr}
	return server.ServerTool{Tool: t, Handler: g.call}
}

func (g *Gateway) call(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decodeArgs(req, &a); err != nil {
		return invalid("call_attached_tool", err), nil
	}
	if a.Name == "" {
		return invalid("call_attached_tool", errors.New(`"name" is required`)), nil
	}
	if t := strings.TrimSpace(string(a.Arguments)); t != "" && t != "null" && !strings.HasPrefix(t, "{") {
		return invalid("call_attached_tool", errors.New(`"arguments" must be an object`)), nil
	}
	s := g.current(ctx)
	if s == nil {
		return failure("internal", "no session"), nil
	}
	var names []string
	for _, t := range s.att.Tools() {
		names = append(names, t.Name)
	}
	if !slices.Contains(names, a.Name) {
		if len(names) == 0 {
			return failure("unknown_tool", "no tool is attached in this session; use discover_resources and attach_resource first"), nil
		}
		if len(names) > 50 {
			names = append(names[:50], "…")
		}
		return failure("unknown_tool", "%q is not an attached tool; attached tools: %s", a.Name, strings.Join(names, ", ")), nil
	}
	var args any
	if len(a.Arguments) > 0 {
		args = a.Arguments
	}
	return g.forward(ctx, req, a.Name, args), nil
}
