package attach

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/ardgate/ardgate/attach/fault"
	"github.com/ardgate/ardgate/attach/oauth"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
)

// Transports an MCP upstream can be reached over.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Plan says how to reach one MCP upstream: a local process or a URL.
type Plan struct {
	// Transport is stdio, streamable-http or sse.
	Transport string
	// Program, Args and Env describe a stdio launch. Env is the child's
	// whole environment.
	Program string
	Args    []string
	Env     []string
	// OwnDir runs the child in an empty directory of its own, removed
	// once it has exited: what lies where the gateway was started (a
	// project's .npmrc, uv.toml or a package tarball) must not choose
	// what npx or uvx fetch and run, nor what one launched server leaves
	// in its directory what the next runs. Launches of registry entries
	// have it; pinned servers run where the gateway runs, as the
	// operator's command may expect.
	OwnDir bool
	// Own: the operator configured it (a pinned server), so it is reached
	// through the operator's client (Manager.OwnHTTP).
	Own bool
	// Unset are the environment variables a registry's package declares,
	// does not require and has no default for, that the operator has not
	// passed: it may need them (a token), and fail to start without.
	Unset []string
	// Keys are the variables a registry's package requires that the
	// operator has not passed: the user is asked for them (keys.go), and
	// the launch waits until the session holds them.
	Keys []keySpec
	// packageID is the registry's package a stdio launch of a registry
	// entry runs: what keys the user gives are for (keysFor).
	packageID packageID
	// given are the values the user gave for Keys, by name, once the
	// session holds them (Session.keyed): masked in what the process
	// writes to its stderr (redactor).
	given map[string]string
	// Framing is a stdio launch's: config.FramingNewline (the default,
	// when empty) or config.FramingContentLength.
	Framing string
	// URL and Headers describe a remote.
	URL     string
	Headers map[string]string
	// grant, when set, sends the session's OAuth token to the remote
	// (auth.go).
	grant *oauth.Grant
}

// packageID names a registry's package as a plan launches it.
type packageID struct {
	RegistryType, Identifier string
	Version                  string // "latest" when the registry gave none
}

func (p packageID) String() string { return p.RegistryType + " " + p.Identifier + " " + p.Version }

// Endpoint describes the plan in one line, for listings and logs; a URL's
// password and query are masked.
func (p Plan) Endpoint() string {
	if p.Transport == TransportStdio {
		return "stdio: " + strings.Join(append([]string{p.Program}, p.Args...), " ")
	}
	return redacted(p.URL)
}

// redacted is a URL as a client may see it: a password in it, and its
// query, which often holds a key, are masked.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "xxxxx"
	}
	return u.Redacted()
}

// ErrNotAttachable is wrapped by every reason an entry cannot be attached.
var ErrNotAttachable = fault.ErrNotAttachable

var notAttachable = fault.NotAttachable

// serverCard is the part of an MCP server card / server.json that says how
// to reach the server.
type serverCard struct {
	Name     string            `json:"name"`
	Packages []pkg             `json:"packages"`
	Remotes  []remote          `json:"remotes"`
	Tools    []json.RawMessage `json:"tools"`
}

type pkg struct {
	RegistryType         string       `json:"registryType"`
	Identifier           string       `json:"identifier"`
	Version              string       `json:"version"`
	RuntimeHint          string       `json:"runtimeHint"`
	Transport            pkgTransport `json:"transport"`
	RuntimeArguments     []argument   `json:"runtimeArguments"`
	PackageArguments     []argument   `json:"packageArguments"`
	EnvironmentVariables []envVar     `json:"environmentVariables"`
}

type pkgTransport struct {
	Type string `json:"type"`
	// Framing is ardgate's: a card may say a package frames its stdio
	// with Content-Length headers, as a server's config may.
	Framing string `json:"framing"`
}

type argument struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Value      string `json:"value"`
	Default    string `json:"default"`
	ValueHint  string `json:"valueHint"`
	IsRequired bool   `json:"isRequired"`
}

type envVar struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	IsRequired  bool   `json:"isRequired"`
	// IsSecret, when false, shows the value as it is typed; unsaid, it is
	// masked, as most required variables are keys.
	IsSecret *bool  `json:"isSecret"`
	Default  string `json:"default"`
}

type remote struct {
	Type    string   `json:"type"`
	URL     string   `json:"url"`
	Headers []header `json:"headers"`
}

type header struct {
	Name       string `json:"name"`
	Value      string `json:"value"`
	IsRequired bool   `json:"isRequired"`
}

// launchers maps a package registry type to its launcher and the argument
// list that runs identifier@version with no shell involved.
var launchers = map[string]launcher{
	// "--" ends npx's own options: nothing after it can become one.
	"npm": {"npx", func(id, v string) []string {
		if v != "" && v != "latest" {
			id += "@" + v
		}
		return []string{"-y", "--", id}
	}},
	"pypi": {"uvx", func(id, v string) []string {
		if v != "" && v != "latest" {
			id += "==" + v
		}
		return []string{id}
	}},
}

// launcher is a program that installs and runs a package: args are its
// arguments for a package's id and version.
type launcher struct {
	program string
	args    func(id, version string) []string
}

// placeholder matches values a registry left for a person to fill in:
// ${input:x}, a {variable} template, <x>, $VARIABLE, your-x or YOUR_X
// (the MCP Registry's seed has "--apiClientId your-atlas-client-id" and
// "--directory $REPOSITORY_DIRECTORY", which were passed as they were).
var placeholder = regexp.MustCompile(`\$\{[^}]*\}|\{[A-Za-z_][A-Za-z0-9_]*\}|^<[^>]*>$|<[a-z_]+>|\$[A-Z][A-Z0-9_]*|(?i)(^|[^a-z0-9])your[-_]`)

// planFor picks how to reach the server a card describes: a streamable
// HTTP remote first, then SSE, then a local stdio package. Candidates that
// policy refuses are skipped; when none is left, the error gives every
// reason.
func planFor(card *serverCard, registryID string, stdio *guard.Stdio) (Plan, error) {
	var reasons []string
	for _, typ := range []string{TransportStreamableHTTP, TransportSSE} {
		for _, r := range card.Remotes {
			if r.Type != typ {
				continue
			}
			p, err := remotePlan(r)
			if err == nil {
				return p, nil
			}
			reasons = append(reasons, err.Error())
		}
	}
	for _, pk := range card.Packages {
		p, err := packagePlan(pk, registryID, stdio)
		if err == nil {
			return p, nil
		}
		reasons = append(reasons, err.Error())
	}
	if len(reasons) == 0 {
		if len(card.Tools) > 0 {
			return Plan{}, notAttachable("the card lists tools but gives no endpoint (no remotes, no packages)")
		}
		return Plan{}, notAttachable("the card gives no endpoint (no remotes, no packages)")
	}
	return Plan{}, notAttachable("%s", strings.Join(reasons, "; "))
}

func remotePlan(r remote) (Plan, error) {
	if r.URL == "" || placeholder.MatchString(r.URL) {
		return Plan{}, fmt.Errorf("%s remote has no usable url", r.Type)
	}
	if _, err := guard.CheckURL(r.URL); err != nil {
		return Plan{}, fmt.Errorf("%s remote: %w", r.Type, err)
	}
	p := Plan{Transport: r.Type, URL: r.URL}
	for _, h := range r.Headers {
		switch {
		case h.Value != "" && !placeholder.MatchString(h.Value):
			if p.Headers == nil {
				p.Headers = map[string]string{}
			}
			p.Headers[h.Name] = h.Value
		case h.IsRequired:
			return Plan{}, fmt.Errorf("%s remote %s needs header %s, which ardgate cannot fill in", r.Type, r.URL, h.Name)
		}
	}
	return p, nil
}

func packagePlan(pk pkg, registryID string, stdio *guard.Stdio) (Plan, error) {
	where := fmt.Sprintf("%s package %s", pk.RegistryType, pk.Identifier)
	l, err := pk.launcher(registryID, stdio)
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", where, err)
	}
	args, err := pk.arguments(l.args(pk.Identifier, pk.Version))
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", where, err)
	}
	env, unset, keys, err := pk.environment(stdio)
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", where, err)
	}
	id := packageID{RegistryType: pk.RegistryType, Identifier: pk.Identifier, Version: cmp.Or(pk.Version, "latest")}
	return Plan{Transport: TransportStdio, Program: l.program, Args: args, Env: env, OwnDir: true, Unset: unset, Keys: keys, Framing: pk.Transport.Framing,
		packageID: id}, nil
}

// launcher is what launches pk, once the package, its registry and its
// launcher pass the policy.
func (pk pkg) launcher(registryID string, stdio *guard.Stdio) (launcher, error) {
	if t := pk.Transport.Type; t != "" && t != TransportStdio {
		return launcher{}, fmt.Errorf("transport %q is not supported for packages (stdio is)", t)
	}
	if f := pk.Transport.Framing; f != "" && f != config.FramingNewline && f != config.FramingContentLength {
		return launcher{}, fmt.Errorf("framing %q is not newline or content-length", guard.Text(f, 40))
	}
	l, ok := launchers[pk.RegistryType]
	if !ok {
		return launcher{}, fmt.Errorf("registry type %q cannot be launched (npm and pypi can)", pk.RegistryType)
	}
	if pk.RuntimeHint != "" && pk.RuntimeHint != l.program {
		return launcher{}, fmt.Errorf("runtime %q is not %s", pk.RuntimeHint, l.program)
	}
	// Runtime arguments go to the launcher itself (npx -c runs a shell
	// command), so a registry may not supply them.
	if len(pk.RuntimeArguments) > 0 {
		return launcher{}, errors.New("has runtimeArguments, which ardgate never passes to a launcher")
	}
	if err := guard.CheckPackage(pk.RegistryType, pk.Identifier, pk.Version); err != nil {
		return launcher{}, err
	}
	if err := stdio.CheckRegistry(registryID); err != nil {
		return launcher{}, err
	}
	return l, stdio.CheckLauncher(l.program)
}

// arguments are args, the launcher's, with pk's package arguments after
// them: those left as placeholders dropped, or refused when required.
func (pk pkg) arguments(args []string) ([]string, error) {
	for _, a := range pk.PackageArguments {
		name, v := a.nameValue()
		if v == "" || placeholder.MatchString(v) {
			if a.IsRequired {
				return nil, fmt.Errorf("needs argument %s, which ardgate cannot fill in", firstNonEmpty(name, a.ValueHint, "(unnamed)"))
			}
			continue
		}
		if a.Type == "named" && name != "" {
			args = append(args, name)
		}
		args = append(args, v)
	}
	return args, nil
}

// nameValue is the argument's flag and value as passed.
func (a argument) nameValue() (name, value string) {
	value, name = cmp.Or(a.Value, a.Default), a.Name
	if flag, rest, ok := strings.Cut(strings.TrimSpace(a.Name), " "); ok && a.Type == "named" {
		// "--directory <path>" as the name and again as the value (the
		// seed's shape): the flag, then its value, once.
		name = flag
		if strings.TrimSpace(value) == strings.TrimSpace(a.Name) {
			value = strings.TrimSpace(rest)
		}
	}
	return name, value
}

// environment is the child's environment, the operator's, the
// variables pk declares and may need (unset), and those it requires that
// the user is asked for (keys). A registry never sets a child's
// environment (NODE_OPTIONS would run its code); required variables come
// from the operator or from the user, and a variable that a launcher or
// the loader reads is never asked for (keyName). Those it declares and
// does not require (most registry data never says isRequired, a
// GITHUB_TOKEN included) are named in discovery and in a failed start, as
// what it may need.
func (pk pkg) environment(stdio *guard.Stdio) (env, unset []string, keys []keySpec, err error) {
	var missing []string
	env = stdio.Env(nil)
	for _, ev := range pk.EnvironmentVariables {
		if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, ev.Name+"=") }) || len(ev.Name) > 64 || !config.IsEnvName(ev.Name) {
			continue
		}
		switch {
		case !ev.IsRequired:
			if ev.Default == "" && !slices.Contains(unset, ev.Name) && len(unset) < maxUnset {
				unset = append(unset, ev.Name)
			}
		case slices.ContainsFunc(keys, func(k keySpec) bool { return k.Name == ev.Name }): // declared twice: asked once
		case !keyName(ev.Name) || len(keys) == maxKeys:
			missing = append(missing, ev.Name)
		default:
			keys = append(keys, newKeySpec(ev))
		}
	}
	if len(missing) > 0 {
		return nil, nil, nil, fmt.Errorf("needs environment variables %s; the operator must set them and list them in stdio.env", strings.Join(missing, ", "))
	}
	return env, unset, keys, nil
}

// maxUnset bounds the variables a plan names as unset.
const maxUnset = 10

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
