package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The rival gateways are the MCP gateways users compare ardgate with,
// measured on the same workloads in the same run when their binaries are
// named: -toolhive (Stacklok's thv) and -docker-mcp (Docker's MCP gateway,
// the docker-mcp CLI plugin run on its own). Neither is part of this
// repository: build them from their own sources. Both run here without a
// container engine, as the bench sets them up:
//
//   - thv-proxy: `thv proxy`, ToolHive's transparent HTTP proxy in front of
//     an MCP server (HTTP only: ToolHive runs stdio servers in containers);
//   - thv-vmcp: `thv vmcp serve`, ToolHive's aggregating gateway, with the
//     fixture as its one static backend (HTTP only; tools named fixture_*);
//   - docker-mcp: `docker-mcp gateway run --static --long-lived`, with the
//     fixture as a remote server of a catalog file over HTTP, and over
//     stdio as a server it starts itself. In static mode it starts a
//     stdio server as `socat STDIO TCP:mcp-<name>:4444`, expecting a
//     container on that network; the bench's "socat" on its PATH runs the
//     fixture instead, with no extra hop.
//
// They get a home of their own under the bench's directory, their update
// checks and usage metrics turned off, and no other environment. Run the
// bench in a network namespace with only loopback (unshare -n) to be sure
// that nothing else is dialled.

// rivals are the rival gateways given on the command line.
type rivals struct {
	toolhive, dockerMCP string // binaries; "" when not measured
	dir                 string // the bench's directory, for their homes
	fixture             string
}

// rival is a rival gateway that serves streamable HTTP in front of an
// upstream over HTTP: start starts it and returns its MCP URL, a stop
// function and its pid; tool names the fixture's tool through it.
type rival struct {
	name  string
	tool  func(string) string
	start func(upstream string) (url string, stop func(), pid int, err error)
}

// overHTTP are the rival gateways given that serve HTTP.
func (r rivals) overHTTP() []rival {
	var v []rival
	if r.toolhive != "" {
		v = append(v, rival{"thv-proxy", same, r.thvProxy}, rival{"thv-vmcp", func(s string) string { return "fixture_" + s }, r.thvVMCP})
	}
	if r.dockerMCP != "" {
		v = append(v, rival{"docker-mcp", same, r.dockerMCPHTTP})
	}
	return v
}

// paths are the rival gateways given that can serve the transport kind.
func (r rivals) paths(kind string, stdioSessions int) []benchPath {
	var p []benchPath
	if kind == "stdio" {
		if r.dockerMCP != "" {
			p = append(p, benchPath{"docker-mcp", func() (target, func(), error) { return r.dockerMCPStdio(stdioSessions) }})
		}
		return p
	}
	for _, v := range r.overHTTP() {
		p = append(p, benchPath{v.name, func() (target, func(), error) { return r.behind(v) }})
	}
	return p
}

func same(s string) string { return s }

// behind runs the fixture over HTTP with the rival v in front of it, and
// checks that a call goes through before measuring.
func (r rivals) behind(v rival) (target, func(), error) {
	t, stop, err := behindHTTPRelay(r.fixture, v.start)
	if err != nil {
		return target{}, nil, fmt.Errorf("%s: %w", v.name, err)
	}
	t.tool = v.tool
	if err := ready(t); err != nil {
		stop()
		return target{}, nil, fmt.Errorf("%s: %w", v.name, err)
	}
	return t, stop, nil
}

// ready waits until every client's call of the fixture's echo goes
// through: an aggregating gateway lists its backends' tools after it
// listens.
func ready(t target) error {
	deadline := time.Now().Add(15 * time.Second)
	for _, c := range t.clients {
		for {
			err := call(c, t.tool("echo"), map[string]any{"message": "ready"}, nil)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the fixture's echo did not answer through it: %w", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// home makes the rival's home directory and returns its environment: its
// own HOME and XDG directories, update checks and telemetry off, and
// extra.
func (r rivals) home(name string, extra ...string) ([]string, string, error) {
	home := filepath.Join(r.dir, "home-"+name)
	for _, d := range []string{".config", ".local/share", ".local/state", ".cache", "run", ".docker/mcp/catalogs"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			return nil, "", err
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"XDG_CONFIG_HOME=" + home + "/.config", "XDG_DATA_HOME=" + home + "/.local/share",
		"XDG_STATE_HOME=" + home + "/.local/state", "XDG_CACHE_HOME=" + home + "/.cache", "XDG_RUNTIME_DIR=" + home + "/run",
		"TOOLHIVE_SKIP_UPDATE_CHECK=true", "TOOLHIVE_USAGE_METRICS_ENABLED=false", "OTEL_SDK_DISABLED=true"}
	return append(env, extra...), home, nil
}

// freeHostPort is freeAddr, and its host and port apart, for a rival's
// flags.
func freeHostPort() (addr, host, port string, err error) {
	if addr, err = freeAddr(); err != nil {
		return "", "", "", err
	}
	host, port, _ = strings.Cut(addr, ":")
	return addr, host, port, nil
}

// serveRival starts a rival that listens on addr, and waits until it does.
func serveRival(env []string, addr, bin string, args ...string) (func(), int, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = nil, nil // both chatty
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	if err := waitListening(addr, filepath.Base(bin)); err != nil {
		stop()
		return nil, 0, err
	}
	return stop, cmd.Process.Pid, nil
}

// thvProxy runs `thv proxy` in front of upstream. thv checks for a
// container runtime before any command; it finds "kubernetes" set, and
// the proxy never uses one.
func (r rivals) thvProxy(upstream string) (string, func(), int, error) {
	env, _, err := r.home("thv-proxy", "TOOLHIVE_RUNTIME=kubernetes")
	if err != nil {
		return "", nil, 0, err
	}
	addr, host, port, err := freeHostPort()
	if err != nil {
		return "", nil, 0, err
	}
	target, path, _ := strings.Cut(strings.TrimPrefix(upstream, "http://"), "/")
	stop, pid, err := serveRival(env, addr, r.toolhive, "proxy", "--host", host, "--port", port, "--target-uri", "http://"+target, "fixture")
	return "http://" + addr + "/" + path, stop, pid, err
}

// thvVMCP runs `thv vmcp serve` with upstream as its one backend, with no
// authentication either way.
func (r rivals) thvVMCP(upstream string) (string, func(), int, error) {
	env, home, err := r.home("thv-vmcp")
	if err != nil {
		return "", nil, 0, err
	}
	cfg := filepath.Join(home, "vmcp.yaml")
	yaml := fmt.Sprintf(`name: bench-vmcp
groupRef: default
incomingAuth:
  type: anonymous
outgoingAuth:
  source: inline
  default:
    type: unauthenticated
backends:
  - name: fixture
    url: %s
    transport: streamable-http
aggregation:
  conflictResolution: prefix
  conflictResolutionConfig:
    prefixFormat: "{workload}_"
`, upstream)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		return "", nil, 0, err
	}
	addr, host, port, err := freeHostPort()
	if err != nil {
		return "", nil, 0, err
	}
	stop, pid, err := serveRival(env, addr, r.toolhive, "vmcp", "serve", "-c", cfg, "--host", host, "--port", port)
	return "http://" + addr + "/mcp", stop, pid, err
}

// dockerMCPSetup writes docker-mcp's catalog (the fixture at upstream
// over HTTP, or as a stdio server), an empty secrets file and a Docker
// config with the OAuth monitor off, and returns its environment and
// arguments. The environment tells it that it runs in a container, so
// that it asks no Docker engine, and lets it reach a remote on loopback
// over plain HTTP.
func (r rivals) dockerMCPSetup(name, upstream string) ([]string, []string, string, error) {
	env, home, err := r.home(name, "DOCKER_MCP_IN_CONTAINER=1", "DOCKER_MCP_ALLOW_INSECURE_REMOTE_URLS=1",
		"DOCKER_MCP_USE_CE=true", "DOCKER_CLI_HINTS=false")
	if err != nil {
		return nil, nil, "", err
	}
	env = append(env, "DOCKER_CONFIG="+home+"/.docker")
	server := "fixture:\n    title: fixture\n    type: server\n    image: local/none\n"
	if upstream != "" {
		server = fmt.Sprintf("fixture:\n    title: fixture\n    type: remote\n    remote:\n      url: %s\n      transport_type: streamable-http\n", upstream)
	}
	secrets := filepath.Join(home, "empty.env")
	if os.WriteFile(filepath.Join(home, ".docker/mcp/catalogs/bench.yaml"), []byte("name: bench\nregistry:\n  "+server), 0o600) != nil ||
		os.WriteFile(filepath.Join(home, ".docker/config.json"), []byte(`{"features":{"mcp-oauth-dcr":"disabled"}}`), 0o600) != nil ||
		os.WriteFile(secrets, nil, 0o600) != nil {
		return nil, nil, "", fmt.Errorf("writing docker-mcp's catalog and config")
	}
	args := []string{"gateway", "run", "--static", "--long-lived", "--catalog", "bench.yaml", "--servers", "fixture", "--secrets", secrets}
	return env, args, home, nil
}

// dockerMCPHTTP runs docker-mcp over streamable HTTP with upstream as a
// remote server.
func (r rivals) dockerMCPHTTP(upstream string) (string, func(), int, error) {
	env, args, _, err := r.dockerMCPSetup("docker-mcp-http", upstream)
	if err != nil {
		return "", nil, 0, err
	}
	addr, host, port, err := freeHostPort()
	if err != nil {
		return "", nil, 0, err
	}
	args = append(args, "--transport", "streaming", "--host", host, "--port", port, "--allow-unauthenticated")
	stop, pid, err := serveRival(env, addr, r.dockerMCP, args...)
	return "http://" + addr + "/mcp", stop, pid, err
}

// dockerMCPStdioArgs sets docker-mcp up to serve stdio with the fixture
// as a stdio server, started by the "socat" of the bench's own on its
// PATH, and returns its environment and arguments.
func (r rivals) dockerMCPStdioArgs() (env, args []string, err error) {
	env, args, home, err := r.dockerMCPSetup("docker-mcp-stdio", "")
	if err != nil {
		return nil, nil, err
	}
	shim := filepath.Join(home, "bin")
	script := "#!/bin/sh\n# docker-mcp --static runs `socat STDIO TCP:mcp-<name>:4444`: run the fixture instead\nexec " + r.fixture + " --transport=stdio\n"
	if os.MkdirAll(shim, 0o755) != nil || os.WriteFile(filepath.Join(shim, "socat"), []byte(script), 0o755) != nil {
		return nil, nil, fmt.Errorf("writing docker-mcp's socat")
	}
	return append(env, "PATH="+shim+":"+os.Getenv("PATH")), append(args, "--transport", "stdio"), nil
}

// dockerMCPStdio runs docker-mcp over stdio with the fixture as a stdio
// server (dockerMCPStdioArgs).
func (r rivals) dockerMCPStdio(stdioSessions int) (target, func(), error) {
	env, args, err := r.dockerMCPStdioArgs()
	if err != nil {
		return target{}, nil, err
	}
	cs, stop, pids, err := stdioClients(stdioSessions, r.dockerMCP, env, args...)
	if err != nil {
		return target{}, nil, fmt.Errorf("docker-mcp: %w", err)
	}
	t := target{clients: cs, tool: same, pids: pids}
	if err := ready(t); err != nil {
		stop()
		return target{}, nil, fmt.Errorf("docker-mcp: %w", err)
	}
	return t, stop, nil
}
