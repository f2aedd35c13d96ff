package tools

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/tools/serve"
)

// refuseLong answers a frame over the cap, read through and dropped,
// under its id wherever it lay. A notification is dropped unanswered,
// as JSON-RPC has it; what is neither gets an error with id null, as a
// frame that does not parse does.
func (r *stdioReader) refuseLong(long *jsonrpc.LongLine) {
	r.g.log.Warn("the client sent a message over the cap: refused", "bytes", long.Size, "id", string(long.ID))
	if long.Method && long.ID == nil {
		return
	}
	r.refuse(&r.held, serve.Message{Message: jsonrpc.Message{ID: long.ID}}.Refused(serve.TooLarge))
}

// refuse answers a message read from the client over stdio, the answer
// held in held.
func (r *stdioReader) refuse(held *jsonrpc.Batch, msg []byte) {
	if err := r.w.Frame(held, nil, msg, "\n"); err != nil {
		r.g.log.Debug("a refusal was not written", "err", err)
	}
}

// atDoor answers frame, read from the client, if the door refuses it,
// and reports whether the frame is done with (answered, or dropped).
func (r *stdioReader) atDoor(frame []byte, held *jsonrpc.Batch) bool {
	m := serve.ReadMessage(frame)
	if s := r.g.stdio.Load(); s != nil && s.asked.answer(m, r.g.log.Debug) {
		return true // an answer to a request of the gateway's
	}
	msg, drop := m.Refusal()
	if msg == nil && !drop {
		msg = r.g.paramsRefusal(r.g.stdio.Load(), frame)
	}
	if msg != nil {
		r.refuse(held, msg)
	}
	return msg != nil || drop
}

// refuseStateless answers frame, read from a stdio client, when it is a
// request of the stateless protocol (its params' _meta names a version of
// it), with the error that names the versions served, as over HTTP, and
// reports whether it did. mcp-go's stdio server served it, on no session:
// an mcp-go client that chose that protocol never got the pinned servers,
// started at initialize, nor a tools/list sooner than in 10 s.
func (r *stdioReader) refuseStateless(frame []byte, held *jsonrpc.Batch) bool {
	msg := serve.StatelessRefusal(serve.ReadMessage(frame))
	if msg != nil {
		r.refuse(held, msg)
	}
	return msg != nil
}

// opening notes that frame, on its way to the server, opens the session:
// an initialize request.
func (r *stdioReader) opening(frame []byte) {
	if r.opened.Load() {
		return
	}
	if m := serve.ReadMessage(frame); m.Request() && serve.JSONString(m.Method) == string(mcp.MethodInitialize) {
		r.opened.Store(true)
	}
}
