// Package serve holds the serving of MCP to clients over stdio and
// streamable HTTP: the stdio transport, the HTTP handler with its access
// rules, the door that reads each client message before either path
// does, the framing of the fast path's answers, the connections the
// handler serves itself, the bookkeeping of cancelled calls, progress and
// keep-alive on event streams, the event store and resumed streams,
// session ids, and each session's idle clock and reaper. What it serves
// comes to it from a tool surface (the tools package), through
// StdioSurface and HTTPSurface.
//
// Its files are its features:
//   - door.go: what of a JSON-RPC message is read at the door, and the
//     errors that refuse what mcp-go's server would mishandle (batches,
//     ids it cannot answer, members readable two ways, the stateless
//     protocol, requests before initialize);
//   - frame.go: a fast call's answer, written where its result lies;
//   - accept.go: which answers a request's Accept header takes;
//   - access.go: the bearer token, the body cap, and the Origin,
//     DNS-rebinding and CORS checks for browsers;
//   - version.go: the protocol versions served, and requests in others
//     refused;
//   - body.go: reading a POST's body for the door;
//   - http.go: the HTTP handler (HTTP, HTTPSurface): /mcp's guards,
//     the door and the fast path wired to mcp-go's streamable server,
//     the sessions it opens, refuses and ends, its Shutdown, /healthz;
//   - keepalive.go: the kept-alive HTTP/1.1 connections it serves in
//     place after a fast call, and hands back to net/http for the rest;
//   - resume.go: a GET that resumes after events no longer kept, served
//     its stream anew;
//   - relay.go: requests for the client, carried by mcp-go's server as
//     notifications, written as requests;
//   - stdio.go: the stdio transport: the client's frames read, refused at
//     the door, offered to the tool surface (StdioSurface) or sent on to
//     mcp-go's stdio server;
//   - cancel.go: the calls in flight of a session, for notifications/
//     cancelled, and the answers to cancelled requests, dropped;
//   - progress.go: a fast call's answer as an event stream of progress;
//   - heartbeat.go: comments on quiet event streams;
//   - idleclock.go: winding mcp-go's idle clock of sessions the fast path
//     serves (Clocks);
//   - reap.go: ending sessions whose client left without a word;
//   - released.go: letting go of net/http's writers that mcp-go's server
//     keeps;
//   - eventstore.go: the bounded store of events for resumed streams;
//   - session.go: what the transport keeps of a session (its calls in
//     flight, its notifications queued, its signs of life);
//   - sessionids.go: HTTP session ids, with ended ones forgotten.
//
// It may import the standard library, mcp-go, uuid, x/net's httpguts,
// config (for defaults), guard and guard/jsonrpc. It imports neither
// tools, which imports it and holds the tool handlers, nor attach: what
// it serves comes to it as bytes, and what it needs of the tools comes
// through StdioSurface, HTTPSurface and Sessions.
package serve
