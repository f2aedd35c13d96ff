package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/caarlos0/env/v11"
	"golang.org/x/net/http/httpguts"
)

// file is the JSON config file. Pointers tell "absent" from "zero", so that
// a field the file does not set never overrides a default.
type file struct {
	Transport        *string     `json:"transport"`
	Addr             *string     `json:"addr"`
	LogLevel         *string     `json:"log_level"`
	LogFormat        *string     `json:"log_format"`
	OTelEndpoint     *string     `json:"otel_endpoint"`
	PublicURL        *string     `json:"public_url"`
	Catalogs         []string    `json:"catalogs"`
	Registries       []Registry  `json:"registries"`
	RequireTrust     []string    `json:"require_trust"`
	AllowAttachTypes []string    `json:"allow_attach_types"`
	MaxAttachments   *int        `json:"max_attachments"`
	MaxSessions      *int        `json:"max_sessions"`
	SessionIdle      *string     `json:"session_idle_timeout"`
	SessionReap      *string     `json:"session_reap_after"`
	AllowLocalURLs   *bool       `json:"allow_local_urls"`
	FastPath         *bool       `json:"fast_path"`
	CallTimeout      *string     `json:"call_timeout"`
	StartTimeout     *string     `json:"start_timeout"`
	MaxCallTime      *string     `json:"max_call_time"`
	PinnedListWait   *string     `json:"pinned_list_wait"`
	MaxResultBytes   *int        `json:"max_result_bytes"`
	ToolMode         *string     `json:"tool_mode"`
	Consent          *string     `json:"consent"`
	Limits           *fileLimits `json:"limits"`
	Stdio            *struct {
		AllowFrom  []string `json:"allow_from"`
		Launchers  []string `json:"launchers"`
		Env        []string `json:"env"`
		MemoryMiB  *int     `json:"memory_mib"`
		CPUSeconds int      `json:"cpu_seconds"`
		OpenFiles  int      `json:"open_files"`
		FileMiB    int      `json:"file_mib"`
	} `json:"stdio"`
	Servers     []Server     `json:"servers"`
	Agents      []Agent      `json:"agents"`
	Credentials *Credentials `json:"credentials"`

	// MCPServers is the block of Claude Desktop, Cursor and Claude Code.
	MCPServers map[string]desktopServer `json:"mcpServers"`
	// VSCodeServers is VS Code's "servers", an object where ardgate's is
	// a list; walker.object reads an object there into this field.
	VSCodeServers map[string]desktopServer `json:"servers (VS Code)"`
	// Inputs are VS Code's prompts for values; ardgate asks no one, so
	// they are only read past.
	Inputs []json.RawMessage `json:"inputs"`
}

// fileLimits is the "limits" object. readFile starts it from DefaultLimits,
// so that a field the file leaves out keeps its default.
type fileLimits struct {
	Limits
	RepeatWindow string `json:"repeat_window"`
}

// environment is the ARDGATE_* variables; nil means unset.
type environment struct {
	Transport          *string  `env:"TRANSPORT"`
	Addr               *string  `env:"ADDR"`
	Config             *string  `env:"CONFIG"`
	Catalogs           []string `env:"CATALOGS" envSeparator:","`
	LogLevel           *string  `env:"LOG_LEVEL"`
	LogFormat          *string  `env:"LOG_FORMAT"`
	AuthToken          *string  `env:"AUTH_TOKEN"`
	MaxAttachments     *int     `env:"MAX_ATTACHMENTS"`
	MaxSessions        *int     `env:"MAX_SESSIONS"`
	SessionIdle        *string  `env:"SESSION_IDLE_TIMEOUT"`
	SessionReap        *string  `env:"SESSION_REAP_AFTER"`
	AllowLocalURLs     *bool    `env:"ALLOW_LOCAL_URLS"`
	FastPath           *Switch  `env:"FAST_PATH"`
	RequireTrust       []string `env:"REQUIRE_TRUST" envSeparator:","`
	StdioEnv           []string `env:"STDIO_ENV" envSeparator:","`
	StdioMemoryMiB     *int     `env:"STDIO_MEMORY_MIB"`
	OTelEndpoint       *string  `env:"OTEL_ENDPOINT"`
	PublicURL          *string  `env:"PUBLIC_URL"`
	CredentialsKey     *string  `env:"CREDENTIALS_KEY"`
	CredentialsKeyFile *string  `env:"CREDENTIALS_KEY_FILE"`
	ARDRegistryToken   *string  // ARD_REGISTRY_TOKEN has no prefix; read by hand
}

// Flags are the command-line flags of `ardgate serve`. Empty means unset.
type Flags struct {
	Transport string
	Addr      string
	Config    string
	Catalogs  []string
	LogLevel  string
	LogFormat string
	// OTelEndpoint is --otel-endpoint.
	OTelEndpoint string
}

// FlagSet returns the flag set of `ardgate serve`, writing into f.
func FlagSet(name string, f *Flags) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&f.Transport, "transport", "", "MCP transport: stdio or http (default stdio)")
	fs.StringVar(&f.Addr, "addr", "", "listen address in http mode (default "+DefaultAddr+")")
	fs.StringVar(&f.Config, "config", "", "JSON config file")
	fs.Func("catalog", "ARD catalog file to add as a registry (repeatable)", func(s string) error {
		f.Catalogs = append(f.Catalogs, s)
		return nil
	})
	fs.StringVar(&f.LogLevel, "log-level", "", "debug, info, warn or error (default info)")
	fs.StringVar(&f.LogFormat, "log-format", "", "text or json (default text)")
	fs.StringVar(&f.OTelEndpoint, "otel-endpoint", "", "OTLP/HTTP collector URL for traces, e.g. http://localhost:4318 (default: tracing off)")
	return fs
}

// Load builds the Config from flags, the environment (as os.Environ
// returns it) and the config file that flags or environment name.
func Load(flags Flags, environ []string) (*Config, error) {
	c, err := load(flags, environ)
	if err != nil || c.File == "" {
		return c, err
	}
	// A bad value in the file that a flag or variable overrides breaks
	// nothing today, and everything the day the flag goes: it is said.
	var fileOnly *Error
	if _, err := load(Flags{Config: c.File}, nil); errors.As(err, &fileOnly) {
		for _, p := range fileOnly.Problems {
			if errors.Is(p, errNoCredentialsKey) {
				continue
			}
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s: %v (a problem without the flags and variables given)", c.File, p))
		}
	}
	return c, nil
}

func load(flags Flags, environ []string) (*Config, error) {
	l := &loader{flags: flags, vars: envMap(environ)}
	if err := l.read(); err != nil {
		return nil, err
	}
	l.defaults()
	l.servers()
	l.numbers()
	l.registries()
	l.tokens()
	l.launches()
	l.credentials()
	errs := append(l.errs, notCovered(l.c.validate(), l.errs)...)
	if len(errs) > 0 {
		src := "flags and environment"
		if l.path != "" {
			src = l.path
		}
		return nil, &Error{Source: src, Problems: l.e.named(flags, errs)}
	}
	return l.c, nil
}

// A loader builds a Config from the flags, the environment and the file,
// step by step, collecting every problem so that all are reported
// together.
type loader struct {
	flags Flags
	vars  map[string]string // the environment
	e     environment
	path  string // the config file's; "" for none
	f     file
	c     *Config
	errs  []error
}

// read reads the environment and the config file.
func (l *loader) read() error {
	if err := env.ParseWithOptions(&l.e, env.Options{Prefix: "ARDGATE_", Environment: l.vars}); err != nil {
		l.errs = envProblems(err, l.vars, &l.e)
	}
	e := &l.e
	e.Catalogs, e.RequireTrust, e.StdioEnv = trimAll(e.Catalogs), trimAll(e.RequireTrust), trimAll(e.StdioEnv)
	if tok, ok := l.vars["ARD_REGISTRY_TOKEN"]; ok {
		e.ARDRegistryToken = &tok
	}
	l.path = first(l.flags.Config, deref(e.Config))
	if l.path == "" {
		return nil
	}
	f, problems, err := readFile(l.path)
	l.f, l.errs = f, append(l.errs, problems...)
	return err
}

// defaults makes the Config: flags beat the environment, which beats the
// file, which beats the defaults.
func (l *loader) defaults() {
	flags, e, f := l.flags, &l.e, &l.f
	l.c = &Config{
		File:               l.path,
		Transport:          first(flags.Transport, deref(e.Transport), deref(f.Transport), TransportStdio),
		Addr:               first(flags.Addr, deref(e.Addr), deref(f.Addr), DefaultAddr),
		LogLevel:           first(flags.LogLevel, deref(e.LogLevel), deref(f.LogLevel), "info"),
		LogFormat:          first(flags.LogFormat, deref(e.LogFormat), deref(f.LogFormat), "text"),
		OTelEndpoint:       first(flags.OTelEndpoint, deref(e.OTelEndpoint), deref(f.OTelEndpoint)),
		PublicURL:          strings.TrimSuffix(first(deref(e.PublicURL), deref(f.PublicURL)), "/"),
		AuthToken:          deref(e.AuthToken),
		ARDRegistryToken:   deref(e.ARDRegistryToken),
		RequireTrust:       firstList(e.RequireTrust, f.RequireTrust),
		AllowAttachTypes:   bothMCPNames(firstList(f.AllowAttachTypes, DefaultAllowAttachTypes)),
		MaxAttachments:     DefaultMaxAttachments,
		MaxSessions:        DefaultMaxSessions,
		SessionIdleTimeout: DefaultSessionIdle,
		SessionReapAfter:   DefaultSessionReap,
		AllowLocalURLs:     false,
		FastPath:           bool(*firstPtr(e.FastPath, (*Switch)(f.FastPath), &on)),
		CallTimeout:        DefaultCallTimeout,
		PinnedListWait:     DefaultPinnedListWait,
		StartTimeout:       DefaultStartTimeout,
		MaxResultBytes:     DefaultMaxResultBytes,
		ToolMode:           first(deref(f.ToolMode), ToolModeListed),
		Consent:            first(deref(f.Consent), ConsentRemoteRegistries),
		Limits:             DefaultLimits,
		Servers:            f.Servers,
		Agents:             f.Agents,
	}
}

// bothMCPNames adds to types the other name of the MCP server card's
// type when it holds one: they name one artifact, and registries use
// both. Everruns' Quick Start allows the older name only, which refused
// every entry of the newer.
func bothMCPNames(types []string) []string {
	for _, pair := range [][2]string{{MediaMCPServerCard, MediaMCPServerOld}, {MediaMCPServerOld, MediaMCPServerCard}} {
		if slices.Contains(types, pair[0]) && !slices.Contains(types, pair[1]) {
			return append(slices.Clone(types), pair[1])
		}
	}
	return types
}

// on is a Switch's default.
var on = Switch(true)

// servers adds the servers of a pasted desktop config to the file's, and
// expands and normalises them all.
func (l *loader) servers() {
	c := l.c
	for _, d := range []struct {
		at      string
		servers map[string]desktopServer
	}{{"mcpServers", l.f.MCPServers}, {"servers", l.f.VSCodeServers}} {
		servers, problems := desktopServers(d.at, d.servers)
		c.Servers, l.errs = append(c.Servers, servers...), append(l.errs, problems...)
	}
	if l.f.Inputs != nil {
		c.Warnings = append(c.Warnings, "inputs: VS Code's prompts are not asked: a ${input:…} value is refused")
	}
	for i := range c.Servers {
		w, problems := expandServer(&c.Servers[i], c.Servers[i].field(i), l.vars)
		c.Warnings, l.errs = append(c.Warnings, w...), append(l.errs, problems...)
	}
	c.normalNames()
}

// numbers sets the caps, durations and rate limits.
func (l *loader) numbers() {
	c, e, f := l.c, &l.e, &l.f
	if v := firstPtr(e.MaxAttachments, f.MaxAttachments); v != nil {
		c.MaxAttachments = *v
	}
	if v := firstPtr(e.MaxSessions, f.MaxSessions); v != nil {
		c.MaxSessions = *v
	}
	if v := firstPtr(e.AllowLocalURLs, f.AllowLocalURLs); v != nil {
		c.AllowLocalURLs = *v
	}
	for _, d := range []struct {
		field string
		value *string
		into  *time.Duration
	}{{"call_timeout", f.CallTimeout, &c.CallTimeout}, {"max_call_time", f.MaxCallTime, &c.MaxCallTime}, {"pinned_list_wait", f.PinnedListWait, &c.PinnedListWait},
		{"start_timeout", f.StartTimeout, &c.StartTimeout},
		{"session_idle_timeout", firstPtr(e.SessionIdle, f.SessionIdle), &c.SessionIdleTimeout},
		{"session_reap_after", firstPtr(e.SessionReap, f.SessionReap), &c.SessionReapAfter}} {
		if d.value == nil {
			continue
		}
		v, err := time.ParseDuration(*d.value)
		if err != nil {
			l.errs = append(l.errs, fieldError(d.field, "%q is not a duration like \"60s\"", *d.value))
		} else {
			*d.into = v
		}
	}
	if f.MaxCallTime == nil {
		c.MaxCallTime = max(DefaultMaxCallTime, c.CallTimeout)
	}
	if f.MaxResultBytes != nil {
		c.MaxResultBytes = *f.MaxResultBytes
	}
	if f.Limits != nil {
		c.Limits = f.Limits.Limits
		c.Limits.RepeatWindow = DefaultLimits.RepeatWindow
		if f.Limits.RepeatWindow != "" {
			d, err := time.ParseDuration(f.Limits.RepeatWindow)
			if err != nil || d <= 0 {
				l.errs = append(l.errs, fieldError("limits.repeat_window", "%q is not a positive duration like \"60s\"", f.Limits.RepeatWindow))
			}
			c.Limits.RepeatWindow = d
		}
	}
}

// registries sets the file's list (or builtin alone), then one catalog
// registry per catalog file named by flags, env or file. Paths are
// relative to the config file, not the working directory.
func (l *loader) registries() {
	c := l.c
	c.Registries = l.f.Registries
	for i := range c.Registries {
		l.fileRegistry(&c.Registries[i])
	}
	if c.Registries == nil {
		c.Registries = []Registry{{ID: BuiltinRegistryID, Kind: KindCatalog}}
	}
	for _, p := range l.catalogPaths() {
		c.Registries = append(c.Registries, Registry{ID: catalogID(p, c.Registries), Kind: KindCatalog, Path: p})
	}
}

// fileRegistry fills in what a registry of the file may leave out: its
// kind, and the config file's directory before a relative catalog path.
func (l *loader) fileRegistry(r *Registry) {
	// Everruns writes its registries as id, url and federation: a
	// registry with a url and no kind is an ARD registry.
	if r.Kind == "" && r.URL != "" {
		r.Kind = KindARD
	} else if r.Kind == "" && r.Path != "" {
		r.Kind = KindCatalog
	}
	if r.Kind == KindCatalog && r.Path != "" && !filepath.IsAbs(r.Path) && l.path != "" {
		r.Path = filepath.Join(filepath.Dir(l.path), r.Path)
	}
}

// catalogPaths returns the catalog files that flags, else env, else the
// file name; the file's are relative to it.
func (l *loader) catalogPaths() []string {
	if catalogs := firstList(l.flags.Catalogs, l.e.Catalogs); catalogs != nil {
		return catalogs
	}
	var catalogs []string
	for _, p := range l.f.Catalogs {
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(l.path), p)
		}
		catalogs = append(catalogs, p)
	}
	return catalogs
}

// tokens reads the tokens that token_env names, with the rest of the
// environment.
func (l *loader) tokens() {
	c := l.c
	for i := range c.Registries {
		switch r := &c.Registries[i]; {
		case r.TokenEnv != "":
			r.Token = l.token(fmt.Sprintf("registries[%d]", i), r.TokenEnv)
		case r.Kind == KindARD:
			r.Token = c.ARDRegistryToken
		}
	}
	for i := range c.Agents {
		if a := &c.Agents[i]; a.TokenEnv != "" {
			a.Token = l.token(fmt.Sprintf("agents[%d]", i), a.TokenEnv)
		}
	}
	for i := range c.Servers {
		if sv := &c.Servers[i]; sv.TokenEnv != "" {
			sv.Token = l.token(fmt.Sprintf("servers[%d]", i), sv.TokenEnv)
		}
	}
}

// token returns variable name's value for field's token_env, saying when
// it is not set or empty, and refusing one no header can carry.
func (l *loader) token(field, name string) string {
	v, ok := l.vars[name]
	switch {
	case !ok:
		l.c.Warnings = append(l.c.Warnings, fmt.Sprintf("%s.token_env: %s is not set: requests go without a token", field, name))
	case v == "":
		l.c.Warnings = append(l.c.Warnings, fmt.Sprintf("%s.token_env: %s is empty: requests go without a token", field, name))
	case strings.TrimSpace(v) != v || !httpguts.ValidHeaderFieldValue(v):
		// Sent as a header as it is: a line break (often the end of a
		// file the secret came from) failed every request, unnamed.
		l.errs = append(l.errs, fieldError(field+".token_env", "%s holds white space at an end, a line break or a control character; a token is sent in a header as it is", name))
	}
	return v
}

// credentials sets the store of credentials, its file relative to the
// config file's directory, and its key from the environment or the file
// it names: a store with no key, or a key that is not 32 random bytes, is
// refused, never kept unencrypted or weakly.
func (l *loader) credentials() {
	c := l.c
	if f := l.f.Credentials; f != nil {
		c.Credentials.Store = f.Store
	}
	if p := c.Credentials.Store; p != "" && !filepath.IsAbs(p) && l.path != "" {
		c.Credentials.Store = filepath.Join(filepath.Dir(l.path), p)
	}
	keySet := deref(l.e.CredentialsKey) != "" || deref(l.e.CredentialsKeyFile) != ""
	switch {
	case c.Credentials.Store == "" && keySet:
		c.Warnings = append(c.Warnings, "ARDGATE_CREDENTIALS_KEY or ARDGATE_CREDENTIALS_KEY_FILE is set, but credentials.store is not: nothing is kept")
	case c.Credentials.Store == "":
	case !keySet:
		l.errs = append(l.errs, fmt.Errorf("%w, and credentials.store needs it (or ARDGATE_CREDENTIALS_KEY_FILE, a file holding it) to encrypt its file: %s", errNoCredentialsKey, keyHint))
	default:
		text, from, err := l.credentialsKeyText()
		if err != nil {
			l.errs = append(l.errs, err)
			return
		}
		k, err := credentialsKey(text)
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("%s: %v: %s", from, err, keyHint))
		}
		c.Credentials.Key = k
	}
}

// credentialsKeyText is the text of the store's key, and where it came
// from: ARDGATE_CREDENTIALS_KEY, or the file ARDGATE_CREDENTIALS_KEY_FILE
// names, which keeps the key out of the gateway's environment (a
// launched server of its uid may read that on other systems than Linux).
// Both set is refused: which one wins would be a guess.
func (l *loader) credentialsKeyText() (text, from string, err error) {
	key, file := deref(l.e.CredentialsKey), deref(l.e.CredentialsKeyFile)
	switch {
	case file == "":
		return key, "ARDGATE_CREDENTIALS_KEY", nil
	case key != "":
		return "", "", errors.New("ARDGATE_CREDENTIALS_KEY and ARDGATE_CREDENTIALS_KEY_FILE are both set: set one")
	}
	b, err := readKeyFile(file)
	if err != nil {
		return "", "", fmt.Errorf("ARDGATE_CREDENTIALS_KEY_FILE: %w", err)
	}
	return string(b), "ARDGATE_CREDENTIALS_KEY_FILE " + file, nil
}

// maxKeyFile bounds the key file: a key in base64 is 44 bytes.
const maxKeyFile = 4 << 10

// readKeyFile reads the file of the store's key, refusing one that group
// or others may read (on unix: Windows has no such mode bits), or that
// is not a regular file of at most maxKeyFile bytes.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", path)
	case runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("%s may be read by others than its owner (mode %04o): chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err == nil && len(b) > maxKeyFile {
		err = fmt.Errorf("%s is over %d bytes: it is not a key", path, maxKeyFile)
	}
	return b, err
}

// errNoCredentialsKey: a store is set, and its key is not. A problem of
// the environment, not the file: Load's reading of the file alone does
// not warn of it.
var errNoCredentialsKey = errors.New("ARDGATE_CREDENTIALS_KEY: not set")

// keyHint says how to make a key of the credentials store.
const keyHint = "set it to 32 random bytes in base64, such as `head -c 32 /dev/urandom | base64` makes"

// credentialsKey decodes v, a key of the credentials store, refusing one
// that is not CredentialsKeySize bytes or that no random source made:
// one that repeats a few bytes ("aaaa…", all zeros) is a placeholder.
func credentialsKey(v string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil {
		if k, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(v)); err != nil {
			return nil, errors.New("not base64")
		}
	}
	if len(k) != CredentialsKeySize {
		return nil, fmt.Errorf("%d bytes, not %d", len(k), CredentialsKeySize)
	}
	seen := map[byte]bool{}
	for _, b := range k {
		seen[b] = true
	}
	// 32 random bytes hold 30 distinct values, as a rule, and fewer than
	// 16 about never.
	if len(seen) < 16 {
		return nil, fmt.Errorf("a weak key: its 32 bytes hold %d distinct values, where random bytes hold about 30", len(seen))
	}
	return k, nil
}

// launches sets the launch policy, and warns of servers that cannot
// start and of an address no stdio gateway listens on.
func (l *loader) launches() {
	c, e, f := l.c, &l.e, &l.f
	for i, sv := range c.Servers {
		if sv.Command == "" {
			continue
		}
		// Looked up as the launch will look it up, on the gateway's PATH.
		if _, err := exec.LookPath(sv.Command); err != nil {
			why := "no program of that name on the PATH"
			if strings.ContainsRune(sv.Command, '/') {
				why = "no executable file there"
			}
			c.Warnings = append(c.Warnings, fmt.Sprintf("servers[%d].command: %s: %s: the server %s will be down", i, sv.Command, why, sv.Name))
		}
	}
	if c.Transport == TransportStdio && c.Addr != DefaultAddr {
		c.Warnings = append(c.Warnings, fmt.Sprintf("addr %s is for transport http: serving stdio, listening nowhere", c.Addr))
	}
	if c.Transport == TransportStdio && c.PublicURL != "" {
		c.Warnings = append(c.Warnings, fmt.Sprintf("public_url %s is for transport http: serving stdio, the user's pages are on loopback listeners", c.PublicURL))
	}
	c.Stdio = Stdio{Launchers: DefaultLaunchers, MemoryMiB: DefaultStdioMemoryMiB}
	if f.Stdio != nil {
		c.Stdio = Stdio{AllowFrom: f.Stdio.AllowFrom, Launchers: firstList(f.Stdio.Launchers, DefaultLaunchers), Env: f.Stdio.Env,
			MemoryMiB: DefaultStdioMemoryMiB, CPUSeconds: f.Stdio.CPUSeconds, OpenFiles: f.Stdio.OpenFiles, FileMiB: f.Stdio.FileMiB}
	}
	if v := firstPtr(e.StdioMemoryMiB, deref(f.Stdio).MemoryMiB); v != nil {
		c.Stdio.MemoryMiB = *v
	}
	// An IDE's config sets the gateway's environment, not a file: the
	// variables it passes on can be named there too.
	c.Stdio.Env = firstList(e.StdioEnv, c.Stdio.Env)
	if f.Stdio == nil || f.Stdio.AllowFrom == nil {
		// Default: local catalogs the operator named (and builtin), never a
		// remote registry.
		for _, r := range c.Registries {
			if r.Kind == KindCatalog {
				c.Stdio.AllowFrom = append(c.Stdio.AllowFrom, r.ID)
			}
		}
	}
}

// named says, of each problem with a value the environment set, which
// variable set it: the problems name the file's fields, which a user who
// set ARDGATE_SESSION_IDLE_TIMEOUT=500ms would look for in vain.
func (e *environment) named(flags Flags, problems []error) []error {
	set := map[string]string{}
	for _, v := range []struct {
		field, name string
		set         bool
	}{
		{"transport", "TRANSPORT", e.Transport != nil && flags.Transport == ""},
		{"addr", "ADDR", e.Addr != nil && flags.Addr == ""},
		{"log_level", "LOG_LEVEL", e.LogLevel != nil && flags.LogLevel == ""},
		{"log_format", "LOG_FORMAT", e.LogFormat != nil && flags.LogFormat == ""},
		{"otel_endpoint", "OTEL_ENDPOINT", e.OTelEndpoint != nil && flags.OTelEndpoint == ""},
		{"public_url", "PUBLIC_URL", e.PublicURL != nil},
		{"max_attachments", "MAX_ATTACHMENTS", e.MaxAttachments != nil},
		{"max_sessions", "MAX_SESSIONS", e.MaxSessions != nil},
		{"session_idle_timeout", "SESSION_IDLE_TIMEOUT", e.SessionIdle != nil},
		{"session_reap_after", "SESSION_REAP_AFTER", e.SessionReap != nil},
		{"fast_path", "FAST_PATH", e.FastPath != nil},
		{"require_trust", "REQUIRE_TRUST", e.RequireTrust != nil},
		{"stdio.env", "STDIO_ENV", e.StdioEnv != nil},
		{"stdio.memory_mib", "STDIO_MEMORY_MIB", e.StdioMemoryMiB != nil},
	} {
		if v.set {
			set[v.field] = "ARDGATE_" + v.name
		}
	}
	out := make([]error, len(problems))
	for i, p := range problems {
		out[i] = p
		field, rest, _ := strings.Cut(p.Error(), ":")
		key, _, _ := strings.Cut(field, "[") // stdio.env[1] is stdio.env's
		if name, ok := set[key]; ok {
			out[i] = fmt.Errorf("%s (from %s):%s", field, name, rest)
		}
	}
	return out
}

// envProblems are the environment's parse errors, each naming its
// variable, its value and what it should be. The fields they are about
// are left unset, so that validation does not report them again.
func envProblems(err error, vars map[string]string, into *environment) []error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return []error{err}
	}
	var problems []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			if f, ok := reflect.TypeFor[environment]().FieldByName(pe.Name); ok {
				name := "ARDGATE_" + f.Tag.Get("env")
				problems = append(problems, fmt.Errorf("%s: %q is not %s", name, vars[name], jsonWord(f.Type)))
				reflect.ValueOf(into).Elem().FieldByIndex(f.Index).SetZero()
				continue
			}
		}
		problems = append(problems, e)
	}
	return problems
}

// trimAll trims the items of a comma list ("soc2, iso27001") and drops
// empty ones.
func trimAll(list []string) []string {
	if list == nil {
		return nil
	}
	out := []string{}
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Error lists every problem found in the configuration, one per line.
type Error struct {
	Source   string
	Problems []error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid configuration (%s):", e.Source)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns the individual problems.
func (e *Error) Unwrap() []error { return e.Problems }

const maxConfigSize = 4 << 20

// readFile reads the config file. A file that cannot be read as JSON is an
// error; otherwise problems lists every unknown field, duplicate key and
// value of the wrong type, and f holds the rest of the file, so that Load
// can still check its values and report everything in one go.
func readFile(path string) (f file, problems []error, err error) {
	f = file{Limits: &fileLimits{Limits: DefaultLimits}}
	fh, err := os.Open(path)
	if err != nil {
		return f, nil, fmt.Errorf("config file: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxConfigSize+1))
	if err != nil {
		return f, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(data) > maxConfigSize {
		return f, nil, fmt.Errorf("config file %s: larger than %d bytes", path, maxConfigSize)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return f, nil, fmt.Errorf("config file %s is empty", path)
	}
	// The syntax is checked first: past a syntax error nothing can be
	// trusted, so it is the one error reported.
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(new(any)); err != nil {
		return f, nil, fmt.Errorf("config file %s: %w", path, JSONError(data, err))
	}
	if dec.InputOffset() < int64(len(data)) {
		return f, nil, fmt.Errorf("config file %s: trailing data after the JSON object", path)
	}
	if data[0] != '{' {
		return f, nil, fmt.Errorf("config file %s: not a JSON object", path)
	}
	var w walker
	clean, err := json.Marshal(w.value("", reflect.TypeFor[file](), data))
	if err == nil {
		err = json.Unmarshal(clean, &f)
	}
	if err != nil { // cannot happen: the walk kept only values that fit
		return f, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return f, w.problems, nil
}

// walker checks a JSON document against the Go type it decodes into and
// collects every problem, where json.Decoder stops at the first and names
// Go types. It also finds duplicate keys, which json.Decoder accepts.
type walker struct {
	problems []error
}

// value checks raw, valid JSON, against t at the field path and returns
// what fits in a form json.Marshal writes back. A value of the wrong type
// becomes null, the zero value, rather than being dropped, so that list
// indexes, and the paths later problems name, stay as in the file.
func (w *walker) value(path string, t reflect.Type, raw json.RawMessage) any {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return nil // json.Unmarshal leaves the field as it is, as before
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if raw[0] != '{' {
			return w.wrong(path, raw, "an object")
		}
		return w.object(path, t, raw)
	case reflect.Slice:
		return w.list(path, t, raw)
	}
	if k, ok := scalarKinds[t.Kind()]; ok && !k.fits(raw) {
		return w.wrong(path, raw, k.want)
	}
	return raw
}

// scalarKinds say, for each kind of scalar a field may hold, what its
// value must be and whether raw is one.
var scalarKinds = map[reflect.Kind]struct {
	want string
	fits func(raw json.RawMessage) bool
}{
	reflect.String: {"a string", func(raw json.RawMessage) bool { return raw[0] == '"' }},
	reflect.Bool:   {"true or false", func(raw json.RawMessage) bool { return raw[0] == 't' || raw[0] == 'f' }},
	reflect.Int: {"a whole number", func(raw json.RawMessage) bool {
		_, err := strconv.Atoi(string(raw))
		return err == nil
	}},
	reflect.Float64: {"a number", func(raw json.RawMessage) bool {
		_, err := strconv.ParseFloat(string(raw), 64)
		return err == nil
	}},
}

// list checks each item of a JSON list, raw, against slice t's element.
func (w *walker) list(path string, t reflect.Type, raw json.RawMessage) any {
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return w.wrong(path, raw, "a list")
	}
	out := make([]any, len(items))
	for i, item := range items {
		out[i] = w.value(fmt.Sprintf("%s[%d]", path, i), t.Elem(), item)
	}
	return out
}

// object checks the keys of a JSON object, raw, against struct or map t.
func (w *walker) object(path string, t reflect.Type, raw json.RawMessage) map[string]any {
	out := map[string]any{}
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	_, err := dec.Token() // {
	for err == nil && dec.More() {
		var tok json.Token
		var v json.RawMessage
		if tok, err = dec.Token(); err == nil {
			err = dec.Decode(&v)
		}
		key, _ := tok.(string)
		field := key
		if path != "" {
			field = path + "." + key
		}
		elem, known := jsonField(t, key)
		if t == reflect.TypeFor[file]() && key == "servers" && bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
			key = vscodeServers
			elem, known = jsonField(t, key)
		}
		switch {
		case err != nil:
		case seen[key]:
			w.problems = append(w.problems, fieldError(field, "set twice"))
		case !known:
			w.problems = append(w.problems, fieldError(field, "unknown field %q", key))
		default:
			out[key] = w.value(field, elem, v)
		}
		seen[key] = true
	}
	if err != nil { // cannot happen: readFile checked the syntax
		w.problems = append(w.problems, fieldError(path, "%v", err))
	}
	return out
}

// vscodeServers is the key VS Code's servers object is kept under.
const vscodeServers = "servers (VS Code)"

// wrong records that the value at path is not what it should be.
func (w *walker) wrong(path string, raw json.RawMessage, want string) any {
	got := string(raw)
	switch raw[0] {
	case '{':
		got = "an object"
	case '[':
		got = "a list"
	}
	w.problems = append(w.problems, fieldError(path, "%s is not %s", got, want))
	return nil
}

// jsonField returns the type of the field of t, a struct or a map, that
// key decodes into. Names must match exactly: json.Decoder ignores case,
// which would let "Max_Attachments" and "max_attachments" both set one field.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	if t.Kind() == reflect.Map {
		return t.Elem(), true
	}
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && !f.Anonymous && name != "-" && name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// notCovered returns the problems that are not about a field, or a part of
// one, that reported already names: a value of the wrong type is left at its
// zero value, and validation would report that field again.
func notCovered(problems, reported []error) []error {
	var out []error
	for _, p := range problems {
		f, _, _ := strings.Cut(p.Error(), ": ")
		if !slices.ContainsFunc(reported, func(r error) bool {
			rf, _, _ := strings.Cut(r.Error(), ": ")
			return f == rf || strings.HasPrefix(f, rf+".") || strings.HasPrefix(f, rf+"[")
		}) {
			out = append(out, p)
		}
	}
	return out
}

// JSONError says where a JSON syntax error is in a file people write
// (config files and catalogs), in the line and column an editor shows.
func JSONError(data []byte, err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		// Offset counts the bytes read, the offending one included, or
		// all of them when the input ended too soon.
		before := data
		if syn.Error() != "unexpected end of JSON input" {
			before = data[:max(0, min(int(syn.Offset)-1, len(data)))]
		}
		line := bytes.Count(before, []byte("\n")) + 1
		col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
		return fmt.Errorf("line %d, column %d: %w", line, col, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the file ends before the JSON is complete")
	}
	return JSONTypeError(err)
}

// JSONTypeError says, of a value of the wrong JSON type, which field it is
// and what it must be, in JSON's words ("pageSize" is a JSON string; it
// must be a whole number) where encoding/json speaks of Go struct fields.
// Other errors come back as they are.
func JSONTypeError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return err
	}
	return fmt.Errorf("%q is a JSON %s; it must be %s", te.Field, te.Value, jsonWord(te.Type))
}

// jsonWord says what a value of Go type t is written as, in JSON (and in
// the environment's variables).
func jsonWord(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		if t == reflect.TypeFor[Switch]() {
			return "on or off (or true or false)"
		}
		return "true or false"
	case reflect.Slice:
		return "an array"
	}
	return "an object"
}

// catalogID derives a registry id from a catalog file name, unique among
// the registries so far.
func catalogID(path string, existing []Registry) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	id := strings.Trim(b.String(), "-_")
	if id == "" {
		id = "catalog"
	}
	if len(id) > 24 {
		id = id[:24]
	}
	taken := func(s string) bool {
		return slices.ContainsFunc(existing, func(r Registry) bool { return r.ID == s })
	}
	cand := id
	for n := 2; taken(cand); n++ {
		cand = fmt.Sprintf("%s-%d", id, n)
	}
	return cand
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstList(lists ...[]string) []string {
	for _, l := range lists {
		if l != nil {
			return l
		}
	}
	return nil
}

func firstPtr[T any](ps ...*T) *T {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}
