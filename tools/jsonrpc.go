package tools

import (
	"bytes"
	"net/http"

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

// batchRefusal answers a batch, and nullIDRefusal a request with a null
// id: one error with a null id each, as JSON-RPC answers a message it
// cannot take.
var (
	batchRefusal  = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not supported: send each request and notification as a message of its own (MCP 2025-06-18 and later have no batches)"}}`)
	nullIDRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a request's id must be a string or an integer, not null: a request with a null id cannot be answered"}}`)
)

// isBatch reports whether frame is a JSON array, by its first byte past
// white space.
func isBatch(frame []byte) bool {
	frame = bytes.TrimLeft(frame, " \t\r\n")
	return len(frame) > 0 && frame[0] == '['
}

var null = []byte("null")

// hasNullID reports whether frame is a request whose id is null. Frames
// without "null" anywhere in them are not read.
func hasNullID(frame []byte) bool {
	if !bytes.Contains(frame, null) {
		return false
	}
	id, method, ok := idAndMethod(frame)
	return ok && method != nil && bytes.Equal(id, null)
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
