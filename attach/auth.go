package attach

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/ardgate/ardgate/attach/oauth"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

// ErrAuthRequired is wrapped by an AuthRequired: the server asks for an
// authorization the user has not given yet.
var ErrAuthRequired = errors.New("the server asks for authorization")

// ErrAuthDeclined: the user declined the authorization at the server's
// authorization page (the redirect back carried an error).
var ErrAuthDeclined = oauth.ErrDenied

// AuthRequired is the failure of an attach whose server answered 401: a
// flow is under way, and URL is where the user authorizes it. The attach
// succeeds once the redirect back came.
type AuthRequired struct {
	URN    string
	Server string // the server's URL, redacted
	URL    string // the authorization URL for the user to open
	done   <-chan struct{}
}

func (e *AuthRequired) Error() string {
	return fmt.Sprintf("%s (%s) asks for authorization (HTTP 401)", e.URN, e.Server)
}

func (e *AuthRequired) Unwrap() error { return ErrAuthRequired }

// StepURL is the authorization URL: AuthRequired is a UserStep.
func (e *AuthRequired) StepURL() string { return e.URL }

// StepDone is closed once the flow ended: its redirect back came
// (granted or declined), its AuthFlowTTL passed, or its session closed.
// An attach again then finds the grant, or says why there is none.
func (e *AuthRequired) StepDone() <-chan struct{} { return e.done }

// Publisher is the publisher the server's URN names, "" when it is no
// URN: what the user is asked to trust besides the server's address.
func (e *AuthRequired) Publisher() string { return publisherOf(e.URN) }

// publisherOf is the publisher urn names, "" when it is no URN.
func publisherOf(urn string) string {
	u, err := registry.ParseURN(urn)
	if err != nil {
		return ""
	}
	return u.Publisher
}

// ElicitsURL reports whether the session's client declared URL-mode
// elicitation (MCP 2025-11-25, capabilities.elicitation.url): a UserStep
// can then be put to the user through it, not only as a link the model
// shows.
func (s *Session) ElicitsURL() bool {
	c := s.clientRequests()
	return c != nil && c.caps.Elicitation != nil && c.caps.Elicitation.URL != nil
}

// CallbackPath is where the authorization server sends the user's
// browser back, on the gateway's listener or a flow's own.
const CallbackPath = "/oauth/callback"

// AuthFlowTTL bounds how long a flow waits for its redirect back; its
// loopback listener, if any, closes then.
const AuthFlowTTL = 10 * time.Minute

// maxAuthFlows bounds a session's flows, under way or declined and not
// yet said: each began with discovery and a client registration at a
// third party, and over stdio holds a loopback listener until its TTL.
const maxAuthFlows = 32

// Bounds of a request to a flow's loopback listener, the redirect back or
// a keys page: a browser sends its head and a small form at once, and a
// connection that stalls or idles holds the listener's goroutine.
const (
	flowReadTimeout  = time.Minute
	flowWriteTimeout = time.Minute
	flowIdleTimeout  = 2 * time.Minute
)

type callbackBaseKey struct{}

// WithCallbackBase tells the attaches under ctx that the redirect back
// comes to base (scheme://host of the gateway's own listener) at
// CallbackPath. Without it, a flow opens a loopback listener of its own.
func WithCallbackBase(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, callbackBaseKey{}, base)
}

// flowBase is where the user's browser comes to for a flow under ctx:
// the gateway's own listener (WithCallbackBase), or else a loopback
// listener opened for the flow (127.0.0.1, a random port), returned to
// be served and closed with the flow.
func flowBase(ctx context.Context) (string, *flowListener, error) {
	if base, _ := ctx.Value(callbackBaseKey{}).(string); base != "" {
		return strings.TrimSuffix(base, "/"), nil, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	l := &flowListener{ln: ln}
	return "http://" + ln.Addr().String(), l, nil
}

// flowListener is a loopback listener of one flow, over stdio, where no
// listener of the gateway's is. Its methods do nothing on nil: a flow
// over HTTP has none.
type flowListener struct {
	ln  net.Listener
	srv *http.Server
}

// serve answers the listener's requests with h until close or shutdown.
func (l *flowListener) serve(h http.HandlerFunc) {
	if l == nil {
		return
	}
	l.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: flowReadTimeout, WriteTimeout: flowWriteTimeout, IdleTimeout: flowIdleTimeout}
	go func() { _ = l.srv.Serve(l.ln) }() // ends when the server is closed
}

// close stops the listener and ends its connections at once.
func (l *flowListener) close() {
	switch {
	case l == nil:
	case l.srv != nil:
		_ = l.srv.Close()
	default:
		_ = l.ln.Close()
	}
}

// shutdown stops listening now, from within a handler, and closes once
// the answers in flight are written.
func (l *flowListener) shutdown() {
	if l == nil || l.srv == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.srv.Shutdown(ctx)
	}()
}

// authFlows are a session's authorizations: flows awaiting their
// redirect back, by state, and the grants they gave, by URN. Grants live
// in memory, for the session's life, and in the store when the operator
// set one (credentials.store, grants.go).
type authFlows struct {
	mu      sync.Mutex
	byState map[string]*authFlow
	byURN   map[string]*authFlow // the latest flow of each URN
	grants  map[string]*oauth.Grant
	closed  bool
}

// authFlow is one flow of a session, for one URN.
type authFlow struct {
	urn   string
	flow  *oauth.Flow
	done  chan struct{} // closed by end
	ln    *flowListener // a loopback listener opened for the flow; nil over HTTP
	timer *time.Timer   // forgets the flow at AuthFlowTTL
	ended bool          // a callback came for it: another is refused
	err   error         // why it failed (declined), until an attach says so

	// server is the server's URL, under which the store keeps its grant
	// (grants.go).
	server string
}

// close ends what the flow holds open, and the flow. The caller holds
// authFlows.mu.
func (f *authFlow) close() {
	f.timer.Stop()
	f.ln.close()
	f.end()
}

// end tells the attaches waiting on the flow (StepDone) that it ended.
// The caller holds authFlows.mu.
func (f *authFlow) end() {
	select {
	case <-f.done:
	default:
		close(f.done)
	}
}

// required is the failure of an attach that waits on f.
func (f *authFlow) required(plan Plan) *AuthRequired {
	return &AuthRequired{URN: f.urn, Server: redacted(plan.URL), URL: f.flow.URL(), done: f.done}
}

// authorized returns plan with the grant the session holds for urn, or
// the refusal a declined flow of urn left, said once: the flow is
// forgotten then, and makes room for another.
func (a *authFlows) authorized(urn string, plan Plan) (Plan, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f := a.byURN[urn]; f != nil && f.err != nil {
		err := f.err
		a.drop(f, false)
		if errors.Is(err, ErrAuthDeclined) {
			return plan, fmt.Errorf("the user declined to authorize ardgate at %s for %s: %w; attach it again to ask again", redacted(plan.URL), urn, err)
		}
		return plan, fmt.Errorf("the authorization of %s at %s failed: %w; attach it again to start a new one", urn, redacted(plan.URL), err)
	}
	plan.grant = a.grants[urn]
	return plan, nil
}

// authorized returns plan with the grant the session holds for urn, or
// else the one the store keeps for plan's server (credentials.store),
// or the refusal a declined flow of urn left, said once.
func (s *Session) authorized(urn string, plan Plan) (Plan, error) {
	plan, err := s.auth.authorized(urn, plan)
	if err != nil || plan.grant != nil || plan.Transport == TransportStdio || plan.Own {
		return plan, err
	}
	if g := s.m.savedGrant(plan.URL); g != nil {
		plan.grant = s.auth.hold(urn, g)
	}
	return plan, nil
}

// hold keeps g, restored from the store, as the session's grant for urn,
// unless the session has one already, or has closed; it returns the one
// it holds.
func (a *authFlows) hold(urn string, g *oauth.Grant) *oauth.Grant {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return g // for this attach alone
	}
	if held := a.grants[urn]; held != nil {
		return held
	}
	if a.grants == nil {
		a.grants = map[string]*oauth.Grant{}
	}
	a.grants[urn] = g
	return g
}

// authFailed turns err, an attach's failure at a remote that answered
// 401 or whose grant expired (refusedAuth), into an AuthRequired with the URL of a flow: the one under way
// for urn, or a new one. Any other err is returned as it is.
func (s *Session) authFailed(ctx context.Context, urn string, plan Plan, err error) error {
	if plan.Transport == TransportStdio || plan.Own || !refusedAuth(err) {
		return err
	}
	if plan.grant != nil {
		s.m.forgetGrant(plan.URL, plan.grant) // refused: authorize again
	}
	f, ferr := s.auth.refused(urn, plan.grant)
	if f == nil && ferr == nil {
		f, ferr = s.startFlow(ctx, urn, plan)
	}
	if ferr != nil {
		return fmt.Errorf("%w; its authorization could not begin: %w", err, ferr)
	}
	return f.required(plan)
}

// refused drops grant, which urn's server refused, from the session, and
// returns the flow under way for urn: nil, and no error, when a new one
// may begin; an error when the session has maxAuthFlows already, before
// the new one would reach any server.
func (a *authFlows) refused(urn string, grant *oauth.Grant) (*authFlow, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if grant != nil && a.grants[urn] == grant {
		delete(a.grants, urn)
	}
	if f := a.byURN[urn]; f != nil && !f.ended {
		return f, nil
	}
	return nil, a.room(urn)
}

// room is nil when the session may hold one more flow, for urn: one of
// urn replaces its own. Declined flows past their TTL, kept only to say
// their refusal, make room first: dropping one loses that saying, not a
// grant. The caller holds mu.
func (a *authFlows) room(urn string) error {
	if a.byURN[urn] != nil || len(a.byURN) < maxAuthFlows {
		return nil
	}
	for _, f := range a.byURN {
		if a.byState[f.flow.State()] != f {
			a.drop(f, false)
		}
	}
	if len(a.byURN) < maxAuthFlows {
		return nil
	}
	return fmt.Errorf("%w: the session has %d authorizations under way or declined; one ends at its redirect back, or at most %s after it began, and a declined one once an attach of it said so", ErrCapReached, maxAuthFlows, AuthFlowTTL)
}

// drop forgets f: its listener closes, and a callback of its state is
// refused. keepRefusal keeps a declined f for its URN, for the next
// attach of it to say. The caller holds mu.
func (a *authFlows) drop(f *authFlow, keepRefusal bool) {
	f.close()
	if a.byState[f.flow.State()] == f {
		delete(a.byState, f.flow.State())
	}
	if a.byURN[f.urn] == f && !(keepRefusal && f.err != nil) {
		delete(a.byURN, f.urn)
	}
}

// refusedAuth tells whether err, an attach's failure, is the server's
// refusal of its authorization: a 401, or a grant whose token expired
// and did not refresh (no refresh token, or the authorization server
// refused it), which only the user can renew.
func refusedAuth(err error) bool {
	return errors.Is(err, transport.ErrUnauthorized) || errors.Is(err, transport.ErrAuthorizationRequired) || errors.Is(err, oauth.ErrExpired)
}

// startFlow begins a flow for urn: the redirect back comes to the
// gateway's listener, or to a loopback listener opened for it.
func (s *Session) startFlow(ctx context.Context, urn string, plan Plan) (*authFlow, error) {
	f := &authFlow{urn: urn, server: plan.URL, done: make(chan struct{})}
	redirect, ln, err := flowBase(ctx)
	if err != nil {
		return nil, fmt.Errorf("open a loopback listener for the redirect back: %w", err)
	}
	cfg := &oauth.Config{HTTP: s.m.HTTP, Dialer: s.m.Dialer, RedirectURL: strings.TrimSuffix(redirect, "/") + CallbackPath, ClientName: "ardgate"}
	flow, err := cfg.Authorize(ctx, plan.URL, s.m.challenge(ctx, plan))
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case err != nil:
	case a.closed:
		err = ErrSessionClosed
	default:
		err = a.room(urn) // another attach may have begun one meanwhile
	}
	if err != nil {
		ln.close()
		return nil, err
	}
	f.flow, f.ln = flow, ln
	if old := a.byURN[urn]; old != nil {
		a.drop(old, false)
	}
	if a.byState == nil {
		a.byState, a.byURN = map[string]*authFlow{}, map[string]*authFlow{}
	}
	a.byState[flow.State()], a.byURN[urn] = f, f
	f.timer = time.AfterFunc(AuthFlowTTL, func() { a.forget(f) })
	ln.serve(func(w http.ResponseWriter, r *http.Request) { s.serveCallback(w, r, ln) })
	return f, nil
}

// forget drops f, as its time is up: its listener closes, and a callback
// of its state is refused from then on. A refusal it holds is kept.
func (a *authFlows) forget(f *authFlow) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.drop(f, true)
}

// close ends every flow of the session and drops its grants.
func (a *authFlows) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for _, f := range a.byState {
		f.close()
	}
	a.byState, a.byURN, a.grants = nil, nil, nil
}

// challenge is the WWW-Authenticate of the 401 an unauthenticated POST
// to the server gets, for its resource_metadata and scope: mcp-go's
// transport keeps only the former, as added in
// https://github.com/mark3labs/mcp-go/pull/730. nil when none came; discovery then
// tries the well-known URLs.
func (m *Manager) challenge(ctx context.Context, plan Plan) http.Header {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, plan.URL, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"ping"}`))
	if err != nil {
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := m.client(false).Do(req)
	if err != nil {
		return nil
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return nil
	}
	return resp.Header
}

// ErrUnknownState: a redirect back whose state no flow awaits, or whose
// flow already had its redirect back.
var ErrUnknownState = errors.New("no authorization awaits this redirect: its state is unknown, or was already used")

// Callback completes the flow the query's state names, in whichever
// session started it: the redirect back to the gateway's own listener.
// ErrUnknownState changes nothing.
func (m *Manager) Callback(ctx context.Context, q url.Values) (urn string, err error) {
	state := q.Get("state")
	for _, s := range m.Sessions() {
		if urn, err, ok := s.callback(ctx, state, q); ok {
			return urn, err
		}
	}
	return "", ErrUnknownState
}

// callback completes the session's flow of state, as authFlows.callback
// does, and puts the grant it gave in the store, if there is one.
func (s *Session) callback(ctx context.Context, state string, q url.Values) (urn string, err error, ok bool) {
	f, g, err, ok := s.auth.callback(ctx, state, q)
	if f == nil {
		return "", err, ok
	}
	if g != nil {
		s.m.keepGrant(f.server, g)
	}
	return f.urn, err, ok
}

// callback completes the flow of state, if the session holds it and no
// callback came for it yet (ok), and returns it and the grant it gave. A
// grant is kept for its URN; a decline is kept for the next attach of it
// to say.
func (a *authFlows) callback(ctx context.Context, state string, q url.Values) (_ *authFlow, _ *oauth.Grant, err error, ok bool) {
	a.mu.Lock()
	f := a.byState[state]
	if f == nil || f.ended {
		a.mu.Unlock()
		return nil, nil, ErrUnknownState, f != nil
	}
	f.ended = true
	a.mu.Unlock()
	// The exchange outlives a browser that closes the page meanwhile.
	g, err := f.flow.Callback(context.WithoutCancel(ctx), q)
	a.mu.Lock()
	defer a.mu.Unlock()
	defer f.end() // once the grant, or why there is none, is kept
	switch {
	case a.closed:
		return f, nil, ErrSessionClosed, true
	case err != nil:
		f.err = err
		return f, nil, err, true
	}
	if a.grants == nil {
		a.grants = map[string]*oauth.Grant{}
	}
	a.grants[f.urn] = g
	return f, g, nil, true
}

// serveCallback answers a redirect back on a flow's loopback listener,
// which closes once a callback completed the flow.
func (s *Session) serveCallback(w http.ResponseWriter, r *http.Request, ln *flowListener) {
	if r.URL.Path != CallbackPath {
		http.NotFound(w, r)
		return
	}
	urn, err, ok := s.callback(r.Context(), r.URL.Query().Get("state"), r.URL.Query())
	if !ok {
		err = ErrUnknownState
	}
	WriteCallbackPage(w, urn, err)
	if ok {
		ln.shutdown() // its one callback came
	}
}

// WriteCallbackPage answers the redirect back with a short page for the
// user: done, declined, or refused (400 for a state no flow awaits).
func WriteCallbackPage(w http.ResponseWriter, urn string, err error) {
	status, msg := http.StatusOK, "ardgate is authorized for "+urn+". You may close this page and return to your client."
	switch {
	case errors.Is(err, ErrUnknownState), errors.Is(err, oauth.ErrStateMismatch), errors.Is(err, oauth.ErrStateReused), errors.Is(err, oauth.ErrCodeReused):
		status, msg = http.StatusBadRequest, "This authorization link is not valid: "+err.Error()+"."
	case errors.Is(err, oauth.ErrDenied):
		msg = "The authorization of " + urn + " was declined. You may close this page and return to your client."
	case err != nil:
		status, msg = http.StatusBadGateway, "The authorization of "+urn+" failed: "+guard.Text(err.Error(), 500)+". Return to your client and attach it again."
	}
	writePage(w, status, msg)
}
