package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Validation: what Load checks of the Config it built, each problem
// naming its field as the file spells it. Every check runs, so that a
// user sees all that is wrong at once.

// protocolHeaders are the headers of MCP's streamable HTTP transport and
// of the request itself, which a server's configured headers may not set.
var protocolHeaders = []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "Accept", "Content-Type", "Content-Length",
	"Host", "Connection", "Transfer-Encoding", "Last-Event-Id"}

var (
	idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)
	// namePattern: words of [a-z0-9] joined by single underscores. A
	// name with "__", or one ending in "_", would make mcp_<name>__<tool>
	// ambiguous: servers "a" and "a__b" could each expose mcp_a__b__x.
	namePattern = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)
	envPattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// IsEnvName tells whether s may be an environment variable's name.
func IsEnvName(s string) bool { return envPattern.MatchString(s) }

// minStdioMemoryMiB is the least stdio.memory_mib a server starts with:
// node hung at 32 MiB, npx aborted at 64, and npm exec running
// server-everything holds 120.
const minStdioMemoryMiB = 256

// problems collects what is wrong with a config.
type problems []error

// add records a problem of field.
func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, fieldError(field, format, args...))
}

// envName records a problem of field when v is set and not a variable's
// name.
func (p *problems) envName(field, v string) {
	if v != "" && !envPattern.MatchString(v) {
		p.add(field, "%q is not a variable name", v)
	}
}

func (c *Config) validate() []error {
	var p problems
	c.checkServing(&p)
	c.checkBounds(&p)
	c.checkLimits(&p)
	ids := c.checkRegistries(&p)
	c.checkTrust(&p)
	c.checkStdio(&p, ids)
	names := map[string]bool{}
	for i, s := range c.Servers {
		s.check(&p, i, names)
	}
	for i, a := range c.Agents {
		a.check(&p, i, names)
	}
	return p
}

// checkServing checks how the gateway serves and logs, and its tokens.
func (c *Config) checkServing(p *problems) {
	for _, e := range []struct {
		field, v string
		allowed  []string
		says     string
	}{
		{"transport", c.Transport, []string{TransportStdio, TransportHTTP}, "stdio or http"},
		{"log_level", c.LogLevel, []string{"debug", "info", "warn", "error"}, "debug, info, warn or error"},
		{"log_format", c.LogFormat, []string{"text", "json"}, "text or json"},
		{"consent", c.Consent, []string{ConsentNever, ConsentRemoteRegistries, ConsentAlways}, "never, remote-registries or always"},
	} {
		if !slices.Contains(e.allowed, e.v) {
			p.add(e.field, "%q is not %s", e.v, e.says)
		}
	}
	c.checkTokens(p)
	if c.OTelEndpoint != "" && !httpURL(c.OTelEndpoint, false) {
		p.add("otel_endpoint", "%q is not an http(s) URL", c.OTelEndpoint)
	}
	if c.PublicURL != "" && !httpURL(c.PublicURL, true) {
		p.add("public_url", "%q is not an http(s) URL without a query, where browsers reach the gateway", c.PublicURL)
	}
	if c.ToolMode != ToolModeListed && c.ToolMode != ToolModeDeferred {
		p.add("tool_mode", "%q is not listed or deferred", c.ToolMode)
	}
}

// checkTokens checks the tokens the gateway takes from the environment.
func (c *Config) checkTokens(p *problems) {
	if c.AuthToken != "" && strings.TrimSpace(c.AuthToken) != c.AuthToken {
		// A token of white space (or with it around) is a mistake in the
		// Secret it came from; no client would send it so.
		*p = append(*p, errors.New("ARDGATE_AUTH_TOKEN: begins or ends with white space (or is nothing else); set the token alone, or unset it"))
	}
	if t := c.ARDRegistryToken; t != "" && (strings.TrimSpace(t) != t || !httpguts.ValidHeaderFieldValue(t)) {
		// Sent in a header as it is, as a token_env's value (Load).
		*p = append(*p, errors.New("ARD_REGISTRY_TOKEN: holds white space at an end, a line break or a control character; a token is sent in a header as it is"))
	}
}

// checkBounds checks the numbers and durations against their ranges.
func (c *Config) checkBounds(p *problems) {
	for _, n := range []struct {
		field    string
		v        int
		min, max int
	}{
		{"max_attachments", c.MaxAttachments, 1, 100},
		{"max_sessions", c.MaxSessions, 1, 1_000_000},
		{"max_result_bytes", c.MaxResultBytes, 1024, 64 << 20},
	} {
		if n.v < n.min || n.v > n.max {
			p.add(n.field, "%d is outside %d..%d", n.v, n.min, n.max)
		}
	}
	const day = 24 * time.Hour
	for _, d := range []struct {
		field    string
		v        time.Duration
		min, max time.Duration // min 1ns: above 0
		shown    string
	}{
		{"session_idle_timeout", c.SessionIdleTimeout, time.Second, 7 * day, "[1s, 168h]"},
		{"session_reap_after", c.SessionReapAfter, time.Second, 7 * day, "[1s, 168h]"},
		{"call_timeout", c.CallTimeout, 1, time.Hour, "(0, 1h]"},
		{"start_timeout", c.StartTimeout, time.Second, time.Hour, "[1s, 1h]"},
		{"max_call_time", c.MaxCallTime, 1, day, "(0, 24h]"},
		{"pinned_list_wait", c.PinnedListWait, 1, 5 * time.Minute, "(0, 5m]"},
	} {
		if d.v < d.min || d.v > d.max {
			p.add(d.field, "%s is outside %s", d.v, d.shown)
		}
	}
	if c.MaxCallTime > 0 && c.MaxCallTime <= day && c.MaxCallTime < c.CallTimeout {
		p.add("max_call_time", "%s is shorter than call_timeout (%s): set a longer max_call_time, or a shorter call_timeout", c.MaxCallTime, c.CallTimeout)
	}
}

// checkLimits checks the rate limits and the media types to attach.
func (c *Config) checkLimits(p *problems) {
	for _, l := range []struct {
		key   string
		value float64
	}{{"calls_per_second", c.Limits.CallsPerSecond}, {"call_burst", float64(c.Limits.CallBurst)},
		{"discovery_per_minute", c.Limits.DiscoveryPerMinute}, {"repeat_max", float64(c.Limits.RepeatMax)}} {
		if l.value < 0 {
			p.add("limits."+l.key, "%v may not be negative", l.value)
		}
	}
	for i, t := range c.AllowAttachTypes {
		if !slices.Contains(DefaultAllowAttachTypes, t) {
			p.add(fmt.Sprintf("allow_attach_types[%d]", i), "%q is not one of %s", t, strings.Join(DefaultAllowAttachTypes, ", "))
		}
	}
}

// checkRegistries checks each registry and returns the ids seen.
func (c *Config) checkRegistries(p *problems) map[string]bool {
	ids := map[string]bool{}
	for i, r := range c.Registries {
		f := fmt.Sprintf("registries[%d]", i)
		switch {
		case !idPattern.MatchString(r.ID):
			p.add(f+".id", "%q must match %s", r.ID, idPattern)
		case ids[r.ID]:
			p.add(f+".id", "%q is used twice", r.ID)
		}
		ids[r.ID] = true
		r.checkWhere(p, f)
		if r.Federation != "" && !slices.Contains([]string{"auto", "referrals", "none"}, r.Federation) {
			p.add(f+".federation", "%q is not auto, referrals or none", r.Federation)
		}
		p.envName(f+".token_env", r.TokenEnv)
	}
	return ids
}

// checkWhere checks that registry f, r, says where it is with its kind's
// one field, and with no other kind's: that would be ignored, which a
// user would not expect.
func (r Registry) checkWhere(p *problems, f string) {
	kind, ok := registryKinds[r.Kind]
	if !ok {
		p.add(f+".kind", "%q is not catalog, ard, mcp-registry or well-known", r.Kind)
		return
	}
	for _, g := range []struct {
		field string
		set   bool
	}{{"path", r.Path != ""}, {"url", r.URL != ""}, {"hosts", len(r.Hosts) > 0}, {"federation", r.Federation != "" && r.Kind != KindARD}} {
		if g.set && g.field != kind.where {
			p.add(f+"."+g.field, "does not apply to kind %q", r.Kind)
		}
	}
	kind.check(r, p, f)
}

// registryKinds say, for each kind of registry, the field that says where
// it is, and how to check that field.
var registryKinds = map[string]struct {
	where string
	check func(r Registry, p *problems, f string)
}{
	KindCatalog:     {"path", Registry.checkPath},
	KindARD:         {"url", Registry.checkURL},
	KindMCPRegistry: {"url", Registry.checkURL},
	KindWellKnown:   {"hosts", Registry.checkHosts},
}

func (r Registry) checkPath(p *problems, f string) {
	if r.Path == "" && r.ID != BuiltinRegistryID {
		p.add(f+".path", "required for kind %q (only %q may omit it)", r.Kind, BuiltinRegistryID)
	}
}

func (r Registry) checkURL(p *problems, f string) {
	if r.URL == "" {
		p.add(f+".url", "required for kind %q", r.Kind)
	} else if !httpURL(r.URL, false) {
		p.add(f+".url", "%q is not an http(s) URL", r.URL)
	}
}

func (r Registry) checkHosts(p *problems, f string) {
	if len(r.Hosts) == 0 {
		p.add(f+".hosts", "required for kind %q", r.Kind)
	}
	for j, h := range r.Hosts {
		if !httpURL(h, true) {
			p.add(fmt.Sprintf("%s.hosts[%d]", f, j), "%q is not an http(s) host (scheme, host and, if its cards are under one, a path, such as https://agents.example.com or http://host:8083/api/a2a/kagent; no query)", h)
		}
	}
}

// checkTrust checks the attestation types required.
func (c *Config) checkTrust(p *problems) {
	for i, v := range c.RequireTrust {
		// Taken as they were, "" and " soc2 " refused every entry: no
		// attestation type is empty or holds the spaces.
		switch f := fmt.Sprintf("require_trust[%d]", i); {
		case strings.TrimSpace(v) == "":
			p.add(f, "%q is empty: name an attestation type, such as SOC2", v)
		case strings.TrimSpace(v) != v:
			p.add(f, "%q has white space around it, which no attestation type has: write %q", v, strings.TrimSpace(v))
		}
	}
}

// checkStdio checks the launch policy; ids are the registries configured.
func (c *Config) checkStdio(p *problems, ids map[string]bool) {
	for i, id := range c.Stdio.AllowFrom {
		if !ids[id] {
			p.add(fmt.Sprintf("stdio.allow_from[%d]", i), "%q is not a configured registry id", id)
		}
	}
	for i, l := range c.Stdio.Launchers {
		// The launcher of a package is its registry type's (npm: npx,
		// PyPI: uvx); the list says which of them may run. "bash" was
		// taken without a word, and launched nothing.
		if !slices.Contains(DefaultLaunchers, l) {
			p.add(fmt.Sprintf("stdio.launchers[%d]", i), "%q is not a launcher of packages: the list names which of %s may run", l, strings.Join(DefaultLaunchers, " and "))
		}
	}
	for i, v := range c.Stdio.Env {
		if !envPattern.MatchString(v) {
			p.add(fmt.Sprintf("stdio.env[%d]", i), "%q is not a variable name", v)
		}
	}
	if m := c.Stdio.MemoryMiB; m > 0 && m < minStdioMemoryMiB {
		p.add("stdio.memory_mib", "%d MiB is too little for a server to start: at least %d, or 0 for no limit", m, minStdioMemoryMiB)
	}
	for _, v := range []struct {
		field string
		value int
	}{{"stdio.memory_mib", c.Stdio.MemoryMiB}, {"stdio.cpu_seconds", c.Stdio.CPUSeconds}, {"stdio.open_files", c.Stdio.OpenFiles}, {"stdio.file_mib", c.Stdio.FileMiB}} {
		if v.value < 0 {
			p.add(v.field, "%d is negative: 0 leaves the limit as the gateway's", v.value)
		}
	}
}

// checkName checks the name of server or agent f, n, against names, the
// ones taken so far, which servers and agents share.
func checkName(p *problems, names map[string]bool, f, n string) {
	switch {
	case len(n) > 32 || !namePattern.MatchString(n):
		why := ""
		if strings.Contains(n, "__") || strings.HasSuffix(n, "_") {
			why = ": a name with __ or ending in _ would make tool names ambiguous"
		}
		p.add(f+".name", "%q must be 1 to 32 lower-case letters and digits, words joined by single underscores%s", n, why)
	case names[n]:
		p.add(f+".name", "%q is used twice (servers and agents share one namespace)", n)
	}
	names[n] = true
}

// check checks pinned server i; names are the names taken so far.
func (s Server) check(p *problems, i int, names map[string]bool) {
	f := s.field(i)
	checkName(p, names, f, s.Name)
	s.checkKind(p, f)
	p.envName(f+".token_env", s.TokenEnv)
	s.checkHeaders(p, f)
	for j, v := range s.Env {
		if !envPattern.MatchString(v) {
			p.add(fmt.Sprintf("%s.env[%d]", f, j), "%q is not a variable name", v)
		}
	}
	s.checkEnvValues(p, f)
	s.checkFraming(p, f)
	if s.Transport != "" && (s.URL == "" || s.Transport != TransportStreamableHTTP && s.Transport != TransportSSE) {
		p.add(f+".transport", "%q is not streamable-http or sse, for a url server", s.Transport)
	}
	if s.ToolMode != "" && s.ToolMode != ToolModeListed && s.ToolMode != ToolModeDeferred {
		p.add(f+".tool_mode", "%q is not listed or deferred", s.ToolMode)
	}
	if s.Timeout != "" {
		if d, err := time.ParseDuration(s.Timeout); err != nil || d <= 0 || d > time.Hour {
			p.add(f+".timeout", "%q is not a duration in (0, 1h]", s.Timeout)
		}
	}
	s.checkTools(p, f)
}

// checkFraming checks the framing of server f's stdio.
func (s Server) checkFraming(p *problems, f string) {
	switch {
	case s.Framing != "" && s.Framing != FramingNewline && s.Framing != FramingContentLength:
		p.add(f+".framing", "%q is not newline or content-length", s.Framing)
	case s.Framing != "" && s.Command == "":
		p.add(f+".framing", "applies to command servers only: a url server's transport frames its messages")
	}
}

// checkKind checks that server f is a command or a url, and that what it
// sets applies to that kind.
func (s Server) checkKind(p *problems, f string) {
	switch {
	case s.Command == "" && s.URL == "":
		p.add(f, "needs command or url")
	case s.Command != "" && s.URL != "":
		p.add(f, "has both command and url; pick one")
	case s.URL != "" && !strings.HasPrefix(s.URL, "https://") && !strings.HasPrefix(s.URL, "http://"):
		p.add(f+".url", "%q is not an http(s) URL", s.URL)
	case s.Stateless && s.URL == "":
		p.add(f+".stateless", "applies to url servers only: a command's process belongs to one session")
	case s.TokenEnv != "" && s.URL == "":
		p.add(f+".token_env", "applies to url servers only: pass a command's server its variables with env")
	case len(s.Headers) > 0 && s.URL == "":
		p.add(f+".headers", "apply to url servers only")
	}
}

// checkHeaders checks the headers server f sends.
func (s Server) checkHeaders(p *problems, f string) {
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			p.add(f+".headers", "%q is not a header name", k)
		case !httpguts.ValidHeaderFieldValue(s.Headers[k]):
			p.add(f+".headers."+k, "the value holds a character a header may not (a line break, a control character)")
		case s.TokenEnv != "" && strings.EqualFold(k, "Authorization"):
			p.add(f+".headers."+k, "token_env sends Authorization too; keep one of them")
		case slices.ContainsFunc(protocolHeaders, func(h string) bool { return strings.EqualFold(k, h) }):
			p.add(f+".headers."+k, "is the gateway's to send, as MCP's streamable HTTP has it")
		}
	}
}

// checkEnvValues checks the variables server f is given values of.
func (s Server) checkEnvValues(p *problems, f string) {
	for _, k := range slices.Sorted(maps.Keys(s.EnvValues)) {
		switch {
		case s.URL != "":
			p.add(f+"."+s.envValuesField()+"."+k, "applies to command servers only: send a url server headers")
		case !envPattern.MatchString(k):
			p.add(f+"."+s.envValuesField(), "%q is not a variable name", k)
		case strings.ContainsRune(s.EnvValues[k], 0):
			p.add(f+"."+s.envValuesField()+"."+k, "the value holds a NUL character, which no environment can")
		}
	}
}

// checkTools checks the patterns of the tools server f lets through.
func (s Server) checkTools(p *problems, f string) {
	if s.Tools != nil && len(s.Tools) == 0 {
		p.add(f+".tools", "lists no tool: leave it out to let every tool through")
	}
	for j, pat := range s.Tools {
		if _, err := path.Match(pat, ""); err != nil || strings.TrimSpace(pat) == "" {
			p.add(fmt.Sprintf("%s.tools[%d]", f, j), "%q is not a tool name or pattern (such as \"read_*\")", pat)
		}
	}
}

// check checks pinned agent i; names are the names taken so far.
func (a Agent) check(p *problems, i int, names map[string]bool) {
	f := fmt.Sprintf("agents[%d]", i)
	checkName(p, names, f, a.Name)
	if !strings.HasPrefix(a.URL, "https://") && !strings.HasPrefix(a.URL, "http://") {
		p.add(f+".url", "%q is not an http(s) URL", a.URL)
	}
	p.envName(f+".token_env", a.TokenEnv)
	if a.Dialect != "" && !slices.Contains(AgentDialects, a.Dialect) {
		p.add(f+".dialect", "%q is not one of %s", a.Dialect, strings.Join(AgentDialects, ", "))
	}
}

// httpURL reports whether s is an absolute http(s) URL with a host; a
// base, when base is set: a path may follow the host (a namespace of
// agents, as openribcage lists kagent's), but no query or fragment.
func httpURL(s string, base bool) bool {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return false
	}
	return !base || u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery
}
