// Package mcpwire is the client side of the wire to upstream MCP servers:
// the stdio pipe transport mcp-go's client runs on (pipe.go), the poster
// that sends calls to streamable HTTP servers itself (post.go), on
// connections of its own for plain-http servers (http1.go, which peeks
// at idle sockets with MSG_PEEK on Unix), with its listening and
// resumed event streams (listen.go, resume.go), and what bounds every
// upstream's HTTP answers and headers (capped.go, headers.go).
//
// It knows nothing of sessions or attachments: attach builds upstreams
// on it. It imports mcp-go (its client transport, mcp and the server's
// header names), guard and guard/jsonrpc, config (for dial addresses)
// and attach/fault; never attach, which imports it.
package mcpwire
