package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// desktopServer is one server of the mcpServers object that Claude
// Desktop, Cursor and Claude Code write, or of VS Code's servers object.
// A user pastes the block they already have; Load reads each one as a
// pinned server.
type desktopServer struct {
	// Type is stdio, http (streamable-http, streamableHttp) or sse;
	// empty, it follows from command or url.
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	// Disabled is Claude Code's and Cline's switch: such a server is
	// left out, as those clients leave it out.
	Disabled bool `json:"disabled"`
}

// desktopTypes maps the type names the clients write to a pinned server's
// transport; "" is a command's or streamable HTTP.
var desktopTypes = map[string]string{
	"": "", "stdio": "", "http": "", "streamable-http": "", "streamableHttp": "",
	"sse": TransportSSE,
}

// desktopServers turns a desktop config's servers, keyed by name, into
// pinned servers, in the order of their names. at is the object's field
// ("mcpServers"), which problems name.
func desktopServers(at string, servers map[string]desktopServer) ([]Server, []error) {
	var out []Server
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		d := servers[name]
		f := at + "." + name
		if d.Disabled {
			continue
		}
		transport, ok := desktopTypes[d.Type]
		if !ok {
			errs = append(errs, fieldError(f+".type", "%q is not stdio, http or sse", d.Type))
		}
		if d.Type == "stdio" && d.URL != "" || d.Type != "" && d.Type != "stdio" && d.Command != "" {
			errs = append(errs, fieldError(f+".type", "%q does not go with %s", d.Type, map[bool]string{true: "url", false: "command"}[d.URL != ""]))
		}
		out = append(out, Server{Name: name, Command: d.Command, Args: d.Args, EnvValues: d.Env,
			URL: d.URL, Headers: d.Headers, Transport: transport, at: f})
	}
	return out, errs
}

// envRef is a reference to the gateway's environment in a value: ${NAME}
// (Claude Code) or ${env:NAME} (Cursor, VS Code). VS Code's ${input:ID}
// asks the user, which ardgate cannot.
var envRef = regexp.MustCompile(`\$\{(env:|input:)?([^}]*)\}`)

// expand replaces the environment references in v with the gateway's
// variables. It returns what it could not resolve, to report.
func expand(v string, vars map[string]string) (string, []string) {
	var unresolved []string
	out := envRef.ReplaceAllStringFunc(v, func(ref string) string {
		m := envRef.FindStringSubmatch(ref)
		if m[1] == "input:" || !IsEnvName(m[2]) {
			unresolved = append(unresolved, ref)
			return ref
		}
		val, ok := vars[m[2]]
		if !ok {
			unresolved = append(unresolved, ref)
		}
		return val
	})
	return out, unresolved
}

// expandServer resolves the environment references in a pinned server's
// env_values and headers. An unset variable becomes "", with a warning, as
// the desktop clients do; ${input:…} is an error.
func expandServer(s *Server, field string, vars map[string]string) (warnings []string, errs []error) {
	for _, part := range []struct {
		name string
		m    map[string]string
	}{{s.envValuesField(), s.EnvValues}, {"headers", s.Headers}} {
		for _, k := range slices.Sorted(maps.Keys(part.m)) {
			v, unresolved := expand(part.m[k], vars)
			part.m[k] = v
			for _, ref := range unresolved {
				switch {
				case strings.HasPrefix(ref, "${input:"):
					errs = append(errs, fieldError(field+"."+part.name+"."+k, "%s asks the user in VS Code, which ardgate cannot: write the value, or ${env:NAME}", ref))
				case !IsEnvName(envRef.FindStringSubmatch(ref)[2]):
					errs = append(errs, fieldError(field+"."+part.name+"."+k, "%s does not name a variable", ref))
				default:
					warnings = append(warnings, fmt.Sprintf("%s.%s.%s: %s is not set: it is empty", field, part.name, k, ref))
				}
			}
		}
	}
	return warnings, errs
}

// normalName turns a name as users write them (openfang-agents, GitHub,
// my.server) into one of ardgate's: lower case, with a run of dashes, dots
// or spaces as one underscore. A name that is still not one of ardgate's
// comes back as it was, for validation to refuse with its reason.
func normalName(n string) string {
	out := strings.ToLower(separators.ReplaceAllString(n, "_"))
	if !namePattern.MatchString(out) {
		return n
	}
	return out
}

var separators = regexp.MustCompile(`[-. ]+`)

// normalNames normalises the names of pinned servers and agents, saying
// which changed: tool names carry the new one.
func (c *Config) normalNames() {
	for i := range c.Servers {
		s := &c.Servers[i]
		c.renamed(s.field(i), &s.Name, "mcp_%s__<tool>")
	}
	for i := range c.Agents {
		c.renamed(fmt.Sprintf("agents[%d]", i), &c.Agents[i].Name, "%s")
	}
}

func (c *Config) renamed(field string, name *string, shown string) {
	n := normalName(*name)
	if n == *name || len(n) > 32 {
		return
	}
	c.Warnings = append(c.Warnings, fmt.Sprintf("%s.name: %q is used as %q (%s)", field, *name, n, fmt.Sprintf(shown, n)))
	*name = n
}

// field is where in the config file a pinned server was written, for
// problems to name.
func (s Server) field(i int) string {
	if s.at != "" {
		return s.at
	}
	return fmt.Sprintf("servers[%d]", i)
}

// envValuesField is the name EnvValues has where the server was written:
// a desktop block calls them env.
func (s Server) envValuesField() string {
	if s.at != "" {
		return "env"
	}
	return "env_values"
}
