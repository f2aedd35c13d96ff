package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// The native relays are the floor measured with tools written in C for
// this job, so that the floor does not rest on Go's runtime: socat copies
// a stdio server's pipes, nginx is a reverse proxy that keeps its upstream
// connections. They run when -native-relays is given, from Debian's socat
// and nginx packages (apt-get install socat nginx-light).

// nativeRelay names the native relay for a transport.
func nativeRelay(kind string) string {
	if kind == "stdio" {
		return "socat"
	}
	return "nginx"
}

// startNative puts the native relay where the gateway would be.
func startNative(kind, fixture, dir string, stdioSessions int) (target, func(), error) {
	if kind == "stdio" {
		socat, err := exec.LookPath("socat")
		if err != nil {
			return target{}, nil, fmt.Errorf("-native-relays needs socat: %w", err)
		}
		// 64 KiB blocks, as a pipe holds; pipes to the fixture, as the
		// other paths give it.
		cs, stop, pids, err := stdioClients(stdioSessions, socat, nil, "-b", "65536", "-", "EXEC:"+fixture+" --transport=stdio,pipes")
		return target{clients: cs, tool: same, pids: pids}, stop, err
	}
	return behindHTTPRelay(fixture, func(upstream string) (string, func(), int, error) { return startNginx(upstream, dir) })
}

// startNginx runs nginx in the foreground, one worker process and no
// master, so that its CPU time is one process's, in front of upstream.
func startNginx(upstream, dir string) (string, func(), int, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin, err = exec.LookPath("/usr/sbin/nginx")
	}
	if err != nil {
		return "", nil, 0, fmt.Errorf("-native-relays needs nginx: %w", err)
	}
	up, err := url.Parse(upstream)
	if err != nil {
		return "", nil, 0, err
	}
	addr, err := freeAddr()
	if err != nil {
		return "", nil, 0, err
	}
	prefix := filepath.Join(dir, "nginx")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return "", nil, 0, err
	}
	// As many idle upstream connections as calls in flight; HTTP/1.1 and
	// no Connection header upstream, or nginx would close each one; the
	// upstream's own Host, which the fixture checks against DNS
	// rebinding; no buffering, so event streams pass as they come.
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr error;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	upstream fixture { server %[2]s; keepalive 256; }
	server {
		listen %[3]s;
		keepalive_requests 1000000;
		location / {
			proxy_pass http://fixture;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host %[2]s;
			proxy_buffering off;
			proxy_request_buffering off;
			proxy_read_timeout 1h;
		}
	}
}
`, prefix, up.Host, addr)
	confPath := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return "", nil, 0, err
	}
	cmd := exec.Command(bin, "-p", prefix, "-c", confPath, "-e", "stderr")
	cmd.Stderr = os.Stderr // what nginx says went wrong
	if err := cmd.Start(); err != nil {
		return "", nil, 0, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	if err := waitListening(addr, "nginx"); err != nil {
		stop()
		return "", nil, 0, err
	}
	return "http://" + addr + up.Path, stop, cmd.Process.Pid, nil
}

// freeAddr is a loopback address with a free port, for a server that
// binds it itself.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitListening waits up to 10 s for the server called name to listen on
// addr.
func waitListening(addr, name string) error {
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not listen on %s: %w", name, addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
