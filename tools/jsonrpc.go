package tools

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/guard"
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
//     answers first, client_requests.go): dropped, where mcp-go answered
//     it, and JSON-RPC answers no response.

// batchRefusal answers a batch, and the others a request with an id
// refused (idRefusal): one error with a null id each, as JSON-RPC answers
// a message it cannot take.
var (
	batchRefusal  = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not supported: send each request and notification as a message of its own (MCP 2025-06-18 and later have no batches)"}}`)
	nullIDRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request's id must be a string or an integer, not null: a request with a null id cannot be answered"}}`)
	idTypeRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request's id must be a string or an integer"}}`)
	bigIDRefusal  = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request's integer id must lie within ±9007199254740992 (2^53), or the answer's id would lose digits: send a larger one as a string"}}`)
	// notJSONRefusal answers, over HTTP with no session id, a body that is
	// no JSON object, as mcp-go's server answers one with a session id.
	notJSONRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"request body is not valid json: send one JSON-RPC message, a JSON object"}}`)
)

// isBatch reports whether frame is a JSON array, by its first byte past
// white space.
func isBatch(frame []byte) bool {
	frame = bytes.TrimLeft(frame, " \t\r\n")
	return len(frame) > 0 && frame[0] == '['
}

// message is what the gateway reads of a JSON-RPC message at the door.
type message struct {
	guard.Message
	object bool // the frame is a JSON object
	// notObject: the frame is JSON, but no object ("str", 42, null), an
	// invalid request, not a parse error as mcp-go's server said.
	notObject bool
}

// readMessage reads frame's members that the door checks.
func readMessage(frame []byte) message {
	m, err := guard.ReadMessage(frame)
	return message{Message: m, object: err == nil, notObject: err != nil && !guard.IsObject(frame) && json.Valid(frame)}
}

// request reports whether m is a request: a method and an id.
func (m message) request() bool { return m.Method != nil && m.ID != nil }

// refusal returns the error that answers m at the door, or nil; drop is
// set for a message to take no further and leave unanswered.
func (m message) refusal() (msg []byte, drop bool) {
	switch {
	case m.notObject:
		return m.refused("a JSON-RPC message is an object"), false
	case !m.object:
		return nil, false // the server answers it with a parse error
	case m.Method != nil && m.Method[0] != '"':
		return m.refused("a request's method must be a string"), false
	case m.request():
		if msg := idRefusal(m.ID); msg != nil {
			return msg, false
		}
		if !guard.ObjectOrAbsent(m.Params) {
			// mcp-go's server said "json: cannot unmarshal string into
			// Go struct field CallToolRequest.params of type mcp.params".
			return m.refusedAs(mcp.INVALID_PARAMS, "a request's params must be an object"), false
		}
		return nil, false
	case m.ID != nil && m.Result == nil && m.Error != nil:
		// An error answering no request of the gateway's (those are
		// taken before, clientCalls): mcp-go's server answered it with
		// "Method not found", and JSON-RPC answers no response.
		return nil, true
	case m.ID != nil && m.Result == nil:
		return m.refused("a message with an id must have a method (a request), or a result or an error (a response)"), false
	case m.Method == nil && m.ID == nil && m.Result == nil && m.Error == nil:
		// Neither a request, a notification nor a response: went
		// unanswered, where JSON-RPC answers an invalid request.
		return m.refused("a message must have a method (a request or a notification), or an id with a result or an error (a response)"), false
	}
	return nil, false
}

// refused is an invalid-request error answering m, with m's id when it is
// one a client can match.
func (m message) refused(why string) []byte { return m.refusedAs(mcp.INVALID_REQUEST, why) }

// refusedAs is refused with another JSON-RPC error code.
func (m message) refusedAs(code int, why string) []byte {
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
		return nullIDRefusal
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		const exact = 1 << 53 // the integers a float64 holds exactly
		if n, err := strconv.ParseInt(string(id), 10, 64); err == nil {
			if n < -exact || n > exact {
				return bigIDRefusal
			}
			return nil
		}
		if f, err := strconv.ParseFloat(string(id), 64); err != nil || math.Abs(f) > exact {
			return bigIDRefusal // an integer too long for int64, or a float past 2^53
		}
		return nil
	}
	return idTypeRefusal
}

// tooLarge says why a message over the cap is refused, and
// tooLargeRefusal answers a POST whose body is.
const tooLarge = "the message is larger than the gateway's 10 MiB cap"

var tooLargeRefusal = message{}.refused(tooLarge)

// refuse answers a message posted over HTTP that the gateway refuses with
// the status code and the error; mcp-go answers a body it cannot read
// with 400.
func refuse(w http.ResponseWriter, code int, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(msg)
}

// refuseLong answers a frame over the cap, read through and dropped,
// under its id wherever it lay. A notification is dropped unanswered,
// as JSON-RPC has it; what is neither gets an error with id null, as a
// frame that does not parse does.
func (r *stdioReader) refuseLong(long *guard.LongLine) {
	r.g.log.Warn("the client sent a message over the cap: refused", "bytes", long.Size, "id", string(long.ID))
	if long.Method && long.ID == nil {
		return
	}
	r.refuse(&r.held, message{Message: guard.Message{ID: long.ID}}.refused(tooLarge))
}

// refuse answers a message read from the client over stdio, the answer
// held in held.
func (r *stdioReader) refuse(held *guard.Batch, msg []byte) {
	if err := r.w.Frame(held, nil, msg, "\n"); err != nil {
		r.g.log.Debug("a refusal was not written", "err", err)
	}
}

// atDoor answers frame, read from the client, if the door refuses it,
// and reports whether the frame is done with (answered, or dropped).
func (r *stdioReader) atDoor(frame []byte, held *guard.Batch) bool {
	m := readMessage(frame)
	if s := r.g.stdio.Load(); s != nil && s.asked.answer(m, r.g.log.Debug) {
		return true // an answer to a request of the gateway's
	}
	msg, drop := m.refusal()
	if msg == nil && !drop {
		msg = r.g.paramsRefusal(r.g.stdio.Load(), frame)
	}
	if msg != nil {
		r.refuse(held, msg)
	}
	return msg != nil || drop
}

// sessionVersions are the protocol versions the gateway serves: those
// with sessions. The stateless protocol (2026-07-28) has none to hang a
// session's attachments, pinned servers and tasks on; its clients learn
// so (server/discover, or an error naming the versions served) and
// negotiate down.
func sessionVersions() []string {
	var out []string
	for _, v := range mcp.ValidProtocolVersions {
		if !mcp.IsModernProtocol(v) {
			out = append(out, v)
		}
	}
	return out
}

// metaKeyProtocolVersion is the _meta key that makes a request one of
// the stateless protocol.
var metaKeyProtocolVersion = []byte(mcp.MetaKeyProtocolVersion)

// refuseStateless answers frame, read from a stdio client, when it is a
// request of the stateless protocol (its params' _meta names a version of
// it), with the error that names the versions served, as over HTTP, and
// reports whether it did. mcp-go's stdio server served it, on no session:
// an mcp-go client that chose that protocol never got the pinned servers,
// started at initialize, nor a tools/list sooner than in 10 s.
func (r *stdioReader) refuseStateless(frame []byte, held *guard.Batch) bool {
	msg := statelessRefusal(readMessage(frame))
	if msg != nil {
		r.refuse(held, msg)
	}
	return msg != nil
}

// statelessRefusal is the error answering m when it is a request of the
// stateless protocol, or nil.
func statelessRefusal(m message) []byte {
	if !m.request() || idRefusal(m.ID) != nil || !guard.IsObject(m.Params) {
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
	e := mcp.UnsupportedProtocolVersionError{Version: v, Supported: sessionVersions()}.JSONRPCError()
	e.ID = mcp.NewRequestId(json.RawMessage(m.ID)) // as the client sent it
	b, err := json.Marshal(e)
	if err != nil {
		return nil
	}
	return b
}
