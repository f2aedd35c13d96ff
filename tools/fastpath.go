package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/tools/serve"
)

// The fast path answers a plain tools/call of a proxied tool before the
// MCP server sees it. Through the server, a call's arguments are decoded
// into maps and encoded again for the upstream, and the upstream's result
// is decoded into structures and encoded again for the client; the stdio
// server also hands every line and every tool call to goroutines of its
// own. Here the frame is read once, the arguments go upstream as the
// client wrote them, and the result comes back as the upstream wrote it.
//
// Only calls that need nothing else take it: a proxied tool listed for
// the session, an id, arguments that are an
// object, and no other parameters (a task-augmented call takes the
// server's path). A progress
// token in _meta is relayed (progress.go); the rest of _meta goes on to
// the upstream as the client wrote it, as on the server's path. What every call passes still
// applies: the drain, the rate limit, the call timeout, the result cap,
// metrics, the same error results, and with tracing on the same spans
// (tracing.go).

// callFrame is a tools/call as the fast path reads it: the id, the
// arguments and the progress token as the client wrote them, and the
// trace context in its _meta.
type callFrame struct {
	ID        string          // the JSON of the id, the frame's own copy
	Name      string          // the session's string for the tool's name
	Arguments json.RawMessage // a slice of the frame; nil when absent or null
	Progress  json.RawMessage // the JSON of the progress token, a copy; nil for none
	// Meta is the call's _meta, a slice of the frame, when it holds more
	// than a progress token: the upstream gets its other members. nil
	// for none.
	Meta json.RawMessage
	// Via is call_attached_tool when the client called Name through it;
	// the call is admitted, counted and traced under that name then.
	Via string

	TraceParent, TraceState string // "" for none
}

var toolsCallMethod = []byte(`"tools/call"`)

// fastCall reads frame and, when it is a call the fast path takes,
// returns it; ok is false for anything else, which the MCP server then
// handles as usual.
func (g *Gateway) fastCall(s *session, frame []byte) (c callFrame, ok bool) {
	if s == nil || g.opts.NoFastPath || !bytes.Contains(frame, toolsCallMethod) {
		return c, false
	}
	tools := s.tools.Load()
	if tools == nil || len(*tools) == 0 {
		return c, false // nothing attached
	}
	id, method, params, ok := request(frame)
	if !ok || !bytes.Equal(method, toolsCallMethod) || len(params) == 0 || params[0] != '{' {
		return c, false
	}
	name, args, meta, other := callMembers(params)
	if other {
		// A task, or a multi-round trip's responses: the server knows
		// what they mean for the tool.
		return c, false
	}
	tool, via, args, known := calledTool(*tools, name, args)
	if !known {
		return c, false
	}
	c = callFrame{ID: string(id), Name: tool.name, Via: via, Arguments: args}
	if !c.readMeta(meta) {
		return c, false // the server says what is wrong with it
	}
	return c, true
}

// calledTool is the listed tool a call names, directly or through
// call_attached_tool (via), with its arguments: nil for none, and known
// false for arguments that are no object, which the server says is wrong.
func calledTool(tools map[string]toolRef, name, args []byte) (tool toolRef, via string, _ []byte, known bool) {
	tool, known = findTool(tools, name)
	known = known && tool.listed
	if !known && string(name) == `"`+callAttachedTool+`"` {
		via = callAttachedTool
		tool, args, known = calledThrough(tools, args)
	}
	switch {
	case !known:
	case args == nil || string(args) == "null":
		args = nil
	case args[0] != '{':
		known = false
	}
	return tool, via, args, known
}

// request reads the members of a JSON-RPC request that the fast path
// looks at; ok is false for a frame that is not one, or whose id is
// neither a string nor a number.
//
// The frame is read with jsonrpc.ScanObject, which checks it all but
// decodes only the members named here, by their exact names: a frame
// that names one twice or in another case was refused at the door
// (serve.FrameRefusal).
func request(frame []byte) (id, method, params []byte, ok bool) {
	var version []byte
	err := jsonrpc.ScanObject(frame, func(name, value []byte) {
		switch string(name) {
		case "jsonrpc":
			version = value
		case "id":
			id = value
		case "method":
			method = value
		case "params":
			params = value
		}
	})
	ok = err == nil && string(version) == `"`+mcp.JSONRPC_VERSION+`"` && plainID(id)
	return id, method, params, ok
}

// called is the name of the tool the client called: Name, or the
// gateway's tool it called Name through.
func (c callFrame) called() string {
	if c.Via != "" {
		return c.Via
	}
	return c.Name
}

// calledThrough reads the arguments of a call_attached_tool call: the
// attached tool they name, listed or deferred, and that tool's arguments.
// ok is false unless they name a tool in tools and have no other member:
// the gateway's tool then says what is wrong.
func calledThrough(tools map[string]toolRef, args []byte) (tool toolRef, inner []byte, ok bool) {
	if len(args) == 0 || args[0] != '{' {
		return tool, nil, false
	}
	name, inner, meta, other := callMembers(args)
	if other || meta != nil {
		return tool, nil, false
	}
	tool, ok = findTool(tools, name)
	return tool, inner, ok
}

// callMembers picks the members of a call's params (or of
// call_attached_tool's arguments, which have the same shape) out of obj,
// a JSON object checked with its frame; other tells of any other member.
func callMembers(obj []byte) (name, args, meta []byte, other bool) {
	_ = jsonrpc.ScanObject(obj, func(n, value []byte) {
		switch string(n) {
		case "name":
			name = value
		case "arguments":
			args = value
		case "_meta":
			meta = value
		default:
			other = true
		}
	})
	return name, args, meta, other
}

// readMeta reads what the fast path uses of a call's _meta: the progress
// token, the trace context (SEP-414: string values, as the server reads
// them), and whether it holds members to pass on. false: meta is not an
// object, or the token neither a string nor a number.
func (c *callFrame) readMeta(meta []byte) bool {
	if meta == nil || string(meta) == "null" {
		return true
	}
	if meta[0] != '{' {
		return false
	}
	var token []byte
	others := false
	_ = jsonrpc.ScanObject(meta, func(name, value []byte) { // checked with the frame
		switch string(name) {
		case "progressToken":
			token = value
			return
		case "traceparent":
			c.TraceParent = serve.JSONString(value)
		case "tracestate":
			c.TraceState = serve.JSONString(value)
		}
		others = true
	})
	if others {
		c.Meta = meta
	}
	if token == nil || string(token) == "null" {
		return true
	}
	c.Progress = bytes.Clone(token)
	return plainID(token) // the same two types as an id
}

// findTool finds the tool that raw, a JSON string, names in tools.
// A name without escapes is looked up in place, which copies nothing.
func findTool(tools map[string]toolRef, raw []byte) (toolRef, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return toolRef{}, false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		tool, ok := tools[string(raw[1:len(raw)-1])]
		return tool, ok
	}
	var name string
	if json.Unmarshal(raw, &name) != nil {
		return toolRef{}, false
	}
	tool, ok := tools[name]
	return tool, ok
}

// plainID accepts the ids JSON-RPC requests carry, and progress tokens:
// a string or a number.
func plainID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch b := id[0]; {
	case b == '"', b == '-', b >= '0' && b <= '9':
		return true
	}
	return false
}

// serveFast runs a call fastCall accepted over HTTP, in a request with
// header, and returns the response frame. A notifications/cancelled for
// the call calls cancel with a clientCancel, which must end ctx with that
// cause; the end of its session calls it with nil. The upstream's progress on
// the call goes to notify, if the client asked for progress.
func (g *Gateway) serveFast(ctx context.Context, cancel context.CancelCauseFunc, s *session, c callFrame, notify notifier, header http.Header) serve.Frame {
	ctx, trace := g.opts.Tracing.startCall(ctx, header, c)
	a, refused := g.admit(s, c.called(), nil)
	if refused != nil {
		f := g.failedFrame(s, c, refused)
		trace.end(f)
		return f
	}
	s.Fast.Add(c.ID, serve.StopCause(cancel))
	raw, err := s.att.CallRaw(ctx, c.Name, c.Arguments, c.Meta, c.progress(notify))
	s.Fast.Remove(c.ID)
	f := g.fastResult(ctx, s, c, a, raw, err)
	trace.end(f)
	return f
}

// fastResult ends an admitted fast call with what its upstream answered
// and returns the frame for the client.
func (g *Gateway) fastResult(ctx context.Context, s *session, c callFrame, a admission, raw json.RawMessage, err error) serve.Frame {
	name := c.Name
	if err != nil {
		a.end(true)
		return g.failedFrame(s, c, g.callFailed(ctx, s, name, err))
	}
	if len(raw) > min(g.opts.MaxResultBytes, maxResultFrame) {
		// Over the cap in bytes, perhaps in content: only now decode it.
		res, err := mcp.ParseCallToolResult(&raw)
		if err != nil {
			a.end(true)
			return g.failedFrame(s, c, failure("upstream_error", "%s answered with a malformed result: %v", name, err))
		}
		f := response(c.ID, capResult(res, g.opts.MaxResultBytes))
		if len(f.Result) > maxResultFrame {
			f = g.failedFrame(s, c, resultTooLarge(name, len(f.Result)))
		}
		a.end(isErrorResult(f.Result))
		return f
	}
	a.end(isErrorResult(raw))
	return serve.Frame{ID: c.ID, Result: raw}
}

// failedFrame is the frame answering fast call c of session s with res,
// a failure the gateway made (fitFailure).
func (g *Gateway) failedFrame(s *session, c callFrame, res *mcp.CallToolResult) serve.Frame {
	return response(c.ID, g.fitFailure(s, c.called(), res))
}

// response is the frame answering id with res.
func response(id string, res *mcp.CallToolResult) serve.Frame {
	raw, err := json.Marshal(res)
	if err != nil {
		raw, _ = json.Marshal(failure("internal", "the result could not be encoded: %v", err))
	}
	return serve.Frame{ID: id, Result: raw}
}

// isErrorResult tells a tool error from a success, for the metrics, by
// the result object's own top-level isError member (not one nested in
// structured content). The result was checked as JSON on its way in
// (jsonrpc.ScanObject over stdio, mcp-go's decoder over HTTP), so it is read
// without checking it again.
func isErrorResult(raw json.RawMessage) bool {
	isError := false
	_ = jsonrpc.ScanCheckedObject(raw, func(name, value []byte) {
		if string(name) == "isError" {
			isError = string(value) == "true" // the last wins, as in a decoder
		}
	})
	return isError
}
