package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/tools/serve"
)

// result returns v both as structuredContent and as its JSON text, its
// strings cleaned and cut (guard.Shown): every result of the gateway's
// own tools is made here, and whatever third-party text it quotes is fit
// to show a model, whether or not its tool cleaned it first.
func result(v any) *mcp.CallToolResult {
	v = guard.Shown(v)
	text, err := json.Marshal(v)
	if err != nil {
		return failure("internal", "the gateway could not encode its result: %v", err)
	}
	return &mcp.CallToolResult{
		Content:              []mcp.Content{mcp.NewTextContent(string(text))},
		StructuredContent:    v,
		RawStructuredContent: text,
	}
}

// maxResultFrame is the most a tool result the gateway writes may encode
// to: the cap on one message (jsonrpc.MaxMessage), which the gateway
// enforces on everyone else, less room for the JSON-RPC envelope and the
// request's id. A registry's answer of 40,000 results made a frame of
// 19 MB.
const maxResultFrame = jsonrpc.MaxMessage - 64<<10

// fitFrame is res, the result of a call of tool, unless it would encode
// to more than maxResultFrame; then a failure saying so, which a model
// can act on.
func fitFrame(tool string, res *mcp.CallToolResult) *mcp.CallToolResult {
	if res == nil {
		return res
	}
	raw, err := json.Marshal(res)
	if err != nil || len(raw) <= maxResultFrame {
		return res // one that does not encode fails where it is encoded
	}
	return resultTooLarge(tool, len(raw))
}

// resultTooLarge is the failure of a result of n bytes, over maxResultFrame.
func resultTooLarge(tool string, n int) *mcp.CallToolResult {
	return failure("size_limit", "the result of %s would be %.1f MiB, over the %d MiB the gateway sends in one message; "+
		"ask for less in one call (a smaller page_size, a narrower query, or fewer items)", tool, float64(n)/(1<<20), jsonrpc.MaxMessage>>20)
}

// failureBody is the structured form of every error result.
type failureBody struct {
	Error string `json:"error" shown:"4000"`
	Code  string `json:"code"`
}

// failure is a tool result with isError set: a sentence that says what
// happened and what to do, and a stable code, as structuredContent and in
// _meta (failureMeta) alike, so that a program reads a failure in one
// place whichever tool failed (fitFailure leaves out the former). The
// sentence is cleaned and cut (guard.Shown), as every result is: what it
// quotes of an entry, a registry or an upstream is theirs.
func failure(code, format string, args ...any) *mcp.CallToolResult {
	f := guard.Shown(failureBody{Error: fmt.Sprintf(format, args...), Code: code}).(failureBody)
	return failed(f.Error, f)
}

// failed is the error result of msg, with f, already shown (guard.Shown),
// as its structured body.
func failed(msg string, f any) *mcp.CallToolResult {
	body, _ := json.Marshal(f)
	return &mcp.CallToolResult{
		Result:               mcp.Result{Meta: mcp.NewMetaFromMap(map[string]any{failureMeta: f})},
		Content:              []mcp.Content{mcp.NewTextContent(msg)},
		StructuredContent:    f,
		RawStructuredContent: body,
		IsError:              true,
	}
}

// authRequiredBody is a failureBody with the flow the user must finish.
type authRequiredBody struct {
	Error            string `json:"error" shown:"12000"`
	Code             string `json:"code"`
	URN              string `json:"urn"`
	AuthorizationURL string `json:"authorization_url" shown:"8000"`
}

// authRequired is the failure of an attach that waits for the user to
// authorize ardgate at the server: the model shows the link, then
// attaches again.
func authRequired(ar *attach.AuthRequired) *mcp.CallToolResult {
	f := guard.Shown(authRequiredBody{Code: "auth_required", URN: ar.URN, AuthorizationURL: ar.URL,
		Error: fmt.Sprintf("%v. Show the user this link, to open in their browser and authorize ardgate there: %s . "+
			"Once they say they have, call attach_resource again with the same urn.", ar, ar.URL)}).(authRequiredBody)
	return failed(f.Error, f)
}

// keysRequiredBody is a failureBody with the page where the user gives
// a package's keys: their names, never a value.
type keysRequiredBody struct {
	Error string   `json:"error" shown:"12000"`
	Code  string   `json:"code"`
	URN   string   `json:"urn"`
	URL   string   `json:"url" shown:"8000"`
	Keys  []string `json:"keys"`
}

// keysRequired is the failure of an attach of a package whose keys the
// user has not given yet: the model shows the link to ardgate's page,
// then attaches again.
func keysRequired(kr *attach.KeysRequired) *mcp.CallToolResult {
	f := guard.Shown(keysRequiredBody{Code: "keys_required", URN: kr.URN, URL: kr.URL, Keys: kr.Keys,
		Error: fmt.Sprintf("%v. Show the user this link, to open in their browser and fill in there (never ask them for the values here): %s . "+
			"Once they say they have, call attach_resource again with the same urn.", kr, kr.URL)}).(keysRequiredBody)
	return failed(f.Error, f)
}

// failureMeta is the _meta member that carries a failure's body
// (failureBody) where structuredContent cannot (fitFailure).
const failureMeta = "ardgate/failure"

// fitFailure is res, a result of a call of the tool called, fit for that
// tool when res is a failure the gateway made itself: a proxied tool
// that declares an outputSchema gets the failure's body in _meta
// (failureMeta), not as structuredContent, which a client checks against
// the schema even in an error result (the TypeScript SDK threw
// "Structured content does not match the tool's output schema", and the
// model never saw the gateway's sentence). Anything else is res.
func (g *Gateway) fitFailure(s *session, called string, res *mcp.CallToolResult) *mcp.CallToolResult {
	if res == nil || !res.IsError || res.StructuredContent == nil || s == nil {
		return res
	}
	tools := s.tools.Load()
	if tools == nil || !(*tools)[called].outputSchema {
		return res
	}
	out := *res
	out.Meta = mcp.NewMetaFromMap(map[string]any{failureMeta: res.StructuredContent})
	out.StructuredContent, out.RawStructuredContent = nil, nil
	return &out
}

// fromError turns an error from attach or registry into an error result
// whose code a client can branch on.
func fromError(err error) *mcp.CallToolResult {
	msg := err.Error()
	var refusal *guard.Refusal
	if auth := (*attach.AuthRequired)(nil); errors.As(err, &auth) {
		return authRequired(auth)
	}
	if keys := (*attach.KeysRequired)(nil); errors.As(err, &keys) {
		return keysRequired(keys)
	}
	if errors.As(err, &refusal) {
		return failure(refusalCode(refusal.Rule), "%s", msg)
	}
	for _, c := range errorCodes {
		if c.is(err) {
			return failure(c.code, c.format, msg)
		}
	}
	return failure("upstream_error", "%s", msg)
}

// refusalCode is the code of a guard's refusal by rule.
func refusalCode(rule string) string {
	switch rule {
	case "rate_limit":
		return "rate_limited"
	case "loop_guard":
		return "loop_guard"
	}
	return "refused"
}

// errorCode is the code of the errors is matches, and the format of
// their message.
type errorCode struct {
	is     func(error) bool
	code   string
	format string
}

// isErr matches the errors that wrap target.
func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// errorCodes are the codes of fromError, tried in order.
var errorCodes = []errorCode{
	{isErr(registry.ErrBadURN), "invalid_arguments", "%s. URNs look like urn:air:<publisher>:<name>; discover_resources returns them."},
	{isErr(attach.ErrUnknownURN), "unknown_urn", "%s. Use discover_resources to find an entry, then attach its urn."},
	{isErr(registry.ErrNotFound), "not_found", "%s"},
	{func(err error) bool {
		return errors.As(err, new(*registry.StatusError)) || errors.Is(err, registry.ErrUnreachable)
	}, "registry_error", "%s"},
	{isErr(registry.ErrTooLarge), "refused", "refused by size_limit: %s"},
	{isErr(registry.ErrInvalidArgument), "invalid_arguments", "%s"},
	{isErr(attach.ErrNotAttachable), "not_attachable", "%s"},
	{isErr(attach.ErrCapReached), "cap_reached", "%s"},
	{isErr(attach.ErrKeyPagesFull), "cap_reached", "%s"},
	{isErr(attach.ErrNameTaken), "name_taken", "%s"},
	{isErr(attach.ErrUpstreamDown), "upstream_down", "%s"},
	{isErr(attach.ErrStartFailed), "start_failed", "%s"},
	{isErr(attach.ErrTimeout), "timeout", "%s"},
	{isErr(attach.ErrNotAttached), "not_attached", "%s"},
	{isErr(attach.ErrPinned), "pinned", "%s"},
	{isErr(attach.ErrUnknownTool), "unknown_tool", "%s. list_attached_resources shows what is attached."},
	{isErr(attach.ErrNotImplemented), "not_implemented", "%s"},
	{isErr(attach.ErrTaskNotFound), "unknown_task", "%s"},
	{isErr(attach.ErrTaskLost), "task_lost", "%s"},
	{isErr(attach.ErrNoAgent), "unknown_agent", "%s"},
	{isErr(attach.ErrTaskFinished), "task_finished", "%s"},
	{isErr(attach.ErrTaskBusy), "task_busy", "%s"},
	{isErr(attach.ErrAnsweredMeanwhile), "answered_meanwhile", "%s"},
	{isErr(attach.ErrOtherContext), "invalid_arguments", "%s"},
	{isErr(attach.ErrStoreFull), "task_store_full", "%s"},
	{isErr(attach.ErrSessionClosed), "session_closed", "%s"},
	// The user declined an authorization the attach asked for.
	{isErr(attach.ErrAuthDeclined), "cancelled", "%s"},
	// Its caller gave up, or its session ended: said as a proxied call's
	// cancellation is, not as the upstream's error.
	{isErr(context.Canceled), "cancelled", "%s"},
}

// decodeArgs reads a tool call's arguments into v strictly: an unknown
// argument or a wrong type is an error that names it.
func decodeArgs(req mcp.CallToolRequest, v any) error {
	raw := req.Params.RawArguments
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		if req.Params.Arguments == nil {
			raw = []byte("{}")
		} else {
			var err error
			if raw, err = json.Marshal(req.Params.Arguments); err != nil {
				return err
			}
		}
	}
	// encoding/json matches "URN" to urn too: a filter in front of the
	// gateway, reading names as they are, would not see the argument
	// that the tool takes.
	if err := caseVariantArg(raw, serve.JSONNames(reflect.TypeOf(v))); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typ) && typ.Field != "":
			return fmt.Errorf("argument %q must be %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
		case errors.As(err, &typ):
			return fmt.Errorf("arguments must be a JSON object, not %s", typ.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("unknown argument %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	return nil
}

// caseVariantArg is the error for raw, a call's arguments, when one of
// them is named as one of names in another case.
func caseVariantArg(raw []byte, names []string) error {
	var err error
	_ = jsonrpc.ScanObject(raw, func(name, _ []byte) {
		if of, ok := jsonrpc.CaseVariant(name, names...); ok && err == nil {
			err = fmt.Errorf("unknown argument %q: argument names are case-sensitive; did you mean %q?", name, of)
		}
	})
	return err
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "int32", "uint", "uint64", "uint32":
		return "an integer"
	case "float64", "float32":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	}
	return goKind
}

// begin starts a gateway tool call: it decodes the arguments into args and
// finds the caller's session; on failure it returns the result to send.
func (g *Gateway) begin(ctx context.Context, req mcp.CallToolRequest, tool string, args any) (*session, *mcp.CallToolResult) {
	if err := decodeArgs(req, args); err != nil {
		if tool == callAttachedTool && strings.HasPrefix(err.Error(), "unknown argument") {
			// A model gives the tool's arguments beside its name.
			err = fmt.Errorf(`%w: the tool's own arguments go in "arguments", as in {"name": "mcp_<name>__<tool>", "arguments": {…}}`, err)
		}
		return nil, invalid(tool, err)
	}
	s := g.current(ctx)
	if s == nil {
		return nil, failure("internal", "no session")
	}
	return s, nil
}

// invalid is the error result for arguments that do not fit.
func invalid(tool string, err error) *mcp.CallToolResult {
	return failure("invalid_arguments", "%s: %v. The tool's input schema lists its arguments.", tool, err)
}
