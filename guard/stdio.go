package guard

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Stdio is the launch policy for local (stdio) upstream servers.
type Stdio struct {
	// AllowFrom lists the registries whose entries may be launched.
	AllowFrom []string
	// Launchers lists the programs packages may be launched with.
	Launchers []string
	// PassEnv lists variables passed from the gateway's environment to
	// every child, besides PATH.
	PassEnv []string
	// LookupEnv reads the gateway's environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Limits bound each process of a launched server, pinned or not.
	Limits Rlimits
}

// CheckRegistry refuses launching entries from registries not in
// AllowFrom.
func (p *Stdio) CheckRegistry(registryID string) error {
	switch {
	case len(p.AllowFrom) == 0:
		return refuse("stdio.allow_from", "entries from registry %q may not start local processes; stdio.allow_from lets no registry", registryID)
	case !slices.Contains(p.AllowFrom, registryID):
		return refuse("stdio.allow_from", "entries from registry %q may not start local processes; only %v may", registryID, p.AllowFrom)
	}
	return nil
}

// CheckLauncher refuses launchers not in Launchers.
func (p *Stdio) CheckLauncher(launcher string) error {
	if !slices.Contains(p.Launchers, launcher) {
		return refuse("stdio.launchers", "launcher %q is not allowed; allowed: %v", launcher, p.Launchers)
	}
	return nil
}

// Package naming rules per registry type. They keep a registry from
// smuggling options ("-e…", "--yes") into the launcher's argument list.
// Compiled on first use: their bounded repetitions make large programs,
// half a millisecond of every start otherwise.
var packageRules = sync.OnceValue(func() map[string]struct{ name, version *regexp.Regexp } {
	return map[string]struct{ name, version *regexp.Regexp }{
		"npm": {
			// Upper case only for legacy names (JSONStream); never a leading
			// '-', '.' or '_', so no name reads as an option.
			name:    regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._~-]{0,213}$`),
			version: regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`),
		},
		"pypi": {
			name:    regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?$`),
			version: regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}$`),
		},
	}
})

// archiveSuffixes end the names that npx and uvx take for a file to
// install (npm-package-arg's and uv's rules), not a package to fetch.
var archiveSuffixes = []string{".tgz", ".tar", ".tar.gz", ".whl", ".zip", ".tar.bz2", ".tbz", ".tar.xz", ".txz",
	".tar.zst", ".tar.lz", ".tlz", ".tar.lzma"}

// CheckPackage refuses identifiers and versions that break their registry
// type's naming rules. An empty version is allowed (latest).
func CheckPackage(registryType, identifier, version string) error {
	rule, ok := packageRules()[registryType]
	if !ok {
		return refuse("stdio.package", "registry type %q is not launchable (npm and pypi are)", registryType)
	}
	if !rule.name.MatchString(identifier) {
		return refuse("stdio.package", "%q is not a valid %s package name", identifier, registryType)
	}
	if version != "" && !rule.version.MatchString(version) {
		return refuse("stdio.package", "%q is not a valid %s version", version, registryType)
	}
	for _, s := range []string{identifier, version} {
		if slices.ContainsFunc(archiveSuffixes, func(suffix string) bool { return strings.HasSuffix(strings.ToLower(s), suffix) }) {
			return refuse("stdio.package", "%q names an archive file, which the launcher would install from disk, not a %s package", s, registryType)
		}
	}
	return nil
}

// Env returns a child's whole environment: the variables every child
// gets on this OS (PATH; on Windows also what its programs need to start,
// baseEnv) and the policy's, plus extra names, each with its value in the
// gateway's environment. Nothing else of the gateway's environment leaks
// through. Names are told apart as the OS does: on Windows, Path and PATH
// are one variable, passed once.
func (p *Stdio) Env(extra []string) []string {
	lookup := p.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return envFrom(lookup, envKey, baseEnv, p.PassEnv, extra)
}

// envFrom is each of the named variables that lookup finds, once as key
// tells names apart, in the order first named.
func envFrom(lookup func(string) (string, bool), key func(string) string, lists ...[]string) []string {
	var env []string
	seen := map[string]bool{}
	for _, name := range slices.Concat(lists...) {
		if seen[key(name)] {
			continue
		}
		seen[key(name)] = true
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// Command builds the exec.Cmd of a local server, to be started with
// Start: no shell, the given environment only, and the program as this OS
// must run it (on Windows npx is node running npm's npx-cli.js, never
// cmd.exe: see launchPath).
func Command(program string, args, env []string) (*exec.Cmd, error) {
	path, args, err := launchPath(program, args)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would mean "inherit everything"
	}
	cmd.SysProcAttr = sysProcAttr()
	return cmd, nil
}
