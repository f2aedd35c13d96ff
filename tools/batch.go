package tools

import (
	"bytes"
	"net/http"
)

// JSON-RPC batches, an array of messages in one frame or one POST, are
// refused with a sentence. MCP 2025-06-18 removed them. 2025-03-26, which
// the gateway still offers to older clients, had servers accept them, but
// mcp-go's server takes one message at a time: it called a batch "not
// valid json" over HTTP and "Failed to parse message" over stdio, which
// sent a client looking for a syntax error that is not there.

// batchRefusal answers a batch: one error with a null id, as JSON-RPC
// answers a batch it cannot take.
var batchRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not supported: send each request and notification as a message of its own (MCP 2025-06-18 and later have no batches)"}}`)

// isBatch reports whether frame is a JSON array, by its first byte past
// white space.
func isBatch(frame []byte) bool {
	frame = bytes.TrimLeft(frame, " \t\r\n")
	return len(frame) > 0 && frame[0] == '['
}

// refuseBatch answers a batch posted over HTTP as mcp-go answers a body it
// cannot read: 400, with the error.
func refuseBatch(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(batchRefusal)
}

// refuseBatch answers a batch read from the client over stdio.
func (r *stdioReader) refuseBatch() {
	if err := r.w.Frame(&r.held, nil, batchRefusal, "\n"); err != nil {
		r.g.log.Debug("the refusal of a batch was not written", "err", err)
	}
}
