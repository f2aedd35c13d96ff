// Command mcpfixture serves the mcpfixture MCP server over stdio or
// streamable HTTP, for ardgate's tests.
//
// Tests sometimes install this binary as "npx", so it is run like
//
//	npx -y @ardgate-test/fixture@1.0.0 --transport=stdio
//
// and argument parsing is lenient: only the flags below are recognised and
// every other token is ignored.
//
//	--transport=stdio|http  transport to serve (default stdio)
//	--addr=HOST:PORT        listen address for http (default 127.0.0.1:0)
//	--name=NAME             server name reported in serverInfo (default "fixture")
//	--exit-at-start         print a message to stderr and exit 1 at once
//	--leak-env=NAME         print NAME's value to stderr, as a server that logs its
//	                        Authorization header on a 401 does, and exit 1 at once
//	--start-delay=DURATION  wait this long before serving (a slow server)
//	--stderr-noise          write a few lines to stderr before serving
//	--many-tools=N          also serve N tools of about 2 KiB each (mcpfixture.AddManyTools)
//	--nested-tools=N        over stdio, list a tool whose schema nests N arrays (mcpfixture.DeepAnswers)
//	--sleep=DURATION        serve nothing: sleep, then exit (spawn_child's child on Windows)
//
// Over stdio, stdout carries nothing but MCP frames. Over http, the only line
// written to stdout is "READY http://HOST:PORT/mcp", once the listener is
// open; the server then runs until SIGTERM or SIGINT. Logs go to stderr.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ardgate/ardgate/testdata/mcpfixture"
	"github.com/mark3labs/mcp-go/server"
)

type options struct {
	transport   string
	addr        string
	name        string
	exitAtStart bool
	leakEnv     string
	noise       bool
	startDelay  time.Duration
	manyTools   int
	nestedTools int
	sleep       time.Duration
}

func parseArgs(args []string) options {
	o := options{transport: "stdio", addr: "127.0.0.1:0", name: "fixture"}
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--transport="):
			o.transport = strings.TrimPrefix(a, "--transport=")
		case strings.HasPrefix(a, "--addr="):
			o.addr = strings.TrimPrefix(a, "--addr=")
		case strings.HasPrefix(a, "--name="):
			o.name = strings.TrimPrefix(a, "--name=")
		case strings.HasPrefix(a, "--leak-env="):
			o.leakEnv = strings.TrimPrefix(a, "--leak-env=")
		case a == "--exit-at-start":
			o.exitAtStart = true
		case a == "--stderr-noise":
			o.noise = true
		case strings.HasPrefix(a, "--start-delay="):
			o.startDelay, _ = time.ParseDuration(strings.TrimPrefix(a, "--start-delay="))
		case strings.HasPrefix(a, "--sleep="):
			o.sleep, _ = time.ParseDuration(strings.TrimPrefix(a, "--sleep="))
		case strings.HasPrefix(a, "--many-tools="):
			o.manyTools, _ = strconv.Atoi(strings.TrimPrefix(a, "--many-tools="))
		case strings.HasPrefix(a, "--nested-tools="):
			o.nestedTools, _ = strconv.Atoi(strings.TrimPrefix(a, "--nested-tools="))
		}
		// Anything else (-y, @scope/pkg@version, ...) is what an npx-style
		// launcher passes along; ignore it.
	}
	return o
}

func main() {
	o := parseArgs(os.Args[1:])
	logger := log.New(os.Stderr, "mcpfixture: ", log.LstdFlags)

	if o.sleep > 0 {
		time.Sleep(o.sleep)
		return
	}
	if o.leakEnv != "" {
		fmt.Fprintf(os.Stderr, "mcpfixture: HTTP 401 from the API, sent Authorization: Bearer %s\n", os.Getenv(o.leakEnv))
		fmt.Fprintf(os.Stderr, "Error: the key %s was refused\n", os.Getenv(o.leakEnv))
		os.Exit(1)
	}
	if o.exitAtStart {
		fmt.Fprintln(os.Stderr, "mcpfixture: exiting at start as asked")
		os.Exit(1)
	}
	if o.noise {
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(os.Stderr, "mcpfixture: noise line %d of 3 (ignore me)\n", i)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	select {
	case <-time.After(o.startDelay):
	case <-ctx.Done():
		return
	}

	s := mcpfixture.New(o.name)
	mcpfixture.AddManyTools(s, o.manyTools)
	var err error
	switch o.transport {
	case "stdio":
		err = serveStdio(ctx, s, o.nestedTools, logger)
	case "http":
		err = serveHTTP(ctx, s, o.addr, logger)
	default:
		err = fmt.Errorf("unknown --transport=%q (want stdio or http)", o.transport)
	}
	if err != nil {
		logger.Print(err)
		os.Exit(2)
	}
}

func serveStdio(ctx context.Context, s *server.MCPServer, nestedTools int, logger *log.Logger) error {
	// The default pool of 5 workers would queue the 6th concurrent tools/call
	// behind the others; tests that fan out slow calls should not see that.
	// Nor should they meet the default queue of 100 full: mcp-go then runs
	// the call on the reader itself, and a slow one stops every message
	// after it, cancellations included, until it ends.
	stdio := server.NewStdioServer(s)
	server.WithWorkerPoolSize(32)(stdio)
	server.WithQueueSize(1000)(stdio)
	stdio.SetErrorLogger(logger)
	// Listen returns nil when stdin reaches EOF, so closing our stdin is a
	// clean way to stop us.
	in := mcpfixture.DeepAnswers(mcpfixture.HoldableInput(os.Stdin), os.Stdout, nestedTools)
	err := stdio.Listen(ctx, in, os.Stdout)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func serveHTTP(ctx context.Context, s *server.MCPServer, addr string, logger *log.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ErrorLog: logger}
	// Handing srv to the MCP handler lets its Shutdown close the long-lived
	// SSE sessions first; plain srv.Shutdown would wait on them.
	h := server.NewStreamableHTTPServer(s, server.WithStreamableHTTPServer(srv))
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv.Handler = mux

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("READY http://%s/mcp\n", ln.Addr())

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
