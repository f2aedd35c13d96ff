package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/tools/serve"
)

// whyNoTool says why session s has no tool called name, and what to do
// instead, in a sentence a model can act on; "" when it has the tool.
// code is the error code for a tool result: upstream_down where the
// attachment is starting or down, else unknown_tool.
// direct is a call by name in tools/call, where a tool of a deferred
// attachment is not served; else the call is through call_attached_tool,
// which serves every attached tool.
//
// mcp-go's server said "tool 'x' not found: tool not found" to a call of
// a tool detached, never attached, or deferred alike.
func (g *Gateway) whyNoTool(s *session, name string, direct bool) (why, code string) {
	if g.ownName([]byte(name)) {
		if direct {
			return "", ""
		}
		return fmt.Sprintf("%q is one of the gateway's own tools: call it directly, not through %s", name, callAttachedTool), "unknown_tool"
	}
	att := attachmentOf(s, name)
	if att != nil && slices.ContainsFunc(att.Tools(), func(t attach.Tool) bool { return t.Name == name }) {
		if direct && att.Deferred {
			return fmt.Sprintf("%q is a tool of %s, attached in deferred tool mode, so it is not in the tool list: call it through %s", name, att.Name, callAttachedTool), "unknown_tool"
		}
		return "", ""
	}
	switch {
	case att != nil:
		return whyNotToolOf(att, name)
	case strings.HasPrefix(name, "mcp_"):
		return whyNotAttached(s, name), "unknown_tool"
	}
	var own []string
	for _, t := range g.own {
		own = append(own, t.name)
	}
	return fmt.Sprintf("%q is not a tool of this session: the gateway's own tools are %s; attached tools are named mcp_<name>__<tool> (list_attached_resources lists what is attached)",
		name, listed(own)), "unknown_tool"
}

// whyNotToolOf is whyNoTool for a name of attachment att's that is none
// of its tools.
func whyNotToolOf(att *attach.Attachment, name string) (why, code string) {
	if att.Kind == attach.KindA2AAgent {
		return fmt.Sprintf("%s is an A2A agent, which has no tools: give it work with spawn_agent, then wait_task and message_task", att.Name), "unknown_tool"
	}
	var names []string
	for _, t := range att.Tools() {
		names = append(names, t.Name)
	}
	if len(names) == 0 {
		switch status, reason := att.Status(); status {
		case attach.StatusStarting:
			return fmt.Sprintf("%s is still starting and lists no tools yet: call %q again in a moment", att.Name, name), "upstream_down"
		case attach.StatusDown:
			return fmt.Sprintf("%s is down and lists no tools: %s", att.Name, reason), "upstream_down"
		}
		return fmt.Sprintf("%q is not a tool of %s, which lists none", name, att.Name), "unknown_tool"
	}
	if att.Only != nil {
		return fmt.Sprintf("%q is not a tool of %s that the gateway lets through (its config's servers[].tools); its tools: %s", name, att.Name, listed(names)), "unknown_tool"
	}
	return fmt.Sprintf("%q is not a tool of %s; its tools: %s", name, att.Name, listed(names)), "unknown_tool"
}

// whyNotAttached is whyNoTool for name, mcp_<server>__<tool>, when
// session s has no attachment of that name.
func whyNotAttached(s *session, name string) string {
	server, _, _ := strings.Cut(strings.TrimPrefix(name, "mcp_"), "__")
	if s.att.Attaching(server) {
		return fmt.Sprintf("%s is still being attached (its attach_resource has not returned; a package may be downloading): call %q once it has", server, name)
	}
	return fmt.Sprintf("nothing named %q is attached in this session (it may have been detached, or attached in another session): "+
		"find it with discover_resources and attach it with attach_resource, then call its tools on the next turn", server)
}

// attachmentOf is the attachment of session s whose tools' names begin as
// name does, mcp_<attachment>__, the longest such; nil when none does.
func attachmentOf(s *session, name string) *attach.Attachment {
	var att *attach.Attachment
	if s == nil {
		return nil
	}
	for _, a := range s.att.Attachments() {
		if strings.HasPrefix(name, "mcp_"+a.Name+"__") && (att == nil || len(a.Name) > len(att.Name)) {
			att = a
		}
	}
	return att
}

// listed joins names for a sentence, the first 50 of them.
func listed(names []string) string {
	if len(names) > 50 {
		names = append(names[:50:50], "…")
	}
	return strings.Join(names, ", ")
}

// paramsRefusal answers frame, on its way to the MCP server, when it is a
// request whose params the gateway refuses (a tools/call, callRefusal; a
// logging/setLevel, levelRefusal; an initialize, initRefusal), and
// returns nil for any other. With no
// session, the server says that first.
func (g *Gateway) paramsRefusal(s *session, frame []byte) []byte {
	switch {
	case bytes.Contains(frame, initializeMethod):
		return initRefusal(frame) // before there is a session
	case s == nil:
		return nil
	case bytes.Contains(frame, toolsCallMethod):
		return g.callRefusal(s, frame)
	case bytes.Contains(frame, setLevelMethod):
		return levelRefusal(frame)
	case bytes.Contains(frame, []byte("list")): // "tools\/list" too
		return toolsListRefusal(frame)
	}
	return nil
}

// callRefusal answers frame when it is a tools/call that cannot be
// served: with no tool's name, or one the session does not have
// (whyNoTool). The error is -32602, as the server's would be, with a
// sentence that says what to do where the server said "tool 'x' not
// found: tool not found" or spoke of Go struct fields.
func (g *Gateway) callRefusal(s *session, frame []byte) []byte {
	id, method, params, ok := request(frame)
	if !ok || !bytes.Equal(method, toolsCallMethod) || !jsonrpc.ObjectOrAbsent(params) {
		return nil // params that are not an object are refused at the door
	}
	m := serve.Message{Message: jsonrpc.Message{ID: id}}
	var raw []byte
	if jsonrpc.IsObject(params) {
		raw, _, _, _ = callMembers(params)
	}
	var name string
	switch {
	case g.isOwn(raw):
		return nil
	case raw == nil || json.Unmarshal(raw, &name) != nil || name == "":
		return m.RefusedAs(mcp.INVALID_PARAMS, "tools/call needs params.name, the name of the tool to call, as a string (tools/list lists them)")
	}
	why, _ := g.whyNoTool(s, name, true)
	if why == "" {
		return nil
	}
	return m.RefusedAs(mcp.INVALID_PARAMS, fmt.Sprintf("tool %q not found: %s", name, why))
}

var initializeMethod = []byte(`"initialize"`)

// initRefusal answers frame when it is an initialize without
// params.protocolVersion, which mcp-go's server took, and answered with
// the oldest version it speaks that has sessions (2025-03-26), a version
// the client never asked for. The pull request that fixed the low
// version mcp-go chose left this case as it was
// (https://github.com/mark3labs/mcp-go/pull/687).
func initRefusal(frame []byte) []byte {
	id, method, params, ok := request(frame)
	if !ok || !bytes.Equal(method, initializeMethod) || !jsonrpc.ObjectOrAbsent(params) {
		return nil
	}
	var p struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
	}
	if jsonrpc.IsObject(params) {
		_ = json.Unmarshal(params, &p)
	}
	var v string
	if json.Unmarshal(p.ProtocolVersion, &v) == nil && v != "" {
		return nil
	}
	m := serve.Message{Message: jsonrpc.Message{ID: id}}
	return m.RefusedAs(mcp.INVALID_PARAMS, "initialize needs params.protocolVersion, the newest MCP version the client speaks (such as "+mcp.LATEST_LEGACY_PROTOCOL_VERSION+"), with params.capabilities and params.clientInfo")
}
