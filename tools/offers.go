package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"slices"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/tracing"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/tools/serve"
)

// The prompts and resources of a session's attached servers are answered
// here, at the door, on both transports: mcp-go's server keeps no prompts
// per session (https://github.com/mark3labs/mcp-go/pull/459 would add
// them), and its resource handlers decode each content into a struct of
// its own. Lists come whole, in one page; prompts/get,
// resources/read, resources/(un)subscribe and completion/complete go to
// the server that serves the name or URI (attach/offers.go), and its
// result comes back as it sent it.

// offerMethods are the methods answered here.
var offerMethods = []mcp.MCPMethod{
	mcp.MethodPromptsList, mcp.MethodPromptsGet, mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList,
	mcp.MethodResourcesRead, mcp.MethodResourcesSubscribe, mcp.MethodResourcesUnsubscribe, mcp.MethodCompletionComplete,
}

// offerCall is a request for the session's prompts or resources: answer
// answers it, a whole JSON-RPC message, with a server span when tracing
// is on (header is the HTTP request's, nil on stdio). id is the request's
// (its JSON), under which the client may cancel it.
type offerCall struct {
	id     string
	answer func(ctx context.Context, header http.Header) []byte
}

// offerRequest reports whether line is a request of session s for its
// prompts or resources, and returns it. What the answer needs of line is
// copied first: it may run after the line's buffer is read into again.
func (g *Gateway) offerRequest(s *session, line []byte) (call offerCall, ok bool) {
	run, m, method, params, ok := g.offerRun(s, line)
	if !ok {
		return call, false
	}
	call.id = string(m.ID)
	call.answer = func(ctx context.Context, header http.Header) []byte {
		var span tracing.Span
		if t := g.opts.Tracing; t != nil {
			var meta struct {
				Meta struct{ Traceparent, Tracestate string } `json:"_meta"`
			}
			_ = json.Unmarshal(params, &meta) // an object, or refused by run
			ctx, span = t.startServer(ctx, header, method, meta.Meta.Traceparent, meta.Meta.Tracestate)
		}
		msg := run(ctx)
		result := "ok"
		if m, err := jsonrpc.ReadMessage(msg); err == nil && m.Error != nil {
			result = "error"
			if span != nil {
				span.SetStatus(tracing.StatusError, string(m.Error))
			}
		}
		if span != nil {
			span.End()
		}
		g.metrics.offers.WithLabelValues(method, result).Inc()
		return msg
	}
	return call, true
}

// offerRun is offerRequest's answer without tracing, the message it
// answers (its id), and the request's method and params (a copy).
func (g *Gateway) offerRun(s *session, line []byte) (run func(context.Context) []byte, m serve.Message, method string, params []byte, ok bool) {
	// Looked for with and without escapes ("prompts\/list"): a frame
	// that took the MCP server's path would be answered as if the session
	// had no prompts or resources.
	if s == nil || !bytes.Contains(line, []byte("prompts")) && !bytes.Contains(line, []byte("resources")) && !bytes.Contains(line, []byte("complet")) {
		return nil, m, "", nil, false
	}
	id, name, raw, ok := request(line)
	method = serve.JSONString(name)
	if !slices.Contains(offerMethods, mcp.MCPMethod(method)) {
		return nil, m, "", nil, false
	}
	if !ok {
		// An id neither a string nor a number, or no jsonrpc "2.0":
		// refused, not answered as if the session had no prompts.
		m = serve.ReadMessage(line)
		return func(context.Context) []byte {
			return m.Refused(method + ": the request could not be read as one: send jsonrpc \"2.0\", an id (a string or an integer), the method and its params, each once and in lower case")
		}, m, method, nil, true
	}
	params = bytes.Clone(raw)
	m = serve.Message{Message: jsonrpc.Message{ID: bytes.Clone(id)}, Object: true}
	var list func() (member string, items [][]byte)
	switch mcp.MCPMethod(method) {
	case mcp.MethodPromptsList:
		list = func() (string, [][]byte) {
			return "prompts", listedOf(s.att.Prompts(), func(p attach.Prompt) []byte { return p.Listed })
		}
	case mcp.MethodResourcesList:
		list = func() (string, [][]byte) { return "resources", listedOf(s.att.Resources(), resourceListed) }
	case mcp.MethodResourcesTemplatesList:
		list = func() (string, [][]byte) {
			return "resourceTemplates", listedOf(s.att.ResourceTemplates(), resourceListed)
		}
	default:
		return g.forwardOffer(s, m, method, params), m, method, params, true
	}
	if !firstPage(params, true) {
		return refusal(m, onePage), m, method, params, true
	}
	return func(ctx context.Context) []byte {
		s.att.WaitPinned(ctx, g.opts.PinnedListWait) // as tools/list does: a client lists once
		member, items := list()
		return serve.Frame{ID: string(m.ID), Result: listJSON(member, items)}.AppendTo(nil)
	}, m, method, params, true
}

func resourceListed(r attach.Resource) []byte { return r.Listed }

// listedOf is each item's listed JSON.
func listedOf[T any](items []T, raw func(T) []byte) [][]byte {
	out := make([][]byte, len(items))
	for i, it := range items {
		out[i] = raw(it)
	}
	return out
}

// listJSON is {"<member>":[items]}.
func listJSON(member string, items [][]byte) []byte {
	b := append([]byte(`{"`), member...)
	b = append(b, `":[`...)
	b = append(b, bytes.Join(items, []byte(","))...)
	return append(b, "]}"...)
}

// forwardOffer answers a prompts/get, a resources/read, a
// completion/complete or a resources/(un)subscribe (method) with what the
// server that serves it answers.
func (g *Gateway) forwardOffer(s *session, m serve.Message, method string, params []byte) func(context.Context) []byte {
	var p map[string]json.RawMessage
	if params != nil && json.Unmarshal(params, &p) != nil {
		p = nil // not an object: refused at the door before this
	}
	var target string
	switch method {
	case string(mcp.MethodPromptsGet):
		if json.Unmarshal(p["name"], &target) != nil || target == "" {
			return refusal(m, "prompts/get needs params.name, a prompt's name (prompts/list gives them)")
		}
	case string(mcp.MethodResourcesRead), string(mcp.MethodResourcesSubscribe), string(mcp.MethodResourcesUnsubscribe):
		if json.Unmarshal(p["uri"], &target) != nil || target == "" {
			return refusal(m, method+" needs params.uri, the resource's URI (resources/list and resources/templates/list give them)")
		}
	}
	return func(ctx context.Context) []byte {
		s.att.WaitPinned(ctx, g.opts.PinnedListWait)
		var res json.RawMessage
		var err error
		switch method {
		case string(mcp.MethodPromptsGet):
			res, err = s.att.GetPrompt(ctx, target, p)
		case string(mcp.MethodResourcesRead):
			res, err = s.att.ReadResource(ctx, target, p)
		case string(mcp.MethodResourcesSubscribe):
			res, err = s.att.Subscribe(ctx, target, p)
		case string(mcp.MethodResourcesUnsubscribe):
			res, err = s.att.Unsubscribe(ctx, target, p)
		default:
			res, err = s.att.Complete(ctx, p)
		}
		if err != nil {
			code, why := offerError(err, method)
			return m.RefusedAs(code, why)
		}
		return serve.Frame{ID: string(m.ID), Result: res}.AppendTo(nil)
	}
}

// refusal answers m with an invalid-params error saying why.
func refusal(m serve.Message, why string) func(context.Context) []byte {
	return func(context.Context) []byte { return m.RefusedAs(mcp.INVALID_PARAMS, why) }
}

// offerError is the JSON-RPC error that answers a failed request of
// method: the server's own, under its name, or the gateway's.
func offerError(err error, method string) (code int, why string) {
	var answer *attach.AnswerError
	switch {
	case errors.As(err, &answer):
		return answer.Code, fmt.Sprintf("%s: %s", answer.Server, answer.Message)
	case errors.Is(err, attach.ErrUnknownPrompt):
		return mcp.INVALID_PARAMS, fmt.Sprintf("%v; prompts/list gives this session's prompts, named mcp_<server>__<prompt>", err)
	case errors.Is(err, attach.ErrUnknownResource):
		return mcp.RESOURCE_NOT_FOUND, fmt.Sprintf("%v; resources/list and resources/templates/list give this session's resources", err)
	case errors.Is(err, attach.ErrInvalidRef), errors.Is(err, attach.ErrNoSubscriptions), errors.Is(err, attach.ErrNotSubscribed):
		return mcp.INVALID_PARAMS, err.Error()
	}
	return mcp.INTERNAL_ERROR, fmt.Sprintf("%s failed: %v", method, err)
}

// Offers answers body, a request of session s for its prompts or
// resources, over HTTP, and reports whether it did (serve.HTTPSurface). A
// request the client cancels ends at once, as an event stream with no
// message, as a fast call's does.
func (t httpTools) Offers(w http.ResponseWriter, r *http.Request, hs serve.HTTPSession, body []byte) bool {
	s := sessionOf(hs)
	call, ok := t.g.offerRequest(s, body)
	if !ok {
		return false
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	s.Fast.Add(call.id, serve.StopCause(cancel))
	msg := call.answer(ctx, r.Header)
	s.Fast.Remove(call.id)
	if serve.CancelledByClient(ctx) {
		serve.EndEmpty(w)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
	_, _ = w.Write(msg)
	return true
}

// offers answers line, a request for the session's prompts or resources,
// over stdio, and reports whether it did: on a goroutine of its own, as
// the answer may wait on a server. A request the client cancels ends at
// once, unanswered.
func (r *stdioReader) offers(ctx context.Context, s *session, line []byte) bool {
	call, ok := r.g.offerRequest(s, line)
	if !ok || !r.Calls.Add() {
		return false // not one, or the session is ending: the server answers
	}
	ctx, cancel := context.WithCancelCause(ctx)
	r.InFlight.Add(call.id, serve.StopCause(cancel))
	go func() {
		defer r.Calls.Done()
		defer cancel(nil)
		msg := call.answer(ctx, nil)
		r.InFlight.Remove(call.id)
		if serve.CancelledByClient(ctx) {
			return
		}
		if err := r.w.Frame(nil, nil, msg, "\n"); err != nil {
			r.g.log.Debug("an answer was not written", "err", err)
		}
	}()
	return true
}

// offersSeed hashes what sessions were told of their prompts and resources.
var offersSeed = maphash.MakeSeed()

// offersChanged tells the session's client that its prompts or its
// resources changed, when they did since it was last told. Run by sync,
// under syncMu.
func (g *Gateway) offersChanged(s *session) {
	// Hashes, not the lists: a session of servers of many resources
	// would keep a copy of them all.
	var prompts, resources [][]byte
	for _, p := range s.att.Prompts() {
		prompts = append(prompts, p.Listed)
	}
	for _, list := range [][]attach.Resource{s.att.Resources(), s.att.ResourceTemplates()} {
		for _, r := range list {
			resources = append(resources, r.Listed)
		}
	}
	for _, c := range []struct {
		was    *uint64
		now    uint64
		method mcp.MCPMethod
	}{
		{&s.prompts, hashOf(prompts), mcp.MethodNotificationPromptsListChanged},
		{&s.resources, hashOf(resources), mcp.MethodNotificationResourcesListChanged},
	} {
		if *c.was == c.now {
			continue
		}
		*c.was = c.now
		var err error
		switch {
		case !s.perSession:
			g.mcp.SendNotificationToAllClients(string(c.method), nil) // stdio: the one client
		case s.client != nil && s.client.Initialized():
			err = g.mcp.SendNotificationToSpecificClient(s.client.SessionID(), string(c.method), nil)
		}
		if err != nil {
			g.log.Debug("list_changed not sent", "session", s.att.ID, "method", c.method, "err", err)
		}
	}
}

// hashOf hashes a list of definitions; zero for none, as a session starts.
func hashOf(list [][]byte) uint64 {
	if len(list) == 0 {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(offersSeed)
	for _, b := range list {
		_, _ = h.Write(b)
		_ = h.WriteByte(0) // where one ends
	}
	return h.Sum64()
}

// resourceUpdated tells the session's client that a resource it
// subscribed to was updated, as its server said.
func (g *Gateway) resourceUpdated(s *session, uri string) {
	params := map[string]any{"uri": uri}
	if r := g.stdioOut.Load(); r != nil && !s.perSession {
		// Written as the fast path writes, as log messages are: beside
		// the calls' results, in the order the gateway read them.
		r.Notify(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{Method: mcp.MethodNotificationResourceUpdated, Params: mcp.NotificationParams{AdditionalFields: params}}})
		return
	}
	if err := g.mcp.SendNotificationToSpecificClient(s.att.ID, mcp.MethodNotificationResourceUpdated, params); err != nil {
		g.log.Debug("resources/updated not sent", "session", s.att.ID, "err", err)
	}
}
