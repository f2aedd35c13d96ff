package attach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/guard"
)

// An attached MCP server may ask the client for its roots, for a sampling
// (a completion from the client's model) or for an elicitation (input
// from the user). The gateway declares to a session's servers the ones
// of these its client declared, and relays their requests to that
// client: a filesystem server then gets the IDE's workspace roots, and a
// server that asks the user a question gets the answer.

// Relay sends a request of an attached server (roots/list,
// sampling/createMessage, elicitation/create) to the session's client and
// returns its result. An error that is a *RelayError is the client's
// answer, passed back to the server as it is.
type Relay func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// RelayError is an error answer, code and message, to a relayed request.
type RelayError struct {
	Code    int
	Message string
}

func (e *RelayError) Error() string { return e.Message }

// clientRequests is what a session's servers are told of its client: the
// capabilities declared to them, and the relay of their requests.
type clientRequests struct {
	caps  mcp.ClientCapabilities
	relay Relay
	// wait bounds the wait for the client's answer, as a call is bounded
	// (max_call_time), and relayLinger more: a client that never answers,
	// or is not listening, does not hold the request for good, and a call
	// that runs out of time meanwhile, asked a moment before the request,
	// still finds it asking when it says what held it.
	wait time.Duration
}

// relayLinger is how much longer than a call a request of its server's
// waits for the client; a server told of its call's end cancels its
// request before then.
const relayLinger = time.Second

// SetClient records the capabilities the session's client declared, of
// which roots, sampling and elicitation are declared to its servers
// attached from then on, their requests sent on by relay. Call it before
// Start: pinned servers are told too.
func (s *Session) SetClient(caps mcp.ClientCapabilities, relay Relay) {
	var c *clientRequests
	if caps.Roots != nil || caps.Sampling != nil || caps.Elicitation != nil {
		c = &clientRequests{
			caps:  mcp.ClientCapabilities{Roots: caps.Roots, Sampling: caps.Sampling, Elicitation: caps.Elicitation},
			relay: relay,
			wait:  s.m.maxCallTime() + relayLinger,
		}
	}
	s.mu.Lock()
	s.client = c
	s.mu.Unlock()
}

// clientRequests returns what the session's servers are told of its
// client; nil when it declared none of the three.
func (s *Session) clientRequests() *clientRequests {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// RootsChanged tells the session's servers that were declared roots that
// the client's roots changed: they ask for them again.
func (s *Session) RootsChanged() {
	for _, a := range s.Attachments() {
		a.mu.Lock()
		up := a.up
		a.mu.Unlock()
		if up != nil && up.requests != nil && up.requests.caps.Roots != nil {
			// Not on the reader of the client's messages, which a server
			// slow to take it would hold.
			go up.notifyServer(mcp.MethodNotificationRootsListChanged)
		}
	}
}

// maxRelaying bounds the requests of one server that await the client's
// answers; past it, more are refused at once.
const maxRelaying = 32

// declares reports whether the server was told the client can answer
// method.
func (c *clientRequests) declares(method string) bool {
	switch mcp.MCPMethod(method) {
	case mcp.MethodListRoots:
		return c.caps.Roots != nil
	case mcp.MethodSamplingCreateMessage:
		return c.caps.Sampling != nil
	case mcp.MethodElicitationCreate:
		return c.caps.Elicitation != nil
	}
	return false
}

// answerRequest answers a request the server made of the gateway: a ping,
// or one relayed to the client, which the server was told it could make;
// any other is refused, saying why.
func (u *upstream) answerRequest(ctx context.Context, req transport.JSONRPCRequest) *transport.JSONRPCResponse {
	if req.Method == string(mcp.MethodPing) {
		return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Result: json.RawMessage(`{}`)}
	}
	if c := u.requests; c != nil && c.declares(req.Method) {
		params, err := json.Marshal(req.Params)
		if err != nil {
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.INVALID_PARAMS, "the request's params could not be read: "+err.Error(), nil)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		ctx, stop := context.WithTimeout(ctx, c.wait)
		defer stop()
		forget, ok := u.asking(req.ID, req.Method, func() { cancel(errServerCancelled) })
		if !ok {
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, fmt.Sprintf("the client has %d requests of this server's to answer already: ask again once it has answered some", maxRelaying), nil)
		}
		defer forget()
		res, err := c.relay(ctx, req.Method, params)
		var answer *RelayError
		switch {
		case errors.Is(context.Cause(ctx), errServerCancelled):
			return nil // a request the server cancelled is not answered
		case errors.As(err, &answer):
			return transport.NewJSONRPCErrorResponse(req.ID, answer.Code, answer.Message, nil)
		case err != nil:
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, fmt.Sprintf("the gateway could not ask its client: %v", err), nil)
		}
		return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Result: res}
	}
	msg := fmt.Sprintf("ardgate does not answer %s for its upstreams: it declared no client capability for it", guard.Text(req.Method, 80))
	return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, msg, nil)
}

// errServerCancelled ends a relayed request the server cancelled.
var errServerCancelled = errors.New("the server cancelled its request")

// relayed is a request of the server's on its way to the client.
type relayed struct {
	method string
	cancel func()
}

// maxCancelledEarly bounds the cancellations kept of requests not yet
// asking (cancelled).
const maxCancelledEarly = 64

// asking records request id of the server's, of method, while its answer
// is on its way, cancel stopping it, and returns what forgets it; ok is
// false, and nothing recorded, when maxRelaying wait already. A request
// the server cancelled before it got here is stopped at once. While a
// sampling or an elicitation waits, the server's calls are held (clock.go).
func (u *upstream) asking(id mcp.RequestId, method string, cancel func()) (forget func(), ok bool) {
	key, err := json.Marshal(id)
	if err != nil {
		return func() {}, true
	}
	u.mu.Lock()
	if len(u.relaying) >= maxRelaying {
		u.mu.Unlock()
		return nil, false
	}
	if u.relaying == nil {
		u.relaying = map[string]relayed{}
	}
	u.relaying[string(key)] = relayed{method, cancel}
	early := u.cancelledEarly[string(key)]
	delete(u.cancelledEarly, string(key))
	u.mu.Unlock()
	// A sampling or an elicitation may take a person's while, which the
	// server's calls wait out; roots/list is the client's to answer at
	// once, and a server asking for roots often held its calls for good.
	holds := method != string(mcp.MethodListRoots)
	if holds {
		u.waiting.Begin()
	}
	if early {
		cancel()
	}
	return func() {
		u.mu.Lock()
		delete(u.relaying, string(key))
		u.mu.Unlock()
		if holds {
			u.waiting.End()
		}
	}, true
}

// cancelled stops the request of the server's that its
// notifications/cancelled names: the client is told in turn.
func (u *upstream) cancelled(n mcp.JSONRPCNotification) {
	key, err := json.Marshal(n.Params.AdditionalFields["requestId"])
	if err != nil {
		return
	}
	u.mu.Lock()
	r, ok := u.relaying[string(key)]
	if !ok {
		// Its request may be on its way to asking: requests are
		// answered off the reader, notifications on it.
		if u.cancelledEarly == nil || len(u.cancelledEarly) >= maxCancelledEarly {
			u.cancelledEarly = map[string]bool{}
		}
		u.cancelledEarly[string(key)] = true
	}
	u.mu.Unlock()
	if ok {
		r.cancel()
	}
}

// waitingOnClient names the requests of a's server that await the
// client's answer, as a sentence's end; "" for none. A call that runs
// out of time meanwhile was held up by the client, not the server.
func (a *Attachment) waitingOnClient() string {
	a.mu.Lock()
	up := a.up
	a.mu.Unlock()
	if up == nil {
		return ""
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	var methods []string
	for _, r := range up.relaying {
		methods = append(methods, r.method)
	}
	if len(methods) == 0 {
		return ""
	}
	slices.Sort(methods)
	return fmt.Sprintf("; meanwhile it was waiting for the client to answer its %s, which the client had not", strings.Join(slices.Compact(methods), " and "))
}

// notifyServer sends the server a notification of the client's.
func (u *upstream) notifyServer(method mcp.MCPMethod) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: string(method)}}
	if err := u.transport.SendNotification(ctx, n); err != nil {
		u.log.Debug("a notification to the server was not sent", "method", method, "err", err)
	}
}
