// Package serve holds the pieces of serving MCP to clients over stdio and
// streamable HTTP that need nothing of the tool surface: the door that
// reads each client message before either path does, the framing of the
// fast path's answers, the bookkeeping of cancelled calls, progress and
// keep-alive on event streams, the event store and the session ids.
//
// Its files are its features:
//   - door.go: what of a JSON-RPC message is read at the door, and the
//     errors that refuse what mcp-go's server would mishandle (batches,
//     ids it cannot answer, members readable two ways, the stateless
//     protocol, requests before initialize);
//   - frame.go: a fast call's answer, written where its result lies;
//   - accept.go: which answers a request's Accept header takes;
//   - origin.go: the Origin, DNS-rebinding and CORS checks for browsers;
//   - body.go: reading a POST's body for the door;
//   - stdio.go: a stdio client's frames, and the calls a stdio session
//     waits for before it ends;
//   - cancel.go: the calls in flight of a session, for notifications/
//     cancelled, and the answers to cancelled requests, dropped;
//   - progress.go: a fast call's answer as an event stream of progress;
//   - heartbeat.go: comments on quiet event streams;
//   - released.go: letting go of net/http's writers that mcp-go's server
//     keeps;
//   - eventstore.go: the bounded store of events for resumed streams;
//   - sessionids.go: HTTP session ids, with ended ones forgotten.
//
// It may import the standard library, mcp-go, guard and guard/jsonrpc. It
// imports neither tools, which imports it and holds the tool handlers,
// nor attach: what it serves comes to it as bytes.
package serve
