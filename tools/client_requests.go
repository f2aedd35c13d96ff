package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/tools/serve"
)

// The requests attached servers make of the client (roots/list,
// sampling/createMessage, elicitation/create) go to the client of the
// session whose attachment made them, when that client declared it can
// answer them; the servers are told only what it declared
// (attach/client_requests.go).
//
// The gateway sends them itself, under ids of its own ("ardgate-relay-N"),
// and takes the client's answers to those ids at the door, before
// mcp-go's server: they pass as they came, error codes included; a
// request the server gives up on (or the gateway's bound on the wait)
// is cancelled at the client with notifications/cancelled, which mcp-go's
// own server-to-client requests never send; and an answer that comes too
// late is dropped, not answered as a request. Over stdio a request is a
// frame in the client's stream; over HTTP it goes on the session's event
// stream (its GET), as a notification of mcp-go's that the stream's
// writer turns into the request (requestWriter).

// relayIDPrefix begins the id of every request the gateway sends a client.
const relayIDPrefix = `"ardgate-relay-`

// clientCalls are the requests sent to a session's client, awaiting its
// answers. The zero value is ready to use.
type clientCalls struct {
	mu      sync.Mutex
	next    uint64
	waiting map[string]chan<- clientAnswer // by the id's JSON
}

// clientAnswer is the client's answer: a result, or an error.
type clientAnswer struct {
	result json.RawMessage
	err    *attach.RelayError
}

// open returns the id (its JSON) of a new request, and where its answer
// comes.
func (c *clientCalls) open() (id string, answer <-chan clientAnswer) {
	ch := make(chan clientAnswer, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	id = relayIDPrefix + strconv.FormatUint(c.next, 10) + `"`
	if c.waiting == nil {
		c.waiting = map[string]chan<- clientAnswer{}
	}
	c.waiting[id] = ch
	return id, ch
}

// close forgets request id: an answer that comes later is dropped.
func (c *clientCalls) close(id string) {
	c.mu.Lock()
	delete(c.waiting, id)
	c.mu.Unlock()
}

// answer takes m, a message of the client's, when it answers a request
// of the gateway's (by its id), and reports whether it did: an answer to
// a request still waiting goes to it, one that came too late is dropped.
func (c *clientCalls) answer(m serve.Message, log func(msg string, args ...any)) bool {
	if m.Method != nil || m.ID == nil || m.Result == nil && m.Error == nil || !bytes.HasPrefix(m.ID, []byte(relayIDPrefix)) {
		return false
	}
	c.mu.Lock()
	ch := c.waiting[string(m.ID)]
	delete(c.waiting, string(m.ID))
	c.mu.Unlock()
	if ch == nil {
		log("an answer to a request the gateway no longer awaits: dropped", "id", string(m.ID))
		return true
	}
	a := clientAnswer{result: bytes.Clone(m.Result)}
	if m.Error != nil {
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(m.Error, &e) != nil {
			e.Code, e.Message = mcp.INTERNAL_ERROR, "the client's error answer could not be read"
		}
		a.err = &attach.RelayError{Code: e.Code, Message: e.Message}
	}
	ch <- a
	return true
}

// initialized hears a client's initialize: what it declared is recorded
// for the session's servers, and its pinned servers start, so that they
// are told it too. A request of theirs waits for the client's
// notifications/initialized (clientReady).
func (g *Gateway) initialized(ctx context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
	s := g.current(ctx)
	if s == nil {
		return
	}
	s.start.Do(func() {
		s.att.SetClient(req.Params.Capabilities, g.relay(s))
		s.att.Start()
	})
}

// clientInitialized hears a client's notifications/initialized: requests
// may be sent to it from now on.
func (g *Gateway) clientInitialized(ctx context.Context, _ mcp.JSONRPCNotification) {
	if s := g.current(ctx); s != nil {
		s.ready.fire()
	}
}

// signal is an event that happens once; the zero value has not.
type signal struct {
	once sync.Once
	ch   chan struct{}
	mu   sync.Mutex
}

func (e *signal) done() chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ch == nil {
		e.ch = make(chan struct{})
	}
	return e.ch
}

// fire makes it happen.
func (e *signal) fire() { e.once.Do(func() { close(e.done()) }) }

// wait waits for it, or for ctx to end or d to pass, and reports whether
// it happened.
func (e *signal) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.done():
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// clientReady waits until session s's client can be sent a request: it
// has said it is initialized (a server started with the session may ask
// before), and over HTTP it has an event stream open to hear it on. Each
// wait is bounded by PinnedListWait: a client that never says initialized
// is asked all the same, and one with no stream is said to have none.
func (g *Gateway) clientReady(ctx context.Context, s *session, method string) error {
	if !s.ready.wait(ctx, g.opts.PinnedListWait) && ctx.Err() == nil {
		s.ready.fire() // the next request does not wait again
	}
	if s.perSession && s.Streams.Load() == 0 {
		// The first, at the session's start; a client that opens none
		// in that time is not waited for again.
		if !s.streamed.wait(ctx, g.opts.PinnedListWait) && ctx.Err() == nil {
			s.streamed.fire()
		}
		if s.Streams.Load() == 0 {
			return &attach.RelayError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf(
				"the gateway's client cannot be asked %s now: it has no event stream open (a GET of the session), on which the gateway sends it requests", method)}
		}
	}
	return ctx.Err()
}

// relay sends a server's request to the client of session s and returns
// the client's result, or its error as a *attach.RelayError.
func (g *Gateway) relay(s *session) attach.Relay {
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		if err := g.clientReady(ctx, s, method); err != nil {
			return nil, err
		}
		id, answer := s.asked.open()
		defer s.asked.close(id)
		frame := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":` + strconv.Quote(method))
		if len(params) > 0 && string(params) != "null" {
			frame = append(append(append(frame, `,"params":`...), params...), '}')
		} else {
			frame = append(frame, '}')
		}
		if err := g.toClient(s, frame); err != nil {
			return nil, &attach.RelayError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("the gateway could not send %s to its client: %v", method, err)}
		}
		select {
		case a := <-answer:
			if a.err != nil {
				return nil, a.err
			}
			return a.result, nil
		case <-ctx.Done():
			// The server gave up, or the wait's bound passed: the client
			// is told, so that a form or an approval does not stay open
			// with nothing behind it.
			why := "the server that asked gave up"
			if ctx.Err() == context.DeadlineExceeded {
				why = "the gateway waited as long as a call may take (max_call_time)"
			}
			g.cancelAtClient(s, id, why)
			return nil, &attach.RelayError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("the gateway's client did not answer %s: %s", method, why)}
		}
	}
}

// toClient writes frame, a request, to session s's client.
func (g *Gateway) toClient(s *session, frame []byte) error {
	if r := g.stdioOut.Load(); r != nil && !s.perSession {
		return r.w.Frame(nil, nil, frame, "\n")
	}
	return g.mcp.SendNotificationToSpecificClient(s.att.ID, serve.RelayMethod, map[string]any{"request": json.RawMessage(frame)})
}

// cancelAtClient tells session s's client that request id is cancelled.
func (g *Gateway) cancelAtClient(s *session, id, why string) {
	params := map[string]any{"requestId": json.RawMessage(id), "reason": why}
	if r := g.stdioOut.Load(); r != nil && !s.perSession {
		r.Notify(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{Method: string(mcp.MethodNotificationCancelled), Params: mcp.NotificationParams{AdditionalFields: params}}})
		return
	}
	if err := g.mcp.SendNotificationToSpecificClient(s.att.ID, string(mcp.MethodNotificationCancelled), params); err != nil {
		g.log.Debug("a cancellation was not sent to the client", "session", s.att.ID, "err", err)
	}
}

// rootsChanged tells the session's servers that its client's roots
// changed.
func (g *Gateway) rootsChanged(ctx context.Context, _ mcp.JSONRPCNotification) {
	if s := g.current(ctx); s != nil {
		s.att.RootsChanged()
	}
}

// errNoAction: a client's answer to an elicitation/create that is not
// one of accept, decline and cancel.
var errNoAction = errors.New("the client's answer to elicitation/create has no action of accept, decline or cancel")

// elicitURL asks session s's client, which declared URL-mode elicitation,
// to send its user to url (MCP 2025-11-25, elicitation/create with mode
// "url"), and returns the user's action. The URL is opened by the client,
// not shown to its model, and what the user enters there never passes
// through either. The wait is bounded by ctx.
func (g *Gateway) elicitURL(ctx context.Context, s *session, id, url, message string) (mcp.ElicitationResponseAction, error) {
	return elicit(ctx, g.relay(s), mcp.ElicitationParams{Mode: mcp.ElicitationModeURL, Message: message, ElicitationID: id, URL: url})
}

// elicit sends the client an elicitation/create of params through relay,
// the path the servers' requests take, and returns the user's action:
// accept, decline or cancel. relay's error comes back as it is; an answer
// with no such action is errNoAction.
func elicit(ctx context.Context, relay attach.Relay, params mcp.ElicitationParams) (mcp.ElicitationResponseAction, error) {
	body, err := json.Marshal(params)
	if err != nil {
		return "", err
	}
	raw, err := relay(ctx, string(mcp.MethodElicitationCreate), body)
	if err != nil {
		return "", err
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", fmt.Errorf("%w: %w", errNoAction, err)
	}
	switch res.Action {
	case mcp.ElicitationResponseActionAccept, mcp.ElicitationResponseActionDecline, mcp.ElicitationResponseActionCancel:
		return res.Action, nil
	}
	return "", fmt.Errorf("%w: it said %q", errNoAction, guard.Text(string(res.Action), 40))
}

// elicitationComplete tells the client of the call ctx belongs to that
// the URL-mode elicitation id ended, so that it stops showing it.
func (g *Gateway) elicitationComplete(ctx context.Context, id string) {
	if err := g.notify(ctx, string(mcp.MethodNotificationElicitationComplete), map[string]any{"elicitationId": id}); err != nil {
		g.log.Debug("notifications/elicitation/complete not sent", "elicitationId", id, "err", err)
	}
}
