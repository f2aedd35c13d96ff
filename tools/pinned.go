package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/tools/serve"
)

// A session's pinned servers start in the background, which for an npm
// package can take seconds. A client's first requests wait for them, up
// to PinnedListWait from the session's start: its first tools/list,
// which many clients never take again (waitPinned), and a call of a tool
// of a server still starting, which a client that knows the tool's name
// sends right after initialize (a script, an agent with tool names from
// an earlier run); it was refused "still starting". Prompts and
// resources wait likewise (offers.go).

// waitPinned counts a tools/list the server answers, and holds it while
// the session's pinned servers are still starting. A server slower than
// PinnedListWait is announced with tools/list_changed once it is up.
func (g *Gateway) waitPinned(ctx context.Context, _ any, _ *mcp.ListToolsRequest) {
	g.metrics.serverLists.Inc()
	if s := g.current(ctx); s != nil {
		s.att.WaitPinned(ctx, g.opts.PinnedListWait)
	}
}

// starting returns the pinned attachment of session s that would serve
// the tool called name when it is still starting and may be waited for;
// nil when there is none to wait for.
func (g *Gateway) starting(s *session, name string) *attach.Attachment {
	att := attachmentOf(s, name)
	if att == nil || !s.att.Starting(att, g.opts.PinnedListWait) {
		return nil
	}
	return att
}

// startingFor returns the request id of frame and the attachment it waits
// for when frame is a tools/call of a tool of a pinned server still
// starting (starting); nil when it is not.
func (g *Gateway) startingFor(s *session, frame []byte) (id []byte, att *attach.Attachment) {
	// Asked of every call posted over HTTP: the frame is read only in a
	// session's first moments, while a pinned server is still starting.
	if s == nil || !s.att.PinnedPending(g.opts.PinnedListWait) || !bytes.Contains(frame, toolsCallMethod) {
		return nil, nil
	}
	id, method, params, ok := request(frame)
	if !ok || !bytes.Equal(method, toolsCallMethod) || !jsonrpc.IsObject(params) {
		return nil, nil
	}
	raw, _, _, _ := callMembers(params)
	var name string
	if raw == nil || json.Unmarshal(raw, &name) != nil {
		return nil, nil
	}
	return id, g.starting(s, name)
}

// startingCall takes line, a tools/call over stdio of a tool of a pinned
// server still starting, and reports whether it did: on a goroutine of
// its own, it waits for the server, then serves the call, past the door
// already, as if the server were up (serve.Stdio.Route), waiting no more. A call the
// client cancels while it waits ends at once, unanswered.
func (r *stdioReader) startingCall(ctx context.Context, s *session, line []byte) bool {
	id, att := r.g.startingFor(s, line)
	if att == nil || !r.Calls.Add() {
		return false
	}
	key := string(id)        // id and line are the reader's buffer,
	line = bytes.Clone(line) // which it reuses
	// The wait has a context of its own, which a cancellation ends; the
	// call, taken after it, the reader's. A call on the fast path goes
	// on after take returns: ended with the wait's, one that failed was
	// said to be cancelled, its client gone.
	wait, cancel := context.WithCancelCause(ctx)
	r.InFlight.Add(key, serve.StopCause(cancel))
	go func() {
		defer r.Calls.Done()
		s.att.WaitStarted(wait, att, r.g.opts.PinnedListWait)
		r.InFlight.Remove(key)
		ended := wait.Err() != nil
		cancel(nil)
		if ended {
			return // cancelled, or the session ended
		}
		var held jsonrpc.Batch
		defer held.Flush()
		r.Route(ctx, line, &held, false) // past the door already; it waits no more
	}()
	return true
}

// AwaitStart holds body, a request posted over HTTP, while it is a
// tools/call of a tool of a pinned server still starting, and reports
// whether the client cancelled it meanwhile; the request is then answered
// with an event stream with no message, as a fast call cancelled is
// (serve.HTTPSurface).
func (t httpTools) AwaitStart(w http.ResponseWriter, r *http.Request, hs serve.HTTPSession, body []byte) (cancelled bool) {
	s := sessionOf(hs)
	id, att := t.g.startingFor(s, body)
	if att == nil {
		return false
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	s.Fast.Add(string(id), serve.StopCause(cancel))
	s.att.WaitStarted(ctx, att, t.g.opts.PinnedListWait)
	s.Fast.Remove(string(id))
	if !serve.CancelledByClient(ctx) {
		return false
	}
	serve.EndEmpty(w)
	return true
}
