package serve

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// JSON-RPC that mcp-go's server would mishandle is answered at the door,
// with a sentence, on both transports.
//
//   - A batch, an array of messages in one frame or one POST. MCP
//     2025-06-18 removed them. 2025-03-26, which the gateway still offers
//     to older clients, had servers accept them, but mcp-go's server takes
//     one message at a time: it called a batch "not valid json" over HTTP
//     and "Failed to parse message" over stdio, which sent a client
//     looking for a syntax error that is not there.
//   - A request whose id is null. MCP forbids it (JSON-RPC only
//     discourages it), and mcp-go takes such a request for a notification
//     and never answers: the client would wait for good.
//   - A request whose id is neither a string nor a number (true, an
//     object), which MCP and JSON-RPC forbid, or an integer past 2^53,
//     which mcp-go reads as a float64 and answers with other digits
//     (9007199254740993 came back as 9007199254740992), so that the
//     client could not match the answer. The fast path, which copies ids
//     as they came, takes what it takes before these checks.
//   - A method that is not a string (mcp-go: a parse error, id null), and
//     a message with an id but no method, result or error (mcp-go:
//     "Method  not found"): an error with the message's id.
//   - An error response from the client to no request of the gateway's
//     (it asks its clients only what attached servers ask, and takes the
//     answers first, in package tools): dropped, where mcp-go answered
//     it, and JSON-RPC answers no response.

// BatchRefusal answers a batch, and the others a request with an id
// refused (idRefusal): one error with a null id each, as JSON-RPC answers
// a message it cannot take.
var (
	BatchRefusal  = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not supported: send each request and notification as a message of its own (MCP 2025-06-18 and later have no batches)"}}`)
	NullIDRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request's id must be a string or an integer, not null: a request with a null id cannot be answered"}}`)
	IDTypeRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request's id must be a string or an integer"}}`)
	BigIDRefusal  = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request's integer id must lie within ±9007199254740992 (2^53), or the answer's id would lose digits: send a larger one as a string"}}`)
	// NotJSONRefusal answers, over HTTP with no session id, a body that is
	// no JSON object, as mcp-go's server answers one with a session id.
	NotJSONRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"request body is not valid json: send one JSON-RPC message, a JSON object"}}`)
)

// isBatch reports whether frame is a JSON array, by its first byte past
// white space.
func isBatch(frame []byte) bool {
	frame = bytes.TrimLeft(frame, " \t\r\n")
	return len(frame) > 0 && frame[0] == '['
}

// Message is what the gateway reads of a JSON-RPC message at the door.
type Message struct {
	jsonrpc.Message
	Object bool // the frame is a JSON object
	// notObject: the frame is JSON, but no object ("str", 42, null), an
	// invalid request, not a parse error as mcp-go's server said.
	notObject bool
}

// ReadMessage reads frame's members that the door checks.
func ReadMessage(frame []byte) Message {
	m, err := jsonrpc.ReadMessage(frame)
	return Message{Message: m, Object: err == nil, notObject: err != nil && !jsonrpc.IsObject(frame) && json.Valid(frame)}
}

// Request reports whether m is a request: a method and an id.
func (m Message) Request() bool { return m.Method != nil && m.ID != nil }

// Refusal returns the error that answers m at the door, or nil; drop is
// set for a message to take no further and leave unanswered.
func (m Message) Refusal() (msg []byte, drop bool) {
	switch {
	case m.notObject:
		return m.Refused("a JSON-RPC message is an object"), false
	case !m.Object:
		return nil, false // the server answers it with a parse error
	case m.Method != nil && m.Method[0] != '"':
		return m.Refused("a request's method must be a string"), false
	case m.Request():
		if msg := idRefusal(m.ID); msg != nil {
			return msg, false
		}
		if !jsonrpc.ObjectOrAbsent(m.Params) {
			// mcp-go's server said "json: cannot unmarshal string into
			// Go struct field CallToolRequest.params of type mcp.params".
			return m.RefusedAs(mcp.INVALID_PARAMS, "a request's params must be an object"), false
		}
		return nil, false
	case m.ID != nil && m.Result == nil && m.Error != nil:
		// An error answering no request of the gateway's (those are
		// taken before, clientCalls): mcp-go's server answered it with
		// "Method not found", and JSON-RPC answers no response.
		return nil, true
	case m.ID != nil && m.Result == nil:
		return m.Refused("a message with an id must have a method (a request), or a result or an error (a response)"), false
	case m.Method == nil && m.ID == nil && m.Result == nil && m.Error == nil:
		// Neither a request, a notification nor a response: went
		// unanswered, where JSON-RPC answers an invalid request.
		return m.Refused("a message must have a method (a request or a notification), or an id with a result or an error (a response)"), false
	}
	return nil, false
}

// Refused is an invalid-request error answering m, with m's id when it is
// one a client can match.
func (m Message) Refused(why string) []byte { return m.RefusedAs(mcp.INVALID_REQUEST, why) }

// RefusedAs is refused with another JSON-RPC error code.
func (m Message) RefusedAs(code int, why string) []byte {
	id := []byte("null")
	if m.ID != nil && idRefusal(m.ID) == nil {
		id = m.ID
	}
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	// A tool's name in why may hold anything; "<" is left as it is.
	text := bytes.NewBuffer(b)
	enc := json.NewEncoder(text)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(why)
	return append(bytes.TrimSuffix(text.Bytes(), []byte("\n")), "}}"...)
}

// idRefusal returns the error that answers a request whose id, raw JSON,
// the gateway refuses, or nil.
func idRefusal(id []byte) []byte {
	switch id[0] {
	case '"':
		return nil
	case 'n':
		return NullIDRefusal
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		const exact = 1 << 53 // the integers a float64 holds exactly
		if n, err := strconv.ParseInt(string(id), 10, 64); err == nil {
			if n < -exact || n > exact {
				return BigIDRefusal
			}
			return nil
		}
		if f, err := strconv.ParseFloat(string(id), 64); err != nil || math.Abs(f) > exact {
			return BigIDRefusal // an integer too long for int64, or a float past 2^53
		}
		return nil
	}
	return IDTypeRefusal
}

// tooLarge says why a message over the cap is refused, and
// TooLargeRefusal answers a POST whose body is.
const tooLarge = "the message is larger than the gateway's 10 MiB cap"

var TooLargeRefusal = Message{}.Refused(tooLarge)

// Refuse answers a message posted over HTTP that the gateway refuses with
// the status code and the error; mcp-go answers a body it cannot read
// with 400.
func Refuse(w http.ResponseWriter, code int, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(msg)
}

// metaKeyProtocolVersion is the _meta key that makes a request one of
// the stateless protocol.
var metaKeyProtocolVersion = []byte(mcp.MetaKeyProtocolVersion)

// statelessRefusal is the error answering m when it is a request of the
// stateless protocol, or nil.
func statelessRefusal(m Message) []byte {
	if !m.Request() || idRefusal(m.ID) != nil || !jsonrpc.IsObject(m.Params) {
		return nil
	}
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return nil
	}
	v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	if !mcp.IsModernProtocol(v) {
		return nil
	}
	e := mcp.UnsupportedProtocolVersionError{Version: v, Supported: SessionVersions()}.JSONRPCError()
	e.ID = mcp.NewRequestId(json.RawMessage(m.ID)) // as the client sent it
	b, err := json.Marshal(e)
	if err != nil {
		return nil
	}
	return b
}

// A client's frame is read strictly, at the door of each transport,
// before the fast path or mcp-go's server sees it (memberRefusal).
// Member names are case-sensitive in JSON-RPC, but mcp-go's server reads
// them with encoding/json, which takes "Params" for params, and the last
// of two members of one name, where the gateway's own reading (and most
// filters in front of it) took the exact name, or the first. A frame
// whose members two readers could read two ways is refused, so that what
// a filter or an audit log in front of the gateway reads is what runs.

// ThroughTool is the name of the gateway's tool that calls any attached
// tool: the door reads its arguments' name and arguments strictly too.
const ThroughTool = "call_attached_tool"

// FrameRefusal is the error answering frame, a client's message, at the
// door of either transport, before the fast path or the server sees it:
// a batch, or a frame whose members could be read two ways
// (memberRefusal); nil for any other.
func FrameRefusal(frame []byte) []byte {
	if isBatch(frame) {
		return BatchRefusal
	}
	return memberRefusal(frame)
}

// beforeInitialize is the error answering frame, a client's message over
// stdio before it has sent initialize, when it is a request that may not
// come first: anything but initialize, ping and server/discover (which
// mcp-go's clients send first), as the spec has it. Served, a call of a
// pinned server's tool waited for a start that never came, for good. A
// request of the stateless protocol is told the versions served instead
// (statelessRefusal), as at any time, so that its client negotiates
// down. Notifications and responses go on.
func beforeInitialize(frame []byte) []byte {
	m := ReadMessage(frame)
	if !m.Request() {
		return nil
	}
	if msg := statelessRefusal(m); msg != nil {
		return msg
	}
	switch mcp.MCPMethod(JSONString(m.Method)) {
	case mcp.MethodInitialize, mcp.MethodPing, mcp.MethodServerDiscover:
		return nil
	}
	return m.Refused("the session is not initialized: send initialize first, and notifications/initialized once it is answered; before that only ping is answered")
}

// memberRefusal is the error answering frame, a client's message, when
// an object in it, at any depth, names a member twice, or it names in
// another case a member that the gateway or mcp-go's server reads: at
// the top, JSON-RPC's; in params, the method's as mcp-go decodes them;
// in params._meta, the keys the gateway reads; in call_attached_tool's
// arguments, name and arguments. nil for any other frame, one that is
// no JSON object too (the door's other checks answer it).
func memberRefusal(frame []byte) []byte {
	m, err := jsonrpc.ReadFrame(frame)
	if err == nil {
		err = paramsVariant(m)
	}
	e, ok := err.(*jsonrpc.MemberError) // as ReadFrame returns it, unwrapped
	if !ok {
		return nil
	}
	return Message{Message: jsonrpc.Message{ID: safeID(frame, e)}}.Refused(memberWhy(e))
}

// memberWhy says why a frame was refused for e.
func memberWhy(e *jsonrpc.MemberError) string {
	path := strings.Join(e.Path, ".")
	if e.Of != "" {
		return fmt.Sprintf("the message has a member %q, which is %q in another case: member names are case-sensitive; send each as the spec spells it, once", path, e.Of)
	}
	return fmt.Sprintf("the message names the member %q twice: readers differ on which one counts; send each member once", path)
}

// safeID is the id of frame, refused for e, when it can be read one way:
// a request's, named exactly and once, and not what e is about; nil
// otherwise.
func safeID(frame []byte, e *jsonrpc.MemberError) []byte {
	if e.Path[0] == "id" || e.Of == "id" {
		return nil
	}
	var id []byte
	ids, method := 0, false
	_ = jsonrpc.ScanCheckedObject(frame, func(name, value []byte) { // checked by ReadFrame
		switch {
		case string(name) == "id":
			id = value
			ids++
		case bytes.EqualFold(name, []byte("id")):
			ids++
		case string(name) == "method":
			method = true
		}
	})
	if ids != 1 || !method {
		return nil
	}
	return id
}

// paramsVariant is the *jsonrpc.MemberError of m's params when they name
// in another case a member that is read by name (memberRefusal).
func paramsVariant(m jsonrpc.Message) error {
	if !jsonrpc.IsObject(m.Params) {
		return nil
	}
	method := unquoted(m.Method)
	names, ok := paramNames[string(method)]
	if !ok {
		names = metaOnly
	}
	var meta, name, args []byte
	var err error
	_ = jsonrpc.ScanCheckedObject(m.Params, func(n, value []byte) { // checked by ReadFrame
		switch string(n) {
		case "_meta":
			meta = value
		case "name":
			name = value
		case "arguments":
			args = value
		}
		err = cmp.Or(err, variant(n, names, "params"))
	})
	if err == nil && jsonrpc.IsObject(meta) {
		err = variantIn(meta, metaNames, "params", "_meta")
	}
	if err == nil && string(method) == string(mcp.MethodToolsCall) && string(unquoted(name)) == ThroughTool && jsonrpc.IsObject(args) {
		err = variantIn(args, throughNames, "params", "arguments")
	}
	return err
}

// variantIn is the *jsonrpc.MemberError of obj, a checked object at path,
// when it names one of names in another case.
func variantIn(obj []byte, names []string, path ...string) error {
	var err error
	_ = jsonrpc.ScanCheckedObject(obj, func(n, _ []byte) {
		err = cmp.Or(err, variant(n, names, path...))
	})
	return err
}

// variant is the *jsonrpc.MemberError of name, a member's at path, when it
// is one of names in another case.
func variant(name []byte, names []string, path ...string) error {
	of, ok := jsonrpc.CaseVariant(name, names...)
	if !ok {
		return nil
	}
	return &jsonrpc.MemberError{Path: append(append([]string(nil), path...), string(name)), Of: of}
}

// unquoted is raw, a JSON string, without its quotes, decoded only when
// it has escapes; nil when it is no string.
func unquoted(raw []byte) []byte {
	if len(raw) < 2 || raw[0] != '"' {
		return nil
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	return []byte(JSONString(raw))
}

// metaOnly are the params of a method mcp-go decodes none of, and
// throughNames the arguments of call_attached_tool that the gateway
// reads.
var metaOnly, throughNames = []string{"_meta"}, []string{"name", "arguments"}

// metaNames are the keys of a request's _meta that the gateway reads.
var metaNames = []string{"progressToken", "traceparent", "tracestate", mcp.MetaKeyProtocolVersion}

// paramNames are, by method, the members of its params that mcp-go's
// server decodes, into its structs, by name in any case; a method of none
// of these has only _meta.
var paramNames = func() map[string][]string {
	out := map[string][]string{}
	for method, req := range map[mcp.MCPMethod]any{
		mcp.MethodInitialize: mcp.InitializeRequest{}, mcp.MethodPing: mcp.PingRequest{},
		mcp.MethodServerDiscover: mcp.DiscoverRequest{}, mcp.MethodSetLogLevel: mcp.SetLevelRequest{},
		mcp.MethodResourcesList: mcp.ListResourcesRequest{}, mcp.MethodResourcesTemplatesList: mcp.ListResourceTemplatesRequest{},
		mcp.MethodResourcesRead: mcp.ReadResourceRequest{}, mcp.MethodResourcesSubscribe: mcp.SubscribeRequest{},
		mcp.MethodResourcesUnsubscribe: mcp.UnsubscribeRequest{}, mcp.MethodPromptsList: mcp.ListPromptsRequest{},
		mcp.MethodPromptsGet: mcp.GetPromptRequest{}, mcp.MethodToolsList: mcp.ListToolsRequest{},
		mcp.MethodToolsCall: mcp.CallToolRequest{}, mcp.MethodTasksGet: mcp.GetTaskRequest{},
		mcp.MethodTasksList: mcp.ListTasksRequest{}, mcp.MethodTasksResult: mcp.TaskResultRequest{},
		mcp.MethodTasksCancel: mcp.CancelTaskRequest{}, mcp.MethodCompletionComplete: mcp.CompleteRequest{},
		mcp.MethodSubscriptionsListen:   mcp.SubscriptionsListenRequest{},
		mcp.MethodNotificationCancelled: mcp.CancelledNotification{}, mcp.MethodNotificationProgress: mcp.ProgressNotification{},
	} {
		f, _ := reflect.TypeOf(req).FieldByName("Params")
		names := JSONNames(f.Type)
		if !slices.Contains(names, "_meta") {
			names = append(names, "_meta")
		}
		out[string(method)] = names
	}
	return out
}()

// JSONNames are the names encoding/json gives the fields of t, a struct
// (or a pointer to one), those of embedded structs among them.
func JSONNames(t reflect.Type) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
		case tag == "" && f.Anonymous:
			names = append(names, JSONNames(f.Type)...)
		case tag != "":
			names = append(names, tag)
		case f.IsExported():
			names = append(names, f.Name)
		}
	}
	return names
}

// JSONString is the string value is, or "" when it is not a string.
func JSONString(value []byte) string {
	var s string
	if len(value) == 0 || value[0] != '"' || json.Unmarshal(value, &s) != nil {
		return ""
	}
	return s
}
