package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
)

// The relay is the floor under any gateway that runs as a process of its
// own: it sits where ardgate sits and only copies bytes. Over stdio it
// starts the upstream and copies both pipes; over HTTP it is the standard
// library's reverse proxy. What ardgate costs beyond the relay is its own;
// what the relay costs over direct is the extra process and hop, which no
// gateway of this shape avoids on this machine.
//
// The bench runs itself as the relay:
//
//	bench relay stdio <command> [args...]
//	bench relay http <upstream URL>     (prints "READY <url>" on stdout)
func relay(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: bench relay stdio <command> [args...] | bench relay http <url>")
	}
	switch args[0] {
	case "stdio":
		cmd := exec.Command(args[1], args[2:]...)
		cmd.Stderr = io.Discard
		in, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		go func() {
			_, _ = io.Copy(in, os.Stdin)
			_ = in.Close()
		}()
		_, err = io.Copy(os.Stdout, out)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	case "http":
		target, err := url.Parse(args[1])
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		fmt.Printf("READY http://%s%s\n", ln.Addr(), target.Path)
		proxy := &httputil.ReverseProxy{
			Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host}) },
			FlushInterval: -1, // event streams pass as they come
			// As many idle connections as calls in flight, like the
			// gateway's own client (http.DefaultTransport keeps two).
			Transport: &http.Transport{MaxIdleConnsPerHost: 256},
			ErrorLog:  log.New(os.Stderr, "relay: ", 0),
		}
		// Full duplex, so that the server leaves the request body to the
		// proxy. The proxy's transport sends the body straight to the
		// socket and then reads it once more, to its end; should the
		// upstream answer in between, the server's first write of the
		// response would drain and close that body under the transport,
		// which then drops the upstream connection mid-response
		// (golang/go#40747): "use of closed network connection", and the
		// client an unexpected EOF, as two bench runs once saw.
		return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = http.NewResponseController(w).EnableFullDuplex()
			proxy.ServeHTTP(w, r)
		}))
	}
	return fmt.Errorf("relay: unknown transport %q", args[0])
}
