package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/tools/serve"
)

// proxy is the handler of one exposed upstream tool.
func (g *Gateway) proxy(name string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.GetRawArguments()
		if raw, ok := args.(json.RawMessage); ok && !jsonrpc.ObjectOrAbsent(raw) {
			return g.fitFailure(g.current(ctx), name, invalid(name, errNotObject)), nil
		}
		return g.forward(ctx, req, name, args), nil
	}
}

// errNotObject refuses a call whose arguments are not an object, as MCP
// has them: the upstream would answer with a validation dump, or worse.
var errNotObject = errors.New(`"arguments" must be an object`)

// forward calls an exposed tool of the caller's session. The upstream's
// result, structuredContent included, comes back untouched; the caller's
// progress token is passed on and the upstream's progress relayed.
func (g *Gateway) forward(ctx context.Context, req mcp.CallToolRequest, name string, args any) *mcp.CallToolResult {
	s := g.current(ctx)
	if s == nil {
		return failure("internal", "no session")
	}
	relay := func(n mcp.JSONRPCNotification) {
		if err := g.notify(ctx, n.Method, n.Params.AdditionalFields); err != nil {
			g.log.Debug("progress not relayed", "err", err)
		}
	}
	res, err := s.att.Call(ctx, name, args, req.Params.Meta, relay)
	if err != nil {
		return g.fitFailure(s, req.Params.Name, g.callFailed(ctx, s, name, err))
	}
	return capResult(res, g.opts.MaxResultBytes)
}

// callFailed is the result of a proxied call that failed, counted against
// its upstream.
func (g *Gateway) callFailed(ctx context.Context, s *session, name string, err error) *mcp.CallToolResult {
	if g.draining.Load() && (ctx.Err() != nil || errors.Is(err, context.Canceled)) {
		// Cut by the end of the drain, not by the client: said as over
		// HTTP, where the session's close says it.
		return failure("shutting_down", "the call to %s was cut: the gateway is shutting down, and the time it gave running calls ran out; reconnect and try again", name)
	}
	if ctx.Err() != nil {
		return failure("cancelled", "the call to %s was cancelled: %s", name, attach.CancelReason(context.Cause(ctx)))
	}
	if errors.Is(err, context.Canceled) { // a fast call over stdio, stopped by the client
		return failure("cancelled", "the call to %s was cancelled: %s", name, attach.CancelReason(err))
	}
	out := g.failed(err)
	var f failureBody
	_ = json.Unmarshal(out.RawStructuredContent, &f)
	// By URN, not by the attachment's name, which a client chooses: each
	// name would be a series of its own, for good.
	urn := "(detached)"
	if a := attachmentOf(s, name); a != nil {
		urn = a.URN
	}
	g.metrics.upstream.WithLabelValues(urn, f.Code).Inc()
	return out
}

// failed is fromError, which also says when the gateway's own shutdown
// ended the session under the call.
func (g *Gateway) failed(err error) *mcp.CallToolResult {
	if errors.Is(err, attach.ErrSessionClosed) && g.draining.Load() {
		return failure("shutting_down", "%v: the gateway is shutting down; reconnect and try again", err)
	}
	return fromError(err)
}

// limit is the middleware every tool call passes: the session's rate
// limit, and for discover and attach the discovery budget and loop guard.
// It also times and counts every call for the metrics, and fails a
// result larger than the gateway sends in one message (fitFrame).
func (g *Gateway) limit(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		s := g.current(ctx)
		a, refused := g.admit(s, req.Params.Name, func() string { return canonicalArgs(req) })
		if refused != nil {
			return g.fitFailure(s, req.Params.Name, refused), nil
		}
		defer func() { a.end(err != nil || res == nil || res.IsError) }()
		res, err = next(ctx, req)
		if fit := fitFrame(req.Params.Name, res); fit != res {
			res = g.fitFailure(s, req.Params.Name, fit)
		}
		return res, err
	}
}

// admit applies what every tool call passes, through the MCP server or the
// fast path alike: no new calls while draining, the session's rate limit,
// and for discover and attach the discovery budget and loop guard (args
// gives the call's canonical arguments for that). A call let through must
// be ended with a.end, which times and counts it; a refused one is
// already counted.
func (g *Gateway) admit(s *session, name string, args func() string) (a admission, refused *mcp.CallToolResult) {
	if g.draining.Load() {
		return admission{}, failure("shutting_down", "the gateway is shutting down; reconnect and try again")
	}
	g.running.Add(1)
	a = admission{g: g, name: name, start: time.Now()}
	if s == nil {
		return a, nil
	}
	a.session = s.att.ID
	if err := s.limiter.AllowCall(); err != nil {
		g.audit("refuse", s.att.ID, name, err)
		a.end(true)
		return admission{}, fromError(err)
	}
	if name == "discover_resources" || name == "attach_resource" {
		if err := s.limiter.AllowDiscovery(name+"\x00"+args(), time.Now()); err != nil {
			g.audit("refuse", s.att.ID, name, err)
			a.end(true)
			return admission{}, fromError(err)
		}
	}
	return a, nil
}

// admission is a call admit let through. It is a value, not a closure, so
// that admitting a call allocates nothing.
type admission struct {
	g       *Gateway
	name    string
	session string // its id, "" for none
	start   time.Time
}

// end times and counts the call, once it has ended, and logs it at debug
// level: a developer reading the log saw nothing of the calls made.
func (a admission) end(failed bool) {
	took := time.Since(a.start)
	a.g.metrics.observe(a.name, took, failed)
	a.g.running.Add(-1)
	if a.g.log.Enabled(context.Background(), slog.LevelDebug) {
		a.g.log.Debug("tool call", "session", a.session, "tool", a.name, "took", took, "failed", failed)
	}
}

// audit writes the structured line kept for every attach, detach and
// refusal: which session, what, the rule that refused, and more, the
// outcome's attributes.
func (g *Gateway) audit(event, session, what string, err error, more ...any) {
	attrs := append([]any{"audit", event, "session", session, "target", what}, more...)
	var r *guard.Refusal
	if errors.As(err, &r) {
		attrs = append(attrs, "rule", r.Rule)
		g.metrics.refused(err)
	}
	if err != nil {
		attrs = append(attrs, "err", err.Error())
		g.log.Warn("audit", attrs...)
		return
	}
	g.log.Info("audit", attrs...)
}

// canonicalArgs renders arguments so that the same request, however its
// JSON was spaced or ordered, gives the same key for the loop guard; so
// do strings that differ only in case and white space, which search and
// attach alike the same ("Fixture ", "fixture").
func canonicalArgs(req mcp.CallToolRequest) string {
	var v any
	if err := json.Unmarshal(req.Params.RawArguments, &v); err != nil {
		v = req.Params.Arguments
	}
	b, _ := json.Marshal(folded(v)) // maps marshal with sorted keys
	return string(b)
}

// folded is a copy of v with its strings lower-cased and their white
// space collapsed.
func folded(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ToLower(strings.Join(strings.Fields(x), " "))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = folded(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = folded(e)
		}
		return out
	}
	return v
}

// capResult keeps a result's content within max bytes: text past the cap
// is cut, other content past it dropped, and a note says what went. A
// structured result's text that is JSON, its copy, is left out whole,
// not cut into JSON no parser reads: structuredContent holds it. A JSON
// text with no structured content is cut, as other text: part of it a
// model still reads. _meta's truncatedMeta says it to a program.
func capResult(res *mcp.CallToolResult, max int) *mcp.CallToolResult {
	size := len(res.RawStructuredContent)
	for _, c := range res.Content {
		size += contentSize(c)
	}
	if size <= max {
		return res
	}
	budget := max - len(res.RawStructuredContent)
	structured := len(res.RawStructuredContent) > 0 && len(res.RawStructuredContent) <= max
	out := *res
	out.Content = nil
	dropped, droppedJSON := 0, false
	for _, c := range res.Content {
		n := contentSize(c)
		tc, text := c.(mcp.TextContent)
		switch {
		case n <= budget:
			out.Content = append(out.Content, c)
			budget -= n
		case text && structured && isJSON(tc.Text):
			dropped += n
			droppedJSON = true
		case text && budget > 0:
			tc.Text = strings.ToValidUTF8(tc.Text[:budget], "")
			out.Content = append(out.Content, tc)
			budget = 0
			dropped += n - len(tc.Text)
		default:
			dropped += n
		}
	}
	note := fmt.Sprintf("[ardgate: this result was %d bytes, over the %d-byte cap (max_result_bytes); %d bytes were cut or left out", size, max, dropped)
	if droppedJSON {
		note += "; its text copy, JSON, was left out whole, not cut: structuredContent holds the result"
	}
	out.Content = append(out.Content, mcp.NewTextContent(note+"]"))
	meta := map[string]any{}
	if res.Meta != nil {
		maps.Copy(meta, res.Meta.AdditionalFields)
	}
	meta[truncatedMeta] = map[string]int{"bytes": size, "max_result_bytes": max, "cut_bytes": dropped}
	out.Meta = mcp.NewMetaFromMap(meta)
	return &out
}

// truncatedMeta is the _meta member saying a result was cut to the cap:
// the note in its content is for a model, this for a program.
const truncatedMeta = "ardgate/truncated"

// isJSON says whether text is a JSON object or array.
func isJSON(text string) bool {
	t := strings.TrimSpace(text)
	return len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t))
}

func contentSize(c mcp.Content) int {
	switch t := c.(type) {
	case mcp.TextContent:
		return len(t.Text)
	case mcp.ImageContent:
		return len(t.Data)
	case mcp.AudioContent:
		return len(t.Data)
	}
	b, _ := json.Marshal(c)
	return len(b)
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

// callAttachedTool is the name of the gateway's tool that calls any
// attached tool, listed or deferred.
const callAttachedTool = serve.ThroughTool

func (g *Gateway) callTool() server.ServerTool {
	return newTool(callAttachedTool, "Call attached tool",
		"Call a tool of an attached resource by its exposed name. Use it when attached tools do not show up in your tool list.",
		callSchema, hints{destructive: true, openWorld: true}, g.call)
}

func (g *Gateway) call(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	s, fail := g.begin(ctx, req, callAttachedTool, &a)
	if fail != nil {
		return fail, nil
	}
	if a.Name == "" {
		return invalid(callAttachedTool, errors.New(`"name" is required`)), nil
	}
	if !jsonrpc.ObjectOrAbsent(a.Arguments) {
		return invalid(callAttachedTool, errNotObject), nil
	}
	if att := g.starting(s, a.Name); att != nil {
		s.att.WaitStarted(ctx, att, g.opts.PinnedListWait)
	}
	if why, code := g.whyNoTool(s, a.Name, false); why != "" {
		return failure(code, "%s", why), nil
	}
	var args any
	if len(a.Arguments) > 0 {
		args = a.Arguments
	}
	return g.forward(ctx, req, a.Name, args), nil
}
