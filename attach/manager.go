// Package attach keeps each session's attachments, MCP servers and A2A
// agents, and their lifecycle from attach to teardown: resolving and
// launching them, naming their tools, relaying calls, prompts and
// resources, reviving what went down, and ending it all with the session.
// A package's keys the operator did not set it asks of the user on a page
// of its own (keys.go).
//
// The wire concerns are its subpackages': attach/mcpwire speaks to MCP
// servers, attach/a2a to agents and keeps their tasks, attach/oauth
// authorizes remotes that answer 401 (auth.go), attach/credstore keeps
// their grants across restarts when the operator asks (grants.go),
// attach/fault names the failures they share. attach imports them, and
// they never import attach. Beyond them it imports mcp-go, a2a-go (to
// trace an agent's requests), and ardgate's config, guard and registry.
package attach

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/tracing"

	"github.com/ardgate/ardgate/attach/a2a"
	"github.com/ardgate/ardgate/attach/credstore"
	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/attach/mcpwire"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
)

// Sentinel errors callers test for.
var (
	ErrUnknownURN     = errors.New("no configured registry has this URN")
	ErrUnknownTool    = errors.New("no attached tool has this name")
	ErrNotAttached    = errors.New("not attached")
	ErrPinned         = errors.New("pinned by the operator")
	ErrCapReached     = errors.New("attachment cap reached")
	ErrNameTaken      = errors.New("name already used in this session")
	ErrUpstreamDown   = fault.ErrUpstreamDown
	ErrStartFailed    = errors.New("the server did not start")
	ErrTimeout        = fault.ErrTimeout
	ErrSessionClosed  = errors.New("session closed")
	ErrNotImplemented = fault.ErrNotImplemented
)

// Kinds of attachment.
const (
	KindMCPServer = "mcp_server"
	KindA2AAgent  = "a2a_agent"
)

// Manager holds what every session shares: registries, policy and limits.
// Set its fields before the first NewSession; they are read-only after.
type Manager struct {
	// Registries are tried in this order when no registry id is given.
	Registries []registry.Registry
	// Stdio is the launch policy for local servers.
	Stdio guard.Stdio
	// Trust is the trust gate every entry passes before it is attached.
	Trust guard.Trust
	// HTTP makes every outgoing request (cards, remote MCP servers and
	// agents) but those to what the operator configured.
	HTTP *http.Client
	// OwnHTTP makes the requests to the pinned servers and agents, through
	// a dialer that reaches the operator's own addresses
	// (guard.Dialer.Own): what a registry names, or a redirect from a
	// server it names, goes through HTTP, which does not. nil means HTTP.
	OwnHTTP *http.Client
	// AllowTypes lists the attachable media types.
	AllowTypes []string
	// MaxAttachments caps a session's non-pinned attachments.
	MaxAttachments int
	// CallTimeout bounds one proxied tool call; a call that asked for
	// progress gets it again at each progress (clock.go).
	CallTimeout time.Duration
	// MaxCallTime bounds a call whatever progress it reports; zero means
	// config.DefaultMaxCallTime, or CallTimeout if that is longer.
	MaxCallTime time.Duration
	// Deferred keeps attached tools out of tools/list by default (they are
	// found with tool_search); pinned servers may say otherwise.
	Deferred bool
	// StartTimeout bounds starting an upstream (npx may download first).
	StartTimeout time.Duration
	// RegistryDeadline bounds each registry's answer to a search or a
	// lookup; zero means DefaultRegistryDeadline.
	RegistryDeadline time.Duration
	// Dialer is HTTP's dialer (allow_local_urls, the operator's own
	// addresses): Assess tells of an endpoint its first step refuses
	// before the attach (guard.Dialer.CheckAddr). nil checks as a dialer
	// of no options does.
	Dialer *guard.Dialer
	// Consent says which launches the user is asked to consent to
	// (consent.go): config.ConsentNever, ConsentRemoteRegistries (also
	// when empty) or ConsentAlways.
	Consent string
	// Credentials, when set, keeps the OAuth grants and the packages'
	// keys users give across restarts (grants.go, keys.go); nil keeps
	// them in each session's memory only.
	Credentials *credstore.Store
	// Pinned servers are attached to every session.
	Pinned []config.Server
	// Agents are pinned A2A agents; their tokens also serve agents attached
	// from registries at the same origin.
	Agents []config.Agent
	// Version is reported to upstreams as the client version.
	Version string
	// ClientOptions are added to every upstream MCP client: tracing, when
	// it is on (tools.Tracing.ClientOptions).
	ClientOptions []client.ClientOption
	// Tracing, when it is on, traces the calls that go around that client
	// (tools.Tracing.Upstream).
	Tracing *CallTracing
	// Log receives lifecycle events.
	Log *slog.Logger

	mu       sync.Mutex
	sessions map[*Session]struct{}
	// sharedConns are the connections to stateless pinned servers, by
	// name (shared.go).
	sharedConns map[string]*sharedConn
	// conns are the connections proxied calls to plain-http servers go
	// out on (mcpwire/http1.go).
	conns mcpwire.Conns
	// tools are the tool definitions upstreams listed, shared
	// (tooldefs.go).
	tools toolDefs
}

// New builds a Manager from the configuration. hc must be the guarded
// client: it makes every outgoing request.
func New(cfg *config.Config, regs []registry.Registry, hc *http.Client, log *slog.Logger, version string) *Manager {
	m := &Manager{
		Registries: regs,
		Stdio: guard.Stdio{AllowFrom: cfg.Stdio.AllowFrom, Launchers: cfg.Stdio.Launchers, PassEnv: cfg.Stdio.Env,
			Limits: guard.Rlimits{MemoryMiB: cfg.Stdio.MemoryMiB, CPUSeconds: cfg.Stdio.CPUSeconds, OpenFiles: cfg.Stdio.OpenFiles, FileMiB: cfg.Stdio.FileMiB}},
		HTTP:           hc,
		AllowTypes:     cfg.AllowAttachTypes,
		MaxAttachments: cfg.MaxAttachments,
		CallTimeout:    cfg.CallTimeout,
		MaxCallTime:    cfg.MaxCallTime,
		StartTimeout:   cfg.StartTimeout,
		Deferred:       cfg.ToolMode == config.ToolModeDeferred,
		Consent:        cfg.Consent,
		Pinned:         cfg.Servers,
		Agents:         cfg.Agents,
		Version:        version,
		Log:            log,
	}
	m.Trust = guard.Trust{Require: cfg.RequireTrust, Fetch: m.fetch}
	return m
}

// Registry returns the registry with that id.
func (m *Manager) Registry(id string) (registry.Registry, bool) {
	for _, r := range m.Registries {
		if r.ID() == id {
			return r, true
		}
	}
	return nil, false
}

// Resolve finds the entry for urn in the given registry, or in each
// registry in config order when registryID is empty.
func (m *Manager) Resolve(ctx context.Context, urn, registryID string) (registry.Entry, string, error) {
	if _, err := registry.ParseURN(urn); err != nil {
		return registry.Entry{}, "", err
	}
	regs := m.Registries
	if registryID != "" {
		r, ok := m.Registry(registryID)
		if !ok {
			return registry.Entry{}, "", fmt.Errorf("registry %q is not configured; configured: %v", registryID, m.registryIDs())
		}
		regs = []registry.Registry{r}
	}
	var errs []error
	var searched []string
	for _, r := range regs {
		e, err := m.lookup(ctx, r, urn)
		if err == nil {
			return e, r.ID(), nil
		}
		if !errors.Is(err, registry.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		searched = append(searched, r.ID())
	}
	// A catalog's referral is not an entry, but discover_resources lists
	// it: it resolves, to be refused as a registry (checkType).
	for _, r := range regs {
		if l, ok := r.(*registry.Local); ok {
			for _, ref := range l.Index().Referrals() {
				if registry.CanonicalURN(ref.Identifier) == registry.CanonicalURN(urn) {
					return ref, r.ID(), nil
				}
			}
		}
	}
	if len(errs) > 0 {
		// Not an unknown URN: a registry that failed may hold it.
		notIn := ""
		if len(searched) > 0 {
			notIn = fmt.Sprintf("; it is not in %v", searched)
		}
		return registry.Entry{}, "", fmt.Errorf("%w%s", errors.Join(errs...), notIn)
	}
	return registry.Entry{}, "", fmt.Errorf("%w (searched %v)", ErrUnknownURN, searched)
}

// DefaultRegistryDeadline is how long a registry has to answer a search
// or a lookup, unless Manager.RegistryDeadline says otherwise.
const DefaultRegistryDeadline = 10 * time.Second

// RegistryWait is how long a registry has to answer a search or a lookup.
func (m *Manager) RegistryWait() time.Duration {
	return cmp.Or(m.RegistryDeadline, DefaultRegistryDeadline)
}

// lookup looks urn up in r, within RegistryWait: a registry that stalled
// held an attach, asking each registry in turn, for good.
func (m *Manager) lookup(ctx context.Context, r registry.Registry, urn string) (registry.Entry, error) {
	lctx, cancel := context.WithTimeout(ctx, m.RegistryWait())
	defer cancel()
	lctx, span := m.Tracing.Span(lctx, "registry.lookup", tracing.String("registry.id", r.ID()))
	e, err := r.Lookup(lctx, urn)
	EndSpan(span, err)
	if err != nil && ctx.Err() == nil && errors.Is(lctx.Err(), context.DeadlineExceeded) {
		// Its own deadline, not the caller's; what it wraps still tells a
		// registry's failure (registry.ErrUnreachable).
		err = fmt.Errorf("registry %s did not answer within %s: %w", r.ID(), m.RegistryWait(), err)
	}
	return e, err
}

func (m *Manager) registryIDs() []string { return ids(m.Registries) }

func ids(regs []registry.Registry) []string {
	out := make([]string, len(regs))
	for i, r := range regs {
		out[i] = r.ID()
	}
	return out
}

// KindOf maps an entry's media type to what it attaches as, or "".
func KindOf(mediaType string) string {
	switch mediaType {
	case config.MediaMCPServerCard, config.MediaMCPServerOld:
		return KindMCPServer
	case config.MediaA2AAgentCard:
		return KindA2AAgent
	}
	return ""
}

// Assessment is what the gateway can tell about an entry before starting
// anything: the trust gate's report, and why it cannot be attached, if so.
type Assessment struct {
	Trust guard.TrustReport
	// Err is nil when the entry looks attachable. Entries that reference
	// their card by URL are judged when the card is fetched at attach time.
	Err error
	// MayNeed are the environment variables its launch may need and does
	// not have (Plan.Unset).
	MayNeed []string
	// Keys are the variables its package requires that the operator has
	// not set: the user is asked for them at attach (KeysRequired).
	Keys []string
}

// Assess judges an entry found in registryID without touching the network.
func (m *Manager) Assess(e *registry.Entry, registryID string) Assessment {
	report, err := m.Trust.Check(e.Publisher(), e.TrustManifest)
	a := Assessment{Trust: report, Err: err}
	if a.Err == nil {
		a.Err = m.checkType(e.Type)
	}
	if a.Err != nil {
		return a
	}
	if KindOf(e.Type) == KindA2AAgent {
		a.Err = m.assessAgent(e)
		return a
	}
	if len(e.Data) == 0 {
		a.Err = m.checkEndpoint(e.URL)
		return a
	}
	card, err := decodeCard(e.Data)
	var plan Plan
	if err == nil {
		plan, err = planFor(card, registryID, &m.Stdio)
	}
	if err == nil && plan.Transport != TransportStdio {
		err = m.checkEndpoint(plan.URL)
	}
	a.Err, a.MayNeed = err, plan.Unset
	if len(plan.Keys) > 0 {
		a.Keys = keyNames(plan.Keys)
	}
	return a
}

// assessAgent is what refuses agent entry e before any lookup: the URL of
// its card, or the endpoint of its card inline, or its well-known host
// failing its last refresh (the entry is what it published before).
func (m *Manager) assessAgent(e *registry.Entry) error {
	if why := registry.HostDown(e); why != "" {
		return notAttachable("its well-known host is down (%s); it is listed as the host last published it", why)
	}
	if len(e.Data) == 0 {
		return m.checkEndpoint(e.URL)
	}
	endpoint, err := a2a.CardEndpoint(e.Data)
	if err != nil {
		return err
	}
	return m.checkAgentEndpoint(endpoint, false)
}

// checkEndpoint is what the guard refuses of a URL before any lookup: a
// remote at localhost was listed attachable, and its attach refused.
func (m *Manager) checkEndpoint(raw string) error {
	u, err := guard.CheckURL(raw)
	if err != nil {
		return err
	}
	d := m.Dialer
	if d == nil {
		d = &guard.Dialer{}
	}
	return d.CheckAddr(config.DialAddr(u))
}

func (m *Manager) checkType(mediaType string) error {
	if mediaType == registry.MediaRegistry {
		return notAttachable("it is a registry, not an MCP server or A2A agent: search it with discover_resources (follow_referrals: true, when it is a configured registry)")
	}
	if KindOf(mediaType) == "" {
		return notAttachable("type %s is not an MCP server or A2A agent", mediaType)
	}
	if !slices.Contains(m.AllowTypes, mediaType) {
		return &guard.Refusal{Rule: "allow_attach_types", Reason: fmt.Sprintf("type %s is not in %v", mediaType, m.AllowTypes)}
	}
	return nil
}

func decodeCard(data []byte) (*serverCard, error) {
	var c serverCard
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, notAttachable("the server card is malformed: %v", err)
	}
	return &c, nil
}

// Size caps on documents fetched from registries' URLs.
const (
	maxCardSize        = 1 << 20
	maxAttestationSize = 5 << 20
)

// card returns the entry's server card: inline data, or fetched from its
// URL through the guarded client.
func (m *Manager) card(ctx context.Context, e *registry.Entry) (*serverCard, error) {
	if len(e.Data) > 0 {
		return decodeCard(e.Data)
	}
	data, err := m.fetchLimited(ctx, m.HTTP, e.URL, maxCardSize)
	if err != nil {
		return nil, fmt.Errorf("fetch server card: %w", err)
	}
	return decodeCard(data)
}

// client is the client for what the operator configured when own is
// set (OwnHTTP), else HTTP.
func (m *Manager) client(own bool) *http.Client {
	if own && m.OwnHTTP != nil {
		return m.OwnHTTP
	}
	return m.HTTP
}

func (m *Manager) fetch(ctx context.Context, url string) ([]byte, error) {
	return m.fetchLimited(ctx, m.HTTP, url, maxAttestationSize)
}

// fetchLimited GETs url through hc, a guarded client, refusing bodies
// over limit bytes.
func (m *Manager) fetchLimited(ctx context.Context, hc *http.Client, url string, limit int64) ([]byte, error) {
	if _, err := guard.CheckURL(url); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{url: url, code: resp.StatusCode}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &guard.Refusal{Rule: "size_limit", Reason: fmt.Sprintf("%s is larger than %d KiB", url, limit>>10)}
	}
	return data, nil
}

// statusError is an answer of fetchLimited's that was not a 200.
type statusError struct {
	url  string
	code int
}

func (e *statusError) Error() string { return fmt.Sprintf("%s: HTTP %d", e.url, e.code) }

// NewSession starts tracking a client session. Its pinned servers start
// attaching when Start is called; call Close when the session ends.
func (m *Manager) NewSession(id string) *Session {
	s := newSession(m, id)
	s.keys.ring.store, s.keys.ring.log = m.Credentials, m.Log
	m.mu.Lock()
	if m.sessions == nil {
		m.sessions = map[*Session]struct{}{}
	}
	m.sessions[s] = struct{}{}
	m.mu.Unlock()
	return s
}

func (m *Manager) forget(s *Session) {
	m.mu.Lock()
	delete(m.sessions, s)
	m.mu.Unlock()
}

// Sessions returns the live sessions.
func (m *Manager) Sessions() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Session, 0, len(m.sessions))
	for s := range m.sessions {
		out = append(out, s)
	}
	return out
}

// Shutdown closes every live session, in parallel, then the connections
// they shared.
func (m *Manager) Shutdown() {
	var wg sync.WaitGroup
	for _, s := range m.Sessions() {
		wg.Go(s.Close)
	}
	wg.Wait()
	m.closeShared()
}
