package tools

import (
	"bytes"
	"math"
	"net/http"
	"strconv"

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

// batchRefusal answers a batch, and the others a request with an id
// refused (idRefusal): one error with a null id each, as JSON-RPC answers
// a message it cannot take.
var (
	batchRefusal  = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not supported: send each request and notification as a message of its own (MCP 2025-06-18 and later have no batches)"}}`)
	nullIDRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request's id must be a string or an integer, not null: a request with a null id cannot be answered"}}`)
	idTypeRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request's id must be a string or an integer"}}`)
	bigIDRefusal  = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request's integer id must lie within ±9007199254740992 (2^53), or the answer's id would lose digits: send a larger one as a string"}}`)
)

// isBatch reports whether frame is a JSON array, by its first byte past
// white space.
func isBatch(frame []byte) bool {
	frame = bytes.TrimLeft(frame, " \t\r\n")
	return len(frame) > 0 && frame[0] == '['
}

// idRefusal returns the error that answers a request whose id, raw JSON,
// the gateway refuses, or nil; method is nil for a message that is not a
// request.
func idRefusal(id, method []byte) []byte {
	if id == nil || method == nil {
		return nil
	}
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

// idAndMethod reads the id and the method of frame, a JSON-RPC message,
// as raw JSON, nil where absent; ok is false when frame is not a JSON
// object.
func idAndMethod(frame []byte) (id, method []byte, ok bool) {
	err := guard.ScanObject(frame, func(name, value []byte) {
		switch string(name) {
		case "id":
			id = value
		case "method":
			method = value
		}
	})
	return id, method, err == nil
}

// tooLargeRefusal answers a POST whose body is over the message cap.
var tooLargeRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"the message is larger than the gateway's 10 MiB cap"}}`)

// refuse answers a message posted over HTTP that the gateway refuses with
// the status code and the error; mcp-go answers a body it cannot read
// with 400.
func refuse(w http.ResponseWriter, code int, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(msg)
}

// refuse answers a message read from the client over stdio.
func (r *stdioReader) refuse(msg []byte) {
	if err := r.w.Frame(&r.held, nil, msg, "\n"); err != nil {
		r.g.log.Debug("a refusal was not written", "err", err)
	}
}

// refusedID answers frame, read from the client, if its id is refused
// (idRefusal), and reports whether it did.
func (r *stdioReader) refusedID(frame []byte) bool {
	id, method, _ := idAndMethod(frame)
	msg := idRefusal(id, method)
	if msg != nil {
		r.refuse(msg)
	}
	return msg != nil
}
