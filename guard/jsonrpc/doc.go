// Package jsonrpc reads, scans and writes JSON-RPC 2.0 frames, within
// bounds, for both sides of the gateway: the clients it serves (tools) and
// the upstream servers it attaches (attach).
//
// Its files are its features:
//   - frames.go: the size cap of one message, a line reader that skips
//     over-long lines, and a frame writer with a bounded backlog;
//   - longline.go: the id of a line too long to hold, for its refusal;
//   - contentlength.go: Content-Length framing, as LSP frames messages,
//     read and written as lines;
//   - object.go: a strict scanner of JSON objects and of a frame's routing
//     members, which refuses what JSON readers disagree on.
//
// It imports only the standard library and golang.org/x/sys, so that every
// package may use it.
package jsonrpc
