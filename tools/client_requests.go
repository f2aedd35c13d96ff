package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
)

// The requests attached servers make of the client (roots/list,
// sampling/createMessage, elicitation/create) go to the client of the
// session whose attachment made them, when that client declared it can
// answer them; the servers are told only what it declared
// (attach/client_requests.go). They are sent through mcp-go's server,
// which writes them to the client on stdio, or on the session's event
// stream (its GET) over HTTP, and matches the client's answers.

// initialized hears a client's initialize: what it declared is recorded
// for the session's servers, and its pinned servers start, so that they
// are told it too.
func (g *Gateway) initialized(ctx context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
	s, cs := g.current(ctx), server.ClientSessionFromContext(ctx)
	if s == nil || cs == nil {
		return
	}
	s.start.Do(func() {
		s.att.SetClient(req.Params.Capabilities, g.relay(s, cs))
		s.att.Start()
	})
}

// relay sends a server's request to cs, the client of session s, and
// returns the client's result.
func (g *Gateway) relay(s *session, cs server.ClientSession) attach.Relay {
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		if s.perSession && s.streams.Load() == 0 {
			// mcp-go's server would queue the request for a stream that
			// is not there, and the server wait for an answer that
			// cannot come.
			return nil, &attach.RelayError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf(
				"the gateway's client cannot be asked %s now: it has no event stream open (a GET of the session), on which the gateway sends it requests", method)}
		}
		ctx = g.mcp.WithContext(ctx, cs)
		// The client's error answers, which the door drops while the
		// gateway asks nothing of its client, reach the server now.
		g.asking.Add(1)
		defer g.asking.Add(-1)
		var res any
		var err error
		switch mcp.MCPMethod(method) {
		case mcp.MethodListRoots:
			res, err = g.mcp.RequestRoots(ctx, mcp.ListRootsRequest{})
		case mcp.MethodSamplingCreateMessage:
			var req mcp.CreateMessageRequest
			if err := json.Unmarshal(params, &req.CreateMessageParams); err != nil {
				return nil, &attach.RelayError{Code: mcp.INVALID_PARAMS, Message: "sampling/createMessage params could not be read: " + err.Error()}
			}
			res, err = g.mcp.RequestSampling(ctx, req)
		case mcp.MethodElicitationCreate:
			var req mcp.ElicitationRequest
			if err := json.Unmarshal(params, &req.Params); err != nil {
				return nil, &attach.RelayError{Code: mcp.INVALID_PARAMS, Message: "elicitation/create params could not be read: " + err.Error()}
			}
			res, err = g.mcp.RequestElicitation(ctx, req)
		default:
			return nil, &attach.RelayError{Code: mcp.METHOD_NOT_FOUND, Message: method + " is not relayed to the client"}
		}
		if err != nil {
			return nil, &attach.RelayError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("the gateway's client did not answer %s: %v", method, err)}
		}
		return json.Marshal(res)
	}
}

// rootsChanged tells the session's servers that its client's roots
// changed.
func (g *Gateway) rootsChanged(ctx context.Context, _ mcp.JSONRPCNotification) {
	if s := g.current(ctx); s != nil {
		s.att.RootsChanged()
	}
}
