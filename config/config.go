// Package config turns the config file, the ARDGATE_* environment and the
// command-line flags into one validated Config value.
//
// Precedence is flags > environment > config file > defaults. A bad value
// anywhere is an error that names the field; the program never starts
// half-configured.
package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Transports ardgate can serve MCP over.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Registry kinds.
const (
	KindCatalog     = "catalog"
	KindARD         = "ard"
	KindMCPRegistry = "mcp-registry"
	KindWellKnown   = "well-known"
)

// BuiltinRegistryID names the catalog embedded in the binary.
const BuiltinRegistryID = "builtin"

// Media types of attachable artifacts.
const (
	MediaMCPServerCard = "application/mcp-server-card+json"
	MediaMCPServerOld  = "application/mcp-server+json"
	MediaA2AAgentCard  = "application/a2a-agent-card+json"
)

// Config is the whole, validated configuration of one ardgate process.
type Config struct {
	// Transport is "stdio" or "http".
	Transport string
	// Addr is the listen address in HTTP mode.
	Addr string
	// PublicURL is where users' browsers reach the gateway's HTTP
	// listener ("https://gateway.example.com", a path allowed), when a
	// proxy in front of it terminates TLS or changes the host: OAuth's
	// redirect back and the keys page are given under it. Empty, they are
	// given as the client reached the listener. No trailing slash.
	PublicURL string
	// File is the config file that was read, if any.
	File string
	// Warnings are what Load found odd but not wrong, for the log: a
	// token variable that is not set, an address the transport does not
	// use.
	Warnings []string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is "text" (tint, for people) or "json" (for machines).
	LogFormat string
	// AuthToken, when set, is the bearer token HTTP clients must present.
	AuthToken string
	// ARDRegistryToken is the default bearer token for ARD registries.
	ARDRegistryToken string
	// OTelEndpoint is the OTLP/HTTP collector spans are exported to
	// ("http://localhost:4318"; /v1/traces is appended to a URL without a
	// path). Empty, the default, is tracing off.
	OTelEndpoint string

	// Registries are queried in this order.
	Registries []Registry
	// RequireTrust lists attestation types every attached entry must claim.
	RequireTrust []string
	// AllowAttachTypes lists the media types attach_resource accepts.
	AllowAttachTypes []string
	// MaxAttachments caps the non-pinned attachments of one session.
	MaxAttachments int
	// MaxSessions caps the sessions open at once over HTTP; a client
	// that would open one more is refused (503) until one ends.
	MaxSessions int
	// SessionIdleTimeout ends an HTTP session, and its attachments, once
	// idle this long (no request, no event sent on its stream): clients
	// often go away without ending their sessions.
	SessionIdleTimeout time.Duration
	// SessionReapAfter ends an HTTP session sooner, once its client shows
	// no sign of life this long: no request, none running, and no GET
	// stream open. Clients that close without a DELETE left their npx
	// servers running until SessionIdleTimeout.
	SessionReapAfter time.Duration
	// AllowLocalURLs lets endpoints resolve to loopback and private
	// addresses. For local testing only.
	AllowLocalURLs bool
	// FastPath answers the common calls and listings of attached tools
	// without mcp-go's server, which serves them alike but slower. On by
	// default; off, every message goes through mcp-go.
	FastPath bool
	// CallTimeout bounds one proxied tool call. A call that asked for
	// progress gets it again at each progress the server reports, up to
	// MaxCallTime from its start.
	CallTimeout time.Duration
	// MaxCallTime bounds a call that keeps reporting progress; no
	// progress takes it further. Unset, it is DefaultMaxCallTime, or
	// CallTimeout if that is longer.
	MaxCallTime time.Duration
	// StartTimeout bounds starting a server: launching it (npx or uvx may
	// download its package first) or reaching it, and its handshake.
	StartTimeout time.Duration
	// PinnedListWait is how long after a session starts its tools/list
	// waits for pinned servers still starting, so that a client that lists
	// once sees their tools; a call of a tool of one waits as long.
	PinnedListWait time.Duration
	// MaxResultBytes caps the content of one proxied tool result.
	MaxResultBytes int
	// ToolMode is "listed" (attached tools appear in tools/list) or
	// "deferred" (they do not; tool_search finds them and
	// call_attached_tool calls them), for clients that degrade with many
	// tools or ignore tools/list_changed.
	ToolMode string
	// Consent says which launches the user is asked to consent to, when
	// the session's client can be asked (form elicitation): never, those
	// of packages found in remote registries (the default), or always.
	// Pinned servers, the operator's own pick, never are.
	Consent string
	// Limits are per-session rate limits and the loop guard.
	Limits Limits
	// Stdio is the launch policy for local (stdio) upstream servers.
	Stdio Stdio
	// Servers are pinned MCP servers, attached to every session at start.
	Servers []Server
	// Agents are pinned A2A agents, attached to every session at start.
	Agents []Agent
	// Credentials says where the credentials users give are kept across
	// restarts; by default nowhere.
	Credentials Credentials
}

// Credentials is the store of the credentials users give (OAuth grants,
// API-key values), which the gateway otherwise keeps in each session's
// memory only (attach/credstore).
type Credentials struct {
	// Store is the store's file; empty, nothing persists.
	Store string `json:"store"`
	// Key encrypts the file: CredentialsKeySize bytes, read from
	// ARDGATE_CREDENTIALS_KEY (base64), or the file
	// ARDGATE_CREDENTIALS_KEY_FILE names, when a store is set.
	Key []byte `json:"-"`
}

// CredentialsKeySize is the size of the key of the credentials store:
// AES-256's.
const CredentialsKeySize = 32

// Registry is one configured source of entries.
type Registry struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Path is the catalog file of a "catalog" registry; empty for builtin.
	Path string `json:"path,omitempty"`
	// URL is the base URL of an "ard" or "mcp-registry" registry.
	URL string `json:"url,omitempty"`
	// Federation is sent to ARD registries: auto, referrals or none.
	Federation string `json:"federation,omitempty"`
	// TokenEnv names the variable holding this registry's bearer token.
	TokenEnv string `json:"token_env,omitempty"`
	// Hosts are the base URLs of a "well-known" registry: origins, or URLs
	// with a path under which a namespace's cards are.
	Hosts []string `json:"hosts,omitempty"`
	// Token is the bearer token for this registry, read from TokenEnv (or
	// ARD_REGISTRY_TOKEN for ARD registries) when the config is loaded.
	Token string `json:"-"`
}

// Stdio is the policy for launching local upstream servers.
type Stdio struct {
	// AllowFrom lists the registries whose entries may be launched locally.
	AllowFrom []string `json:"allow_from"`
	// Launchers lists the programs packages may be launched with.
	Launchers []string `json:"launchers"`
	// Env lists the variables passed from the gateway's environment to
	// every child besides PATH.
	Env []string `json:"env"`
	// MemoryMiB, CPUSeconds, OpenFiles and FileMiB bound each process of a
	// launched server, pinned or not (guard.Rlimits); 0 leaves a limit as
	// the gateway's. MemoryMiB is DefaultStdioMemoryMiB unless set.
	MemoryMiB  int `json:"memory_mib"`
	CPUSeconds int `json:"cpu_seconds"`
	OpenFiles  int `json:"open_files"`
	FileMiB    int `json:"file_mib"`
}

// Server is a pinned MCP server: exactly one of Command or URL.
type Server struct {
	Name    string   `json:"name"`
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env names variables passed on from the gateway's environment.
	Env []string `json:"env,omitempty"`
	// EnvValues are variables set for a command's process as given. A
	// value may name the gateway's variables as ${NAME} or ${env:NAME},
	// as desktop configs do; headers may too.
	EnvValues map[string]string `json:"env_values,omitempty"`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// Transport of a url server: streamable-http (the default) or sse,
	// the older HTTP+SSE transport.
	Transport string `json:"transport,omitempty"`
	// TokenEnv names the variable holding a bearer token for a url
	// server, sent to it as Authorization: a secret stays out of the
	// config file.
	TokenEnv string `json:"token_env,omitempty"`
	// Token is read from TokenEnv when the config is loaded.
	Token string `json:"-"`
	// Timeout overrides call_timeout for this server ("120s").
	Timeout string `json:"timeout,omitempty"`
	// Tools, when set, are the only tools of this server the sessions
	// get: upstream tool names or path.Match patterns ("read_*"). The
	// others are neither listed nor callable.
	Tools []string `json:"tools,omitempty"`
	// ToolMode overrides tool_mode for this server.
	ToolMode string `json:"tool_mode,omitempty"`
	// Framing of a command's stdio: newline (one message a line, as MCP
	// frames it; the default) or content-length (a header before each
	// message, as LSP frames it: OpenFang's `openfang mcp`).
	Framing string `json:"framing,omitempty"`
	// Stateless says a remote (url) server keeps no state per client, so
	// one connection to it serves every session instead of one each.
	// Never assumed: an MCP session may carry state the server ties to it.
	Stateless bool `json:"stateless,omitempty"`

	// at is where the file wrote it, when not in servers: a desktop
	// config's mcpServers.<name>.
	at string
}

// Framings of a command server's stdio (Server.Framing).
const (
	FramingNewline       = "newline"
	FramingContentLength = "content-length"
)

// Limits are per-session budgets. Zero means no limit.
type Limits struct {
	// CallsPerSecond and CallBurst bound every tool call of a session.
	CallsPerSecond float64 `json:"calls_per_second"`
	CallBurst      int     `json:"call_burst"`
	// DiscoveryPerMinute bounds discover_resources and attach_resource.
	DiscoveryPerMinute float64 `json:"discovery_per_minute"`
	// RepeatMax refuses the same discover or attach more often than this
	// within RepeatWindow.
	RepeatMax    int           `json:"repeat_max"`
	RepeatWindow time.Duration `json:"-"`
}

// Agent is a pinned A2A agent.
type Agent struct {
	Name string `json:"name"`
	// URL is the agent's origin (its card is at /.well-known/agent-card.json)
	// or its card's URL.
	URL string `json:"url"`
	// TokenEnv names the variable holding a bearer token for this agent. It
	// is sent only to the agent's own origin, also when the same agent is
	// attached from a registry.
	TokenEnv string `json:"token_env,omitempty"`
	// Token is read from TokenEnv when the config is loaded.
	Token string `json:"-"`
	// Dialect, when set, is the A2A dialect the agent is spoken to in,
	// whatever its card says: one of AgentDialects.
	Dialect string `json:"dialect,omitempty"`
}

// AgentDialects are the values of agents[].dialect: A2A v1.0 JSON-RPC,
// v0.3 JSON-RPC, and the tasks/send methods of older agents (OpenFang's,
// kagent's).
var AgentDialects = []string{"v1", "v0.3", "tasks"}

// Transports of a pinned url server.
const (
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Tool modes.
const (
	ToolModeListed   = "listed"
	ToolModeDeferred = "deferred"
)

// Consent modes (Config.Consent): the user is asked before no launch, a
// launch of a package found in a registry the operator does not hold as
// a file (ard, mcp-registry, well-known), or a launch of any registry's
// entry, catalogs included.
const (
	ConsentNever            = "never"
	ConsentRemoteRegistries = "remote-registries"
	ConsentAlways           = "always"
)

// Defaults used when no source sets a value.
const (
	DefaultAddr           = "127.0.0.1:7333"
	DefaultMaxAttachments = 5
	DefaultMaxSessions    = 10000
	DefaultSessionIdle    = 30 * time.Minute
	DefaultSessionReap    = 5 * time.Minute
	DefaultCallTimeout    = 60 * time.Second
	DefaultMaxCallTime    = 10 * time.Minute
	DefaultPinnedListWait = 10 * time.Second
	DefaultStartTimeout   = 2 * time.Minute
	DefaultMaxResultBytes = 8 << 20
)

// DefaultLimits leave proxied calls alone (they are the upstream's
// business) and bound what costs the gateway: discovery and attaching.
var DefaultLimits = Limits{DiscoveryPerMinute: 120, RepeatMax: 10, RepeatWindow: time.Minute}

// DefaultAllowAttachTypes is the media types attachable by default.
var DefaultAllowAttachTypes = []string{MediaMCPServerCard, MediaMCPServerOld, MediaA2AAgentCard}

// DefaultStdioMemoryMiB bounds each process of a launched server's
// private memory: a server that leaks is stopped before the machine is.
// RLIMIT_DATA counts thread stacks whole and a JVM's initial heap (a 64th
// of the machine's memory): at 2 GiB a Python server stopped at 254
// threads, and no JVM started on a machine of 128 GiB.
const DefaultStdioMemoryMiB = 8192

// DefaultLaunchers is the launchers packages may use by default.
var DefaultLaunchers = []string{"npx", "uvx"}

// RegistryByID returns the configured registry with that id.
func (c *Config) RegistryByID(id string) (Registry, bool) {
	for _, r := range c.Registries {
		if r.ID == id {
			return r, true
		}
	}
	return Registry{}, false
}

// OwnAddrs lists the addresses ("host:port", the host in lower case) of
// the URLs the operator configured: pinned servers and agents, ard and
// mcp-registry registries, well-known hosts. The gateway reaches them
// wherever they are, through a client of their own (guard.Dialer.Own);
// what their answers name goes through one that checks it as any address.
func (c *Config) OwnAddrs() []string {
	urls := []string{}
	for _, s := range c.Servers {
		urls = append(urls, s.URL)
	}
	for _, a := range c.Agents {
		urls = append(urls, a.URL)
	}
	for _, r := range c.Registries {
		urls = append(append(urls, r.URL), r.Hosts...)
	}
	var out []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if raw == "" || err != nil || u.Hostname() == "" {
			continue
		}
		if addr := DialAddr(u); !slices.Contains(out, addr) {
			out = append(out, addr)
		}
	}
	return out
}

// DialAddr is the address a request to u dials, "host:port", as an HTTP
// client names it: the scheme's port when u gives none, the host in lower
// case.
func DialAddr(u *url.URL) string {
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	default:
		port = "80"
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// fieldError names the offending field in a message a person can act on.
func fieldError(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
}
