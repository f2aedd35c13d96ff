package attach

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/attach/a2a"
	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/attach/mcpwire"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/guard/jsonrpc"
	"github.com/ardgate/ardgate/registry"
)

// Session is one client session's attachments. Everything it starts ends
// with Close.
type Session struct {
	// ID is the MCP session id.
	ID string
	// OnChange runs after the session's set of proxied tools changed: an
	// attach, a detach, or an upstream's own tools/list_changed. Set it
	// before Start.
	OnChange func()
	// OnLog hears the log messages of the session's own MCP servers
	// (logging.go). Set it before Start.
	OnLog func(a *Attachment, m LogMessage)
	// OnUpdated hears the URI of a resource the session subscribed to
	// that its server says was updated (offers.go). Set it before Start.
	OnUpdated func(uri string)
	// OnPinned hears how each pinned attachment's start ended: err is
	// why it did not. Set it before Start.
	OnPinned func(a *Attachment, err error)

	m      *Manager
	ctx    context.Context // ends at Close: cancels attaches in flight
	cancel context.CancelFunc
	wg     sync.WaitGroup // attaches in flight, pinned starts and their retries
	pins   []func()       // pinned starts, until Start runs them

	// listed is closed once every pinned server whose tools are listed has
	// started or failed (listedLeft counts those still starting); nil when
	// there are none. started is when Start ran, in Unix nanoseconds; 0
	// before: Start runs once the client has initialized, while its other
	// requests may be read.
	listed     chan struct{}
	listedLeft atomic.Int32
	started    atomic.Int64

	tasks *a2a.Store

	mu       sync.Mutex
	atts     []*Attachment
	inflight map[string]*attaching // by URN
	reserved map[string]bool       // names held by attaches in flight
	closed   bool
	ended    chan struct{}    // closed once Close is done
	logLevel mcp.LoggingLevel // the client's; "" until it sets one
	// subs are the resources the client subscribed to, by URI, at the
	// attachment whose server took the subscription.
	subs map[string]*Attachment
	// client is what its servers are told of the session's client
	// (client_requests.go); nil until SetClient.
	client *clientRequests
	// auth holds its OAuth flows and grants (auth.go).
	auth authFlows
	// keys holds the pages asking for packages' keys, and the values
	// given (keys.go).
	keys keyFlows
}

// Attachment is one attached upstream.
type Attachment struct {
	URN        string
	Name       string
	Kind       string
	MediaType  string
	RegistryID string
	// endpoint is where it is reached (Endpoint); a pinned agent's
	// changes once its card is read. Guarded by mu.
	endpoint   string
	Pinned     bool
	AttachedAt time.Time
	// removed is set once detach_resource removed it: its tasks' errors
	// say to attach it again, not to spawn_agent on it.
	removed atomic.Bool
	// Deferred attachments' tools are not listed; tool_search finds them.
	Deferred bool
	// Trust is what the trust gate checked of its entry, digests too;
	// nil when the entry had no trustManifest and none was required.
	Trust *guard.TrustReport
	// EntryStatus and EntryStatusMessage are what its registry says of
	// an entry it no longer recommends (registry.Entry.Status): attached
	// by its URN all the same, the model is told.
	EntryStatus, EntryStatusMessage string

	// Timeout overrides the manager's call timeout when set.
	Timeout time.Duration
	// Only, when set, are the patterns (path.Match) of the upstream's tool
	// names the session gets: a pinned server's "tools" in the config.
	// The others are neither listed nor callable.
	Only []string
	// cardURL is where an agent's card can be fetched again, for health
	// checks; empty for inline cards.
	cardURL string
	// sessionEnded: it is closed because its session ended, which is what
	// a call cut short by that is told.
	sessionEnded atomic.Bool
	// reach starts a stdio server, or connects a remote one, anew once it
	// went down (revive): the attachment's own, or the connection that
	// the sessions share (release is set then); nil for an agent. revived
	// is when that was last tried.
	reach   func(ctx context.Context) (*upstream, []Tool, error)
	revived time.Time
	// reachAgent connects a pinned agent, which spawn_agent reaches again
	// when it could not at the session's start (Session.agentReached).
	reachAgent func(ctx context.Context) (*a2a.Conn, error)
	stdio      bool // reach starts a process

	// release, for a stateless server's shared connection, gives it up
	// instead of closing it.
	release func()

	mu      sync.Mutex
	up      *upstream // MCP servers; nil while a pinned server is starting
	agent   *a2a.Conn // A2A agents
	unwell  string    // why the last health check of an agent failed
	tools   []Tool
	failure string // why a pinned server failed to start
	// started, for a pinned attachment, is closed once it has started
	// or failed (WaitStarted); nil for the others.
	started chan struct{}
	// exposedPrompts are the prompts of promptsOf, the server's listing
	// they were made from (offers.go).
	exposedPrompts []Prompt
	promptsOf      *offers
	// toolNames and promptNames keep the names given, so that they stay
	// (exposedNames).
	toolNames, promptNames nameBook
}

// Tool is one upstream tool as this session exposes it.
type Tool struct {
	// Name is the exposed name, mcp_<attachment>__<tool>.
	Name string
	// Attachment is the name of the attachment that serves it.
	Attachment string
	// Upstream is the upstream's own definition, whole schemas included;
	// its Name is the upstream's name for the tool. It is shared with the
	// sessions that attached the same server (tooldefs.go): read only.
	Upstream *Definition
}

// AppendListed appends the tool as a tools/list result lists it: the
// upstream's definition under the exposed name, encoded as mcp-go's
// server encodes a tool. The encoding is made once per definition and
// shared, so a listing costs a copy of it.
func (t Tool) AppendListed(b []byte) ([]byte, error) {
	head, tail, err := t.Upstream.encoded()
	if err != nil {
		return b, err
	}
	b = append(b, head...)
	b = append(append(append(b, '"'), t.Name...), '"') // [A-Za-z0-9_.-]: nothing to escape
	return append(b, tail...), nil
}

// ListedSize is how many bytes AppendListed appends.
func (t Tool) ListedSize() (int, error) {
	head, tail, err := t.Upstream.encoded()
	return len(head) + len(t.Name) + 2 + len(tail), err
}

// Status values of an attachment.
const (
	StatusStarting = "starting"
	StatusUp       = "up"
	StatusDown     = "down"
)

// Status reports whether the attachment is up, and why not.
func (a *Attachment) Status() (status, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.failure != "":
		return StatusDown, a.failure
	case a.agent != nil && a.unwell != "":
		return StatusDown, a.unwell
	case a.agent != nil:
		return StatusUp, ""
	case a.up == nil:
		return StatusStarting, ""
	}
	if why := a.up.downReason(); why != "" {
		return StatusDown, why
	}
	return StatusUp, ""
}

// Protocol returns the A2A version an agent is spoken to in ("0.3",
// "1.0"), or "" for MCP servers.
func (a *Attachment) Protocol() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.agent == nil {
		return ""
	}
	return a.agent.Protocol()
}

// Skills returns an agent's skills.
func (a *Attachment) Skills() []Skill {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.agent == nil {
		return nil
	}
	return a.agent.Skills()
}

// Instructions are what an MCP server's initialize said of how to use
// it, cleaned and cut as guard.Text does; "" for none, or before it is up.
func (a *Attachment) Instructions() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.up == nil {
		return ""
	}
	return a.up.instructions
}

func (a *Attachment) agentConn() (*a2a.Conn, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.agent != nil:
		return a.agent, nil
	case a.failure != "":
		return nil, fmt.Errorf("%w: agent %s %s", ErrUpstreamDown, a.Name, a.failure)
	case a.reachAgent != nil:
		return nil, fmt.Errorf("%w: agent %s is still being reached; try again shortly", ErrUpstreamDown, a.Name)
	}
	return nil, fmt.Errorf("%w: agent %s was detached", ErrUpstreamDown, a.Name)
}

// agentReached is a's connection, a pinned agent that could not be
// reached at the session's start reached now, at most every reviveEvery:
// it stayed down for the whole session, saying it was detached.
func (s *Session) agentReached(ctx context.Context, a *Attachment) (*a2a.Conn, error) {
	conn, err := a.agentConn()
	a.mu.Lock()
	failed := err != nil && a.reachAgent != nil && a.failure != ""
	if !failed || time.Since(a.revived) < reviveEvery {
		a.mu.Unlock()
		if failed {
			err = fmt.Errorf("%w; spawn_agent tries to reach it again, at most every %s", err, reviveEvery)
		}
		return conn, err
	}
	a.revived = time.Now()
	a.mu.Unlock()
	conn, err = a.reachAgent(ctx)
	if err != nil {
		a.mu.Lock()
		a.failure = "could not be reached: " + err.Error()
		a.mu.Unlock()
		return nil, &AgentError{URN: a.URN, Err: fmt.Errorf("%w: agent %s could not be reached: %w; spawn_agent tries again, at most every %s", ErrUpstreamDown, a.Name, err, reviveEvery)}
	}
	a.mu.Lock()
	if a.sessionEnded.Load() || a.agent != nil {
		a.mu.Unlock()
		conn.Close()
		return a.agentConn()
	}
	a.agent, a.endpoint, a.failure = conn, conn.Endpoint(), ""
	a.mu.Unlock()
	s.m.Log.Info("a pinned agent that could not be reached is up", "session", s.ID, "agent", a.Name)
	return conn, nil
}

// Endpoint says where a is reached: a stdio server's command line, a
// remote's URL (redacted), or an agent's.
func (a *Attachment) Endpoint() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.endpoint
}

// PID returns the process id of a stdio upstream, or 0.
func (a *Attachment) PID() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.up == nil {
		return 0
	}
	return a.up.pid()
}

// Backlog returns the bytes of requests waiting to be written to a stdio
// server that has stopped reading its input; 0 for any other.
func (a *Attachment) Backlog() int {
	a.mu.Lock()
	up := a.up
	a.mu.Unlock()
	if up == nil || up.pipe == nil {
		return 0
	}
	return up.pipe.Backlog()
}

// Tools returns the attachment's exposed tools.
func (a *Attachment) Tools() []Tool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tools
}

func newSession(m *Manager, id string) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{ID: id, m: m, ctx: ctx, cancel: cancel, inflight: map[string]*attaching{}, reserved: map[string]bool{}, ended: make(chan struct{}),
		tasks: a2a.NewStore(a2a.DefaultMaxTasks)}
	for _, p := range m.Pinned {
		a := &Attachment{URN: PinnedURN(p.Name), Name: p.Name, Kind: KindMCPServer, MediaType: config.MediaMCPServerCard, RegistryID: "config", Pinned: true, AttachedAt: time.Now()}
		a.Timeout, _ = time.ParseDuration(p.Timeout) // validated by config
		a.Only = p.Tools
		a.Deferred = m.Deferred
		if p.ToolMode != "" {
			a.Deferred = p.ToolMode == config.ToolModeDeferred
		}
		plan := m.pinnedPlan(p)
		a.endpoint = plan.Endpoint()
		connect := func(ctx context.Context) (*upstream, []Tool, error) { return s.connect(ctx, a, plan, nil) }
		switch {
		case p.Stateless:
			a.release = func() { m.release(a) }
			connect = func(ctx context.Context) (*upstream, []Tool, error) {
				up, list, err := m.shared(ctx, p, s, a)
				if err != nil {
					return nil, nil, err
				}
				return up, a.expose(slices.Clone(list)), nil
			}
		}
		a.reach, a.stdio = connect, plan.Transport == TransportStdio
		s.pin(a, func(ctx context.Context) error {
			up, tools, err := connect(ctx)
			if err == nil {
				a.mu.Lock()
				a.up, a.tools = up, tools
				a.mu.Unlock()
			}
			return err
		})
	}
	for _, p := range m.Agents {
		a := &Attachment{URN: "config:agents/" + p.Name, Name: p.Name, Kind: KindA2AAgent, MediaType: config.MediaA2AAgentCard, RegistryID: "config", Pinned: true,
			endpoint: p.URL, AttachedAt: time.Now(), cardURL: p.URL}
		a.reachAgent = func(ctx context.Context) (*a2a.Conn, error) {
			data, err := m.fetchCard(ctx, p.URL, true)
			if err != nil {
				return nil, err
			}
			return m.dialAgent(ctx, data, true, p.Dialect)
		}
		s.pin(a, func(ctx context.Context) error {
			conn, err := a.reachAgent(ctx)
			if err == nil {
				a.mu.Lock()
				a.agent, a.endpoint = conn, conn.Endpoint()
				a.mu.Unlock()
			}
			return err
		})
	}
	return s
}

// pin adds a pinned attachment, to be started in the background by Start;
// until start returns it is listed as starting, and a failure is kept as
// the reason it is down.
func (s *Session) pin(a *Attachment, start func(ctx context.Context) error) {
	s.atts = append(s.atts, a)
	listed := a.Kind == KindMCPServer && !a.Deferred
	if listed {
		if s.listed == nil {
			s.listed = make(chan struct{})
		}
		s.listedLeft.Add(1)
	}
	a.started = make(chan struct{})
	s.pins = append(s.pins, func() {
		// After changed: by then the session's tools are the server's.
		defer close(a.started)
		if listed {
			defer func() {
				if s.listedLeft.Add(-1) == 0 {
					close(s.listed)
				}
			}()
		}
		// A server the guard refuses is refused again: not retried.
		if err := s.startPinned(a, start, false); err != nil && a.Kind == KindMCPServer && !errors.Is(err, guard.ErrRefused) {
			s.retryPinned(a, start)
		}
	})
}

// startPinned starts a pinned attachment, records how that went, and
// says so; again is set for a start after one that failed (retryPinned),
// which is only told when it succeeds.
func (s *Session) startPinned(a *Attachment, start func(ctx context.Context) error, again bool) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.m.StartTimeout)
	defer cancel()
	err := start(ctx)
	if s.OnPinned != nil && s.ctx.Err() == nil && (err == nil || !again) {
		s.OnPinned(a, err)
	}
	a.mu.Lock()
	a.failure = ""
	if err != nil {
		a.failure = err.Error()
		if !errors.Is(err, ErrStartFailed) { // which says so already
			a.failure = "did not start: " + a.failure
		}
	}
	a.mu.Unlock()
	if err != nil {
		level := slog.LevelError
		if s.ctx.Err() != nil || s.OnPinned != nil || again {
			// The session ended while it started, OnPinned's owner
			// says it, or it was said at the first start.
			level = slog.LevelDebug
		}
		s.m.Log.Log(context.Background(), level, "pinned attachment did not start", "session", s.ID, "name", a.Name, "err", err)
	} else if again {
		s.m.Log.Info("a pinned server that did not start is up", "session", s.ID, "name", a.Name)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	switch {
	case closed:
		a.close() // Close ran while we were starting
	case err == nil || !again: // a start that failed again changed nothing
		s.changed()
	}
	return err
}

// Pinned servers that did not start are started again, pinnedRetry after
// the first start, then at twice the wait each time, up to
// pinnedRetryMost, while the session lasts: one not up as the session
// began (a local server started after the IDE, a download that failed)
// stayed out of it for good, its tools never listed, so no call could
// start it again.
const (
	pinnedRetry     = 5 * time.Second
	pinnedRetryMost = 5 * time.Minute
)

// retryPinned starts a, a pinned server that did not start, again until
// it does or the session ends.
func (s *Session) retryPinned(a *Attachment, start func(ctx context.Context) error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1) // before Close waits: s.closed is false
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(pinnedRetry)
		defer t.Stop()
		for wait := pinnedRetry; ; wait = min(2*wait, pinnedRetryMost) {
			select {
			case <-s.ctx.Done():
				return
			case <-t.C:
			}
			if s.startPinned(a, start, true) == nil {
				return
			}
			t.Reset(min(2*wait, pinnedRetryMost))
		}
	}()
}

// Start begins attaching the session's pinned servers and agents, in the
// background. Set OnChange first: a pinned server may be attached, and
// OnChange run, before Start returns. After Close it starts nothing.
func (s *Session) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // Close's wait has begun, or is done
	}
	s.started.Store(time.Now().UnixNano())
	for _, start := range s.pins {
		s.wg.Go(start)
	}
	s.pins = nil
}

// WaitPinned waits until the session's pinned servers whose tools are
// listed have started or failed. It gives up when ctx ends or when within
// has passed since Start, at once if it already has. A client's first
// tools/list waits here, so that it has their tools.
func (s *Session) WaitPinned(ctx context.Context, within time.Duration) {
	s.waitUntil(ctx, s.listed, within)
}

// PinnedPending reports whether WaitPinned would wait now.
func (s *Session) PinnedPending(within time.Duration) bool {
	return s.pending(s.listed, within)
}

// WaitStarted waits until a, a pinned attachment of the session, has
// started or failed, giving up as WaitPinned does; at once for an
// attachment that is not pinned. A call of a tool of a pinned server
// still starting waits here, so that a client calling a tool it knows
// right after initialize is served.
func (s *Session) WaitStarted(ctx context.Context, a *Attachment, within time.Duration) {
	s.waitUntil(ctx, a.started, within)
}

// Starting reports whether WaitStarted would wait now.
func (s *Session) Starting(a *Attachment, within time.Duration) bool {
	return s.pending(a.started, within)
}

// waitUntil waits for done to close, for ctx to end, or for within to pass
// since Start (from now, before Start); at once when done is nil.
func (s *Session) waitUntil(ctx context.Context, done <-chan struct{}, within time.Duration) {
	if done == nil {
		return
	}
	left := within
	if t := s.started.Load(); t != 0 {
		left = time.Until(time.Unix(0, t).Add(within))
	}
	if left <= 0 {
		return
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// pending reports whether waitUntil would wait now.
func (s *Session) pending(done <-chan struct{}, within time.Duration) bool {
	if done == nil {
		return false
	}
	if t := s.started.Load(); t != 0 && time.Since(time.Unix(0, t)) >= within {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// PinnedURN names a pinned server in listings.
func PinnedURN(name string) string { return "config:servers/" + name }

func (m *Manager) pinnedPlan(p config.Server) Plan {
	if p.URL != "" {
		headers := p.Headers
		if p.Token != "" {
			headers = maps.Clone(p.Headers)
			if headers == nil {
				headers = map[string]string{}
			}
			headers["Authorization"] = "Bearer " + p.Token
		}
		transport := TransportStreamableHTTP
		if p.Transport == config.TransportSSE {
			transport = TransportSSE
		}
		return Plan{Transport: transport, URL: p.URL, Headers: headers, Own: true}
	}
	// Values set in the config come after those passed on, and so win:
	// exec.Cmd keeps the last of a repeated name.
	env := m.Stdio.Env(p.Env)
	for _, k := range slices.Sorted(maps.Keys(p.EnvValues)) {
		env = append(env, k+"="+p.EnvValues[k])
	}
	return Plan{Transport: TransportStdio, Program: p.Command, Args: p.Args, Env: env, Framing: p.Framing}
}

// Request asks for one attachment.
type Request struct {
	// URN of the entry to attach.
	URN string
	// RegistryID limits the lookup to one registry; empty tries each.
	RegistryID string
	// Name overrides the attachment name derived from the URN.
	Name string
	// Progress, if set, hears each stage of the attach.
	Progress func(stage string)
	// Consent, if set, asks the user before a launch that Manager.Consent
	// asks about; unset, no one is asked (consent.go).
	Consent Consent
}

// Attach attaches the entry req names. It reports already=true, and does
// nothing, when the URN is attached and up; a URN whose upstream is down is
// attached again under the same name.
func (s *Session) Attach(ctx context.Context, req Request) (a *Attachment, already bool, err error) {
	if _, err := registry.ParseURN(req.URN); err != nil {
		return nil, false, err
	}
	key := registry.CanonicalURN(req.URN)
	ctx, cur, stale, at, err := s.begin(ctx, key, &req)
	if cur != nil || err != nil {
		return cur, cur != nil, err
	}
	defer at.release()
	if stale != nil {
		stale.close()
		s.changed()
	}
	a, err = s.open(ctx, key, req, at.Name)
	if err != nil {
		return nil, false, s.attachFailed(ctx, key, err)
	}
	if err := s.settle(at, a); err != nil {
		return nil, false, err
	}
	s.m.Log.Debug("attached", "session", s.ID, "urn", key, "name", at.Name, "endpoint", a.Endpoint(), "tools", len(a.Tools()))
	s.changed()
	return a, false, nil
}

// begin takes key's turn to attach in the session: it waits for an attach
// of key under way to end, takes a down attachment of key out to replace
// it (stale), and holds a name, req.Name or one made of key, until the
// attach ends (at.release). cur is key's attachment when it is up, and
// nothing is held. The context returned is the attach's: it ends with
// ctx, the session, or a detach of it (at.stop), whichever goes first.
func (s *Session) begin(ctx context.Context, key string, req *Request) (_ context.Context, cur, stale *Attachment, at *attaching, err error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ctx, nil, nil, nil, ErrSessionClosed
		}
		if cur := s.findLocked(key); cur != nil {
			if st, _ := cur.Status(); st != StatusDown {
				s.mu.Unlock()
				return ctx, cur, nil, nil, nil
			}
			// Down: replace it, keeping its name unless told otherwise.
			if cur.Pinned {
				s.mu.Unlock()
				return ctx, nil, nil, nil, fmt.Errorf("%s is %w and down; restart the gateway session to restart it", cur.Name, ErrPinned)
			}
			stale = cur
			s.atts = slices.DeleteFunc(s.atts, func(x *Attachment) bool { return x == cur })
			if req.Name == "" {
				req.Name = cur.Name
			}
		}
		if other, busy := s.inflight[key]; busy {
			s.mu.Unlock()
			select {
			case <-other.done:
				continue
			case <-ctx.Done():
				return ctx, nil, nil, nil, ctx.Err()
			}
		}
		ctx, at, err := s.holdLocked(ctx, key, req.Name)
		s.mu.Unlock()
		return ctx, nil, stale, at, err
	}
}

// holdLocked records an attach of key under way, under asked or a name
// made of key, within the session's cap; s.mu is held.
func (s *Session) holdLocked(ctx context.Context, key, asked string) (context.Context, *attaching, error) {
	if n := s.countLocked(); n >= s.m.MaxAttachments {
		return ctx, nil, fmt.Errorf("%w: this session has %d of %d attachments; detach one with detach_resource first", ErrCapReached, n, s.m.MaxAttachments)
	}
	name, err := s.reserveNameLocked(asked, key)
	if err != nil {
		return ctx, nil, err
	}
	ctx, stop := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(s.ctx, func() { stop(nil) })
	at := &attaching{Underway: Underway{URN: key, Name: name, Since: time.Now()}, done: make(chan struct{}), stop: stop}
	at.release = func() {
		s.mu.Lock()
		if s.inflight[key] == at { // not yet settled
			delete(s.inflight, key)
			delete(s.reserved, name)
		}
		s.mu.Unlock()
		close(at.done)
		s.wg.Done()
		unhook()
		stop(nil)
	}
	s.inflight[key] = at
	s.wg.Add(1)
	return ctx, at, nil
}

// attachFailed says why the attach of key failed with err, ctx being the
// attach's.
func (s *Session) attachFailed(ctx context.Context, key string, err error) error {
	switch {
	case s.ctx.Err() != nil:
		// Its start was cut short by the session's end, not the server.
		return fmt.Errorf("attach %s: %w while it was starting", key, ErrSessionClosed)
	case errors.Is(context.Cause(ctx), errStopped):
		return fmt.Errorf("attach %s: %w", key, errStopped)
	case ctx.Err() != nil:
		// Its caller gave up (the client cancelled, or went away): said
		// as such, not as the server's failure to start.
		return fmt.Errorf("attach %s: its request ended before the server started: %w", key, Cancelled(context.Cause(ctx)))
	}
	return fmt.Errorf("attach %s: %w", key, err)
}

// settle adds a, attached, to the session, or closes it when a detach
// stopped it as it started, or the session closed: in one step with the
// record of it under way, so that a detach finds it as the one or the
// other, never both nor neither.
func (s *Session) settle(at *attaching, a *Attachment) error {
	s.mu.Lock()
	stopped := at.stopped
	if !s.closed && !stopped {
		s.atts = append(s.atts, a)
		delete(s.inflight, at.URN)
		delete(s.reserved, at.Name)
	}
	closed := s.closed
	s.mu.Unlock()
	switch {
	case closed:
		a.close()
		return ErrSessionClosed
	case stopped:
		a.close()
		return fmt.Errorf("attach %s: %w", at.URN, errStopped)
	}
	return nil
}

func (s *Session) open(ctx context.Context, urn string, req Request, name string) (*Attachment, error) {
	progress := func(stage string) {
		if req.Progress != nil {
			req.Progress(stage)
		}
	}
	progress("resolving")
	e, regID, err := s.m.Resolve(ctx, urn, req.RegistryID)
	if err != nil {
		return nil, err
	}
	if err := s.m.checkType(e.Type); err != nil {
		return nil, err
	}
	report, err := s.m.Trust.Check(e.Publisher(), e.TrustManifest)
	if err != nil {
		return nil, err
	}
	if err := s.m.Trust.VerifyDigests(ctx, e.TrustManifest, &report); err != nil {
		return nil, err
	}
	var trust *guard.TrustReport
	if len(e.TrustManifest) > 0 || len(report.Required) > 0 {
		trust = &report
	}
	if KindOf(e.Type) == KindA2AAgent {
		progress("fetching card")
		data, err := s.m.agentCard(ctx, &e)
		if err != nil {
			return nil, err
		}
		conn, err := s.m.dialAgent(ctx, data, false, "")
		if err != nil {
			return nil, err
		}
		return &Attachment{URN: urn, Name: name, Kind: KindA2AAgent, MediaType: e.Type, RegistryID: regID,
			endpoint: conn.Endpoint(), AttachedAt: time.Now(), agent: conn, cardURL: e.URL, Trust: trust, EntryStatus: e.Status, EntryStatusMessage: e.StatusMessage}, nil
	}
	progress("fetching card")
	card, err := s.m.card(ctx, &e)
	if err != nil {
		return nil, err
	}
	plan, err := planFor(card, regID, &s.m.Stdio)
	if err != nil {
		return nil, err
	}
	if plan, err = s.authorized(urn, plan); err != nil {
		return nil, err
	}
	if err := s.m.consent(ctx, req.Consent, Launch{URN: urn, RegistryID: regID, Publisher: e.Publisher(), Keys: keyNames(plan.Keys), Trust: report}, plan); err != nil {
		return nil, err
	}
	of := keysFor{URN: urn, RegistryID: regID, pkg: plan.packageID}
	if plan, err = s.keyed(ctx, of, plan); err != nil {
		return nil, err
	}
	a := &Attachment{URN: urn, Name: name, Kind: KindMCPServer, MediaType: e.Type, RegistryID: regID, endpoint: plan.Endpoint(),
		AttachedAt: time.Now(), Deferred: s.m.Deferred, Trust: trust, EntryStatus: e.Status, EntryStatusMessage: e.StatusMessage}
	a.reach = func(ctx context.Context) (*upstream, []Tool, error) { return s.connect(ctx, a, plan, nil) }
	a.stdio = plan.Transport == TransportStdio
	progress("starting")
	ctx, cancel := context.WithTimeout(ctx, s.m.StartTimeout)
	defer cancel()
	up, tools, err := s.connect(ctx, a, plan, progress)
	if err != nil {
		err = s.keysFailed(ctx, of, plan, s.authFailed(ctx, urn, plan, err))
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("%w: the server did not start within %s: %w", ErrTimeout, s.m.StartTimeout, err)
		}
		return nil, err
	}
	a.up, a.tools = up, tools
	return a, nil
}

// connect dials the upstream and lists its tools; it also arranges for the
// upstream's own tools/list_changed to refresh them.
func (s *Session) connect(ctx context.Context, a *Attachment, plan Plan, progress func(string)) (*upstream, []Tool, error) {
	up, list, err := s.m.open(ctx, plan, s.m.Log.With("session", s.ID, "upstream", a.Name), progress,
		watch{listsChanged: func() { s.refresh(a) }, log: func(m LogMessage) { s.log(a, m) }, updated: func(uri string) { s.updated(a, uri) },
			requests: s.clientRequests()})
	if err != nil {
		return nil, nil, err
	}
	return up, a.expose(list), nil
}

// refresh re-lists an attachment's tools, prompts and resources after the
// upstream said some changed.
func (s *Session) refresh(a *Attachment) {
	a.mu.Lock()
	up := a.up
	a.mu.Unlock()
	if up == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	up.listOffers(ctx)
	list, err := up.listTools(ctx)
	if err != nil {
		s.m.Log.Warn("re-listing tools failed", "session", s.ID, "upstream", a.Name, "err", err)
		s.changed() // the prompts and resources may have
		return
	}
	a.mu.Lock()
	a.tools = a.expose(list)
	a.mu.Unlock()
	s.changed()
}

// expose names the upstream's tools for this session (exposedNames),
// those of a.Only when it is set, in upstream-name order.
func (a *Attachment) expose(list []*Definition) []Tool {
	list = slices.DeleteFunc(list, func(t *Definition) bool {
		return a.Only != nil && !slices.ContainsFunc(a.Only, func(p string) bool { ok, _ := path.Match(p, t.Name); return ok })
	})
	out := make([]Tool, 0, len(list))
	eachNamed(&a.toolNames, a.Name, list, func(t *Definition) string { return t.Name }, func(t *Definition, name string) {
		out = append(out, Tool{Name: name, Attachment: a.Name, Upstream: t})
	})
	return out
}

func (s *Session) findLocked(urn string) *Attachment {
	for _, a := range s.atts {
		if a.URN == urn {
			return a
		}
	}
	return nil
}

func (s *Session) countLocked() int {
	n := 0
	for _, at := range s.inflight {
		if !at.stopped {
			n++
		}
	}
	for _, a := range s.atts {
		if !a.Pinned {
			n++
		}
	}
	return n
}

// reserveNameLocked picks the attachment name: the one asked for, which
// must be free, or one derived from the URN's last segment, made unique
// with a numeric suffix.
func (s *Session) reserveNameLocked(asked, urn string) (string, error) {
	taken := func(n string) bool {
		return s.reserved[n] || slices.ContainsFunc(s.atts, func(a *Attachment) bool { return a.Name == n })
	}
	if asked != "" {
		n := serverName(asked)
		if taken(n) {
			shown := strconv.Quote(n)
			if n != asked { // said as the name it became, or it reads as a different one
				shown = fmt.Sprintf("%q (the name %q becomes)", n, asked)
			}
			if slices.ContainsFunc(s.atts, func(a *Attachment) bool { return a.Name == n && a.Pinned }) {
				return "", fmt.Errorf("%w: %s is a server pinned in the gateway's config; pick another name", ErrNameTaken, shown)
			}
			return "", fmt.Errorf("%w: %s; pick another name or detach that attachment", ErrNameTaken, shown)
		}
		s.reserved[n] = true
		return n, nil
	}
	u, _ := registry.ParseURN(urn)
	base := serverName(u.Name)
	n := base
	for i := 2; taken(n); i++ {
		n = fmt.Sprintf("%s_%d", base, i)
	}
	s.reserved[n] = true
	return n, nil
}

// attaching is an attach under way.
type attaching struct {
	Underway
	done    chan struct{}           // closed once it has ended
	stop    context.CancelCauseFunc // ends it, with errStopped for a detach
	stopped bool                    // by a detach; guarded by the session's mu
	release func()                  // ends its hold on the session, once it has ended
}

// errStopped ends an attach that a detach stopped while it was starting.
var errStopped = fmt.Errorf("%w: detach_resource stopped it while it was starting", ErrNotAttached)

// Underway is an attach under way, as listings show it.
type Underway struct {
	URN, Name string
	Since     time.Time
}

// Underway lists the attaches under way, oldest first: an npx download
// takes a while, and listings showed nothing of it meanwhile.
func (s *Session) Underway() []Underway {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Underway, 0, len(s.inflight))
	for _, at := range s.inflight {
		if !at.stopped {
			out = append(out, at.Underway)
		}
	}
	slices.SortFunc(out, func(a, b Underway) int { return a.Since.Compare(b.Since) })
	return out
}

// Detach removes the attachment with that URN or name and ends its
// upstream; or, when none is attached, stops the attach under way of it,
// and says which (stopped), a being nil: its Attach ends with
// ErrNotAttached, and, stopped, it is no longer listed (Underway) nor
// counted, though its server may take a few seconds to end.
//
// Detaching an agent first cancels the session's tasks still running at
// it (cancelled tells how many): once detached, nothing could.
func (s *Session) Detach(urnOrName string) (a *Attachment, cancelled int, stopped *Underway, err error) {
	key := registry.CanonicalURN(urnOrName)
	s.mu.Lock()
	i := slices.IndexFunc(s.atts, func(a *Attachment) bool { return a.URN == key || a.Name == urnOrName })
	if i < 0 {
		for _, at := range s.inflight {
			if !at.stopped && (at.URN == key || at.Name == urnOrName) {
				at.stopped = true
				at.stop(errStopped)
				s.mu.Unlock()
				u := at.Underway
				return nil, 0, &u, nil
			}
		}
		names := make([]string, 0, len(s.atts))
		for _, a := range s.atts {
			names = append(names, a.Name)
		}
		s.mu.Unlock()
		return nil, 0, nil, fmt.Errorf("%q is %w in this session%s; list_attached_resources shows what is", urnOrName, ErrNotAttached, attachedNames(urnOrName, names))
	}
	a = s.atts[i]
	if a.Pinned {
		s.mu.Unlock()
		return nil, 0, nil, fmt.Errorf("%s is %w and cannot be detached", a.Name, ErrPinned)
	}
	s.atts = slices.Delete(s.atts, i, i+1)
	maps.DeleteFunc(s.subs, func(_ string, at *Attachment) bool { return at == a })
	s.mu.Unlock()
	a.removed.Store(true)
	if a.Kind == KindA2AAgent {
		cancelled = s.cancelUnfinished(a)
	}
	a.close()
	s.m.Log.Debug("detached", "session", s.ID, "urn", a.URN, "name", a.Name, "tasks_cancelled", cancelled)
	s.changed()
	return a, cancelled, nil, nil
}

// attachedNames tells, for a detach of asked that found nothing, the
// names attached: a model that builds a name from a URN wrote
// "remote-fixture" for remote_fixture, and was told only "not attached".
func attachedNames(asked string, names []string) string {
	if len(names) == 0 {
		return ", which has nothing attached"
	}
	fold := func(s string) string { return strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToLower(s)) }
	for _, n := range names {
		if fold(n) == fold(asked) {
			return fmt.Sprintf(": did you mean %s?", n)
		}
	}
	if len(names) > 10 {
		return fmt.Sprintf(", which has %s and %d more attached", strings.Join(names[:10], ", "), len(names)-10)
	}
	return ", which has " + strings.Join(names, ", ") + " attached"
}

func (a *Attachment) close() {
	a.mu.Lock()
	up, agent := a.up, a.agent
	a.agent = nil
	a.mu.Unlock()
	switch {
	case a.release != nil:
		a.release() // a shared connection stays for the other sessions
	case up != nil:
		up.close()
	}
	if agent != nil {
		agent.Close()
	}
}

// detached tells whether the attachment was closed by a detach or its
// session's end.
func (a *Attachment) detached() bool {
	a.mu.Lock()
	up := a.up
	a.mu.Unlock()
	return up != nil && up.downReason() == detachedReason
}

// Attaching tells whether an attach still under way holds name.
func (s *Session) Attaching(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reserved[name]
}

// Attachments returns the session's attachments, pinned first.
func (s *Session) Attachments() []*Attachment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.atts)
}

// Tools returns every exposed tool of the session, deferred ones too.
func (s *Session) Tools() []Tool {
	var out []Tool
	for _, a := range s.Attachments() {
		out = append(out, a.Tools()...)
	}
	return out
}

// ListedTools returns the tools that belong in tools/list: those of
// attachments not in deferred mode.
func (s *Session) ListedTools() []Tool {
	var out []Tool
	for _, a := range s.Attachments() {
		if !a.Deferred {
			out = append(out, a.Tools()...)
		}
	}
	return out
}

// Max returns the session's attachment cap.
func (s *Session) Max() int { return s.m.MaxAttachments }

// Call forwards a call of an exposed tool to its upstream, within the
// manager's call timeout. onProgress hears the upstream's progress for the
// caller's progress token.
func (s *Session) Call(ctx context.Context, name string, args any, meta *mcp.Meta, onProgress func(mcp.JSONRPCNotification)) (*mcp.CallToolResult, error) {
	var progress *Progress
	if meta != nil && meta.ProgressToken != nil && onProgress != nil {
		progress = &Progress{Token: meta.ProgressToken, To: onProgress}
	}
	var res *mcp.CallToolResult
	err := s.call(ctx, name, progress, func(ctx context.Context, up *upstream, tool string) (err error) {
		res, err = up.call(ctx, tool, args, meta, progress)
		return err
	})
	return res, err
}

// CallRaw is Call for the gateway's fast path: the arguments go to the
// upstream as the client sent them, and its result comes back as the JSON
// it sent, so nothing is decoded into structures and encoded again on
// the way through. meta, the client's _meta as it sent it (an object, or
// nil), goes on but for the members the gateway sets. progress, when not
// nil, hears the upstream's progress on the call.
func (s *Session) CallRaw(ctx context.Context, name string, args, meta json.RawMessage, progress *Progress) (json.RawMessage, error) {
	var res json.RawMessage
	err := s.call(ctx, name, progress, func(ctx context.Context, up *upstream, tool string) (err error) {
		res, err = up.callRaw(ctx, tool, args, meta, progress)
		return err
	})
	return res, err
}

// call routes an exposed tool to its upstream and runs do within the
// call's time limits (clock.go), turning what went wrong into a sentence
// that says what to do. progress is the call's, if it asked for it.
func (s *Session) call(ctx context.Context, name string, progress *Progress, do func(context.Context, *upstream, string) error) error {
	att, tool := s.route(name)
	if att == nil {
		return fmt.Errorf("%q: %w", name, ErrUnknownTool)
	}
	return s.run(ctx, att, tool, progress, do)
}

// run runs do with att's live upstream and what, the tool (or the prompt
// or resource) asked for, within the time limits of a call to it.
func (s *Session) run(ctx context.Context, att *Attachment, what string, progress *Progress, do func(context.Context, *upstream, string) error) error {
	att.mu.Lock()
	up := att.up
	att.mu.Unlock()
	if up == nil {
		return fmt.Errorf("%s is still starting; try again shortly", att.Name)
	}
	if up.downReason() != "" {
		// Before the call's clock: a start is bounded by start_timeout,
		// and one slower than call_timeout never came back.
		if fresh := s.revive(ctx, att, up); fresh != nil {
			up = fresh
		}
	}
	limits := s.limits(att)
	start := time.Now()
	ctx, cancel := limits.within(ctx, progress, up.clientWait())
	defer cancel()
	err := do(ctx, up, what)
	var out error
	if context.Cause(ctx) == errOutOfTime {
		out = limits.outOfTime(att, what, time.Since(start), progress)
	}
	return callError(att, what, err, out)
}

// reviveEvery is how often a call may try to start or reach a server
// that went down again.
const reviveEvery = 5 * time.Second

// nextRevive is how long until a call may try to start or reach a's
// server again; 0 for at once.
func (a *Attachment) nextRevive() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return max(0, reviveEvery-time.Since(a.revived))
}

// revive starts att's stdio server, or connects its remote one, anew
// after it went down with up, and returns the new upstream, or nil when
// it may not or could not: a server that crashed, or a remote restarted
// (a deploy), left its attachment down for good, and a pinned one could
// not even be attached again. A call tries at most every reviveEvery, so
// that a server that dies as it starts costs a start every 5 s at most,
// and only while called. A shared connection is dialled again once for
// all the sessions that use it (Manager.shared), and is the manager's to
// close. Nothing detached or of an ended session is revived.
func (s *Session) revive(ctx context.Context, att *Attachment, up *upstream) *upstream {
	att.mu.Lock()
	reach := att.reach
	if reach == nil || att.up != up || up.downReason() == detachedReason || att.sessionEnded.Load() || time.Since(att.revived) < reviveEvery {
		att.mu.Unlock()
		return nil
	}
	att.revived = time.Now()
	att.mu.Unlock()
	// Within start_timeout, as an attach is, and no longer than the
	// session: a process started after Close returned was never ended.
	ctx, cancel := context.WithTimeout(ctx, s.m.StartTimeout)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	fresh, tools, err := reach(ctx)
	if err != nil {
		s.m.Log.Debug("a server that went down could not be started or reached again", "session", s.ID, "upstream", att.Name, "err", err)
		return nil
	}
	s.mu.Lock()
	att.mu.Lock()
	installed := !s.closed && slices.Contains(s.atts, att) && att.up == up
	if installed {
		att.up, att.tools = fresh, tools
	}
	att.mu.Unlock()
	var subs []string
	if installed {
		subs = s.subscribedAt(att)
	}
	s.mu.Unlock()
	shared := att.release != nil
	if !installed {
		if !shared {
			fresh.close()
		}
		return nil
	}
	s.m.Log.Info("a server that went down is up again", "session", s.ID, "upstream", att.Name, "was", up.downReason(), "shared", shared, "pid", fresh.pid())
	if !shared {
		go up.close()
	}
	s.changed()
	s.resubscribe(ctx, att, subs)
	return fresh
}

// StartRaw is CallRaw without waiting, where the tool's upstream is a
// stdio server: done hears the result or the error once, on whichever
// goroutine ended the call, and stop ends it early with cause. args are
// used only until StartRaw returns. ok is false for any other upstream,
// or one that is down or still starting; CallRaw then serves the call,
// and says what is wrong.
//
// A caller that has more calls at hand passes a batch b: the request is
// held in it, and goes upstream with the others when b is flushed (see
// jsonrpc.FrameWriter). A nil b writes it now. progress, when not nil,
// hears the upstream's progress until done is called. StartRaw takes no
// context, and so makes no trace span: a traced call takes CallRaw.
func (s *Session) StartRaw(name string, args, meta json.RawMessage, progress *Progress, b *jsonrpc.Batch, done RawDone) (stop func(cause error), ok bool) {
	att, up, tool, limits := s.target(name)
	if up == nil {
		return nil, false
	}
	return up.startRaw(att, tool, args, meta, progress, limits, b, done)
}

// RawDone hears how a call that StartRaw started ended, once: its result
// or its error. A result is the bytes the upstream's pipe was read into,
// valid only until RawDone returns, which lets a small result go on to
// the client without a copy. While b is not nil, the reader that read the
// result has more at hand: a frame written with b (jsonrpc.FrameWriter)
// goes out with the others when that reader has none left.
type RawDone func(res json.RawMessage, err error, b *jsonrpc.Batch)

// target finds what serves an exposed tool: its attachment (nil for none),
// the live upstream (nil while starting), the upstream's name for the tool,
// and the call's time limits.
func (s *Session) target(name string) (att *Attachment, up *upstream, tool string, limits callLimits) {
	att, tool = s.route(name)
	if att == nil {
		return nil, nil, "", limits
	}
	att.mu.Lock()
	up = att.up
	att.mu.Unlock()
	return att, up, tool, s.limits(att)
}

// timeout bounds one request to a's upstream: its own timeout, or the
// manager's call timeout.
func (s *Session) timeout(a *Attachment) time.Duration { return cmp.Or(a.Timeout, s.m.CallTimeout) }

// errNoAnswer is a request to a's upstream that timeout ended.
func errNoAnswer(a *Attachment, what string, timeout time.Duration) error {
	return fault.NoAnswer(a.Name, what, timeout)
}

// callError turns what went wrong with a call into a sentence that says
// what to do. out, when not nil, says how the call ran out of time.
func callError(att *Attachment, tool string, err, out error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUpstreamDown) && att.sessionEnded.Load():
		return fmt.Errorf("%s: %w while %s was running on it", att.Name, ErrSessionClosed, tool)
	case errors.Is(err, ErrUpstreamDown) && att.reach != nil && !att.detached():
		// When, for a model retrying at once: it was told "again" and got
		// the same error.
		when := ""
		if wait := att.nextRevive(); wait > 0 {
			when = fmt.Sprintf(", %s from now", wait.Round(100*time.Millisecond))
		}
		if att.stdio {
			return fmt.Errorf("%s: %w; the next call starts it again%s (at most every %s)", att.Name, err, when, reviveEvery)
		}
		return fmt.Errorf("%s: %w; a call tries to reach it again%s, at most every %s: try again once it is back", att.Name, err, when, reviveEvery)
	case errors.Is(err, ErrUpstreamDown):
		return fmt.Errorf("%s: %w; attach_resource %s again to restart it", att.Name, err, att.URN)
	case out != nil:
		return out
	case errors.Is(err, jsonrpc.ErrBacklog):
		return fmt.Errorf("%s has stopped reading its input, so %s was not sent (%w); try again once its calls in flight have ended", att.Name, tool, err)
	case errors.Is(err, fault.ErrAnswerTooLarge):
		// Said without whose answer it was.
		return fmt.Errorf("%s: its answer to %s: %w; ask it for less", att.Name, tool, err)
	case errors.Is(err, mcpwire.ErrMalformedAnswer):
		return fmt.Errorf("%s: its answer to %s: %w", att.Name, tool, err)
	}
	return err
}

// route finds the attachment serving an exposed tool and the upstream's
// name for it, without copying the session's lists: it runs on every call.
func (s *Session) route(name string) (*Attachment, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.atts {
		a.mu.Lock()
		for _, t := range a.tools {
			if t.Name == name {
				a.mu.Unlock()
				return a, t.Upstream.Name
			}
		}
		a.mu.Unlock()
	}
	return nil, ""
}

// Close ends the session: attaches in flight are cancelled, every upstream
// is closed (stdio children killed with their process groups), in
// parallel. It returns when all of it is done, also when another Close
// began it: the gateway's exit waits for the shutdown's.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.ended
		return
	}
	s.closed = true
	defer close(s.ended)
	atts := s.atts
	s.atts = nil
	s.mu.Unlock()
	s.auth.close()
	s.keys.close()
	for _, a := range atts {
		a.sessionEnded.Store(true)
	}
	s.cancel()
	// The servers end at once, and their calls with them (answered, over
	// HTTP, before the server closes their streams), while the tasks
	// still running are cancelled at their agents, which are closed after.
	var wg sync.WaitGroup
	for _, a := range atts {
		if a.Kind != KindA2AAgent {
			wg.Go(a.close)
		}
	}
	s.cancelUnfinished(nil)
	for _, a := range atts {
		if a.Kind == KindA2AAgent {
			wg.Go(a.close)
		}
	}
	wg.Wait()
	s.wg.Wait()
	s.m.forget(s)
	if len(atts) > 0 {
		s.m.Log.Info("session closed", "session", s.ID, "attachments", len(atts))
	}
}

func (s *Session) changed() {
	s.passLevel()
	if s.OnChange != nil {
		s.OnChange()
	}
}
