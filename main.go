// Command ardgate is an MCP server that finds capabilities in registries
// and attaches them to the client's own session.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/lmittmann/tint"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/registry/ardserver"
	"github.com/ardgate/ardgate/tools"
)

// version is set at build time with -ldflags "-X main.version=…"; without
// it, the module version or VCS revision from the build info is used.
var version = ""

const (
	usageServe = `ardgate serve [--transport stdio|http] [--addr 127.0.0.1:7333] [--config FILE] [--catalog FILE]...
                [--log-level debug|info|warn|error] [--log-format text|json] [--otel-endpoint URL]`
	usageRegistry = `ardgate registry serve --catalog FILE [--catalog FILE]... [--addr 127.0.0.1:7334] [--source URL]
                         [--log-level debug|info|warn|error] [--log-format text|json]`
	usageCatalog = `ardgate catalog validate FILE...
  ardgate catalog export`
	usage = "usage:\n  ardgate                                  same as: ardgate serve\n  " + usageServe + "\n  " + usageRegistry + "\n  " + usageCatalog + "\n  ardgate version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	switch {
	case len(args) > 0 && isHelp(args[0]):
		// Not serve's flags alone: they say nothing of the other commands.
		cmd = "help"
	case len(args) > 0 && (args[0] == "--version" || args[0] == "-version"):
		cmd = "version"
	case len(args) > 0 && args[0] != "" && args[0][0] != '-':
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(args, stdout, stderr)
	case "catalog":
		return catalog(args, stdout, stderr)
	case "registry":
		switch {
		case len(args) > 0 && isHelp(args[0]):
			fmt.Fprintln(stdout, "usage: "+usageRegistry)
			return 0
		case len(args) == 0 || args[0] != "serve":
			fmt.Fprintln(stderr, "usage: "+usageRegistry)
			return 2
		}
		return registryServe(args[1:], stderr)
	case "version":
		if len(args) > 0 && isHelp(args[0]) {
			fmt.Fprintln(stdout, "usage: ardgate version")
			return 0
		}
		fmt.Fprintln(stdout, "ardgate", buildVersion())
		return 0
	case "help":
		fmt.Fprintln(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "ardgate: unknown command %q\n%s\n", cmd, usage)
	return 2
}

// isHelp tells whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// parseFailed is the exit status after a flag set failed to parse args:
// 0 when it was asked for help, which it printed.
func parseFailed(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

func serve(args []string, stdout, stderr io.Writer) int {
	var flags config.Flags
	fs := config.FlagSet("ardgate serve", &flags)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return parseFailed(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ardgate serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg, err := config.Load(flags, os.Environ())
	if err != nil {
		fmt.Fprintln(stderr, "ardgate:", err)
		return 1
	}
	log := newLogger(cfg, stderr)
	// A client that closed its end of stdout gets an error on the next
	// write, not a SIGPIPE that would end the gateway before it ends its
	// upstreams' processes.
	signal.Ignore(syscall.SIGPIPE)
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	if cfg.AllowLocalURLs {
		log.Warn("allow_local_urls is on: endpoints may resolve to loopback and private addresses; use it for local testing only")
	}

	// Tracing is off unless an OTLP endpoint is configured. Its shutdown,
	// deferred first, runs last: it flushes the spans of the whole run.
	var tr *tools.Tracing
	if cfg.OTelEndpoint != "" {
		if tr, err = tools.NewTracing(context.Background(), cfg.OTelEndpoint, buildVersion(), log); err != nil {
			fmt.Fprintln(stderr, "ardgate:", err)
			return 1
		}
		defer func() {
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tr.Shutdown(fctx); err != nil {
				log.Warn("tracing: spans not flushed at shutdown", "err", err)
			}
		}()
		u, _ := url.Parse(cfg.OTelEndpoint)
		log.Info("tracing on: exporting spans over OTLP/HTTP", "otel_endpoint", u.Redacted())
	}

	// Guarded clients make every outgoing request: one for what the
	// operator configured (registries, pinned servers and agents), which
	// reaches the operator's own addresses, and one for all a registry
	// names, which does not.
	dialer := &guard.Dialer{AllowLocal: cfg.AllowLocalURLs}
	hc := dialer.Client()
	ohc := (&guard.Dialer{AllowLocal: cfg.AllowLocalURLs, Own: cfg.OwnAddrs()}).Client()
	// Registries hear the trace context of a search (when tracing is on).
	upstreamTracing := tr.Upstream()
	rhc := *ohc
	rhc.Transport = upstreamTracing.Transport(ohc.Transport)
	regs, err := registry.OpenAll(cfg.Registries, registry.OpenOptions{HTTP: &rhc, Log: log, Version: buildVersion()})
	if err != nil {
		fmt.Fprintln(stderr, "ardgate:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, r := range regs {
		if runner, ok := r.(registry.Runner); ok {
			go runner.Run(ctx)
		}
	}
	manager := attach.New(cfg, regs, hc, log, buildVersion())
	manager.ClientOptions, manager.Tracing, manager.Dialer, manager.OwnHTTP = tr.ClientOptions(), upstreamTracing, dialer, ohc
	go manager.Run(ctx) // agent health checks
	gw := tools.New(manager, log, tools.Options{
		Version:        buildVersion(),
		MaxResultBytes: cfg.MaxResultBytes,
		Tracing:        tr,
		Limits:         guard.LimitsFrom(cfg.Limits),
		PinnedListWait: cfg.PinnedListWait,
		NoFastPath:     !cfg.FastPath,
	})
	defer gw.Close()

	var served error
	if cfg.Transport == config.TransportStdio {
		log.Info("serving MCP on stdio", "registries", len(regs))
		served = gw.RunStdio(ctx, grace, os.Stdin, stdout)
	} else {
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			fmt.Fprintln(stderr, "ardgate:", err)
			return 1
		}
		if cfg.AuthToken == "" && !loopback(ln.Addr()) {
			log.Warn("listening beyond loopback without ARDGATE_AUTH_TOKEN: anyone who can reach this address can attach servers and call them", "addr", ln.Addr().String())
		}
		log.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "registries", len(regs), "auth", cfg.AuthToken != "")
		served = gw.RunHTTP(ctx, grace, ln, tools.HTTPOptionsFrom(cfg))
	}
	if served != nil {
		log.Error("ardgate ended with an error", "err", served)
		return 1
	}
	return 0
}

// loopback reports whether addr, a listener's, is a loopback address.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// grace lets running calls finish for up to 10 s after a signal to stop;
// a second signal ends the wait at once.
func grace() (context.Context, context.CancelFunc) {
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	go func() {
		select {
		case <-again:
			cancel()
		case <-ctx.Done():
		}
		signal.Stop(again)
	}()
	return ctx, cancel
}

// registryServe serves catalog files as an ARD registry.
func registryServe(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("ardgate registry serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var catalogs []string
	fs.Func("catalog", "catalog file to serve (repeatable)", func(s string) error { catalogs = append(catalogs, s); return nil })
	addr := fs.String("addr", "127.0.0.1:7334", "listen address")
	source := fs.String("source", "", `the registry's public URL, the "source" of search results (default: the URL each request reached it at, its Host header included)`)
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	if err := fs.Parse(args); err != nil {
		return parseFailed(err)
	}
	if fs.NArg() > 0 {
		// "--catalog a.json b.json": b.json and every flag after it were
		// dropped without a word.
		fmt.Fprintf(stderr, "ardgate registry serve: unexpected argument %q (give each catalog its own --catalog)\n", fs.Arg(0))
		return 2
	}
	if len(catalogs) == 0 {
		fmt.Fprintln(stderr, "ardgate registry serve: give at least one --catalog FILE")
		return 2
	}
	var level slog.Level
	switch u, err := url.Parse(*source); {
	case level.UnmarshalText([]byte(*logLevel)) != nil:
		fmt.Fprintf(stderr, "ardgate registry serve: --log-level %q is not debug, info, warn or error\n", *logLevel)
		return 2
	case *logFormat != "text" && *logFormat != "json":
		fmt.Fprintf(stderr, "ardgate registry serve: --log-format %q is not text or json\n", *logFormat)
		return 2
	case *source != "" && (err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == ""):
		fmt.Fprintf(stderr, "ardgate registry serve: --source %q is not an http(s) URL\n", *source)
		return 2
	}
	log := newLogger(&config.Config{LogLevel: *logLevel, LogFormat: *logFormat}, stderr)
	srv := &ardserver.Server{Catalogs: catalogs, Log: log, Source: *source}
	if err := srv.Load(); err != nil {
		fmt.Fprintln(stderr, "ardgate:", err)
		return 1
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "ardgate:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go srv.Watch(ctx)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: tools.DefaultIdleConnTimeout}
	log.Info("serving an ARD registry", "url", "http://"+ln.Addr().String()+"/", "catalogs", len(catalogs))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		log.Error("registry server ended", "err", err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return 0
}

func catalog(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprintln(stderr, "usage:\n  "+usageCatalog)
		return 2
	case isHelp(args[0]) || len(args) > 1 && isHelp(args[1]):
		fmt.Fprintln(stdout, "usage:\n  "+usageCatalog)
		return 0
	}
	switch args[0] {
	case "export":
		_, _ = stdout.Write(registry.BuiltinCatalog())
		return 0
	case "validate":
		if len(args) < 2 {
			fmt.Fprintln(stderr, "usage: ardgate catalog validate FILE...")
			return 2
		}
		bad := false
		for _, path := range args[1:] {
			data, err := os.ReadFile(path)
			if err != nil {
				fmt.Fprintf(stdout, "%s: %v\n", path, err)
				bad = true
				continue
			}
			violations := registry.ValidateCatalog(data)
			for _, v := range violations {
				fmt.Fprintf(stdout, "%s: %s\n", path, v)
			}
			if len(violations) > 0 {
				bad = true
			} else if c, _, err := registry.ParseCatalog(data); err == nil {
				// On stderr: stdout is violations alone, a line each. What
				// the loaders leave out of a valid catalog (a remote nested
				// catalog, a URN listed again in a nested one) is a
				// warning: registry serve and the gateway log the same.
				entries, skipped, _ := registry.LoadCatalogFile(path)
				for _, w := range skipped {
					fmt.Fprintf(stderr, "warning: %s\n", w)
				}
				if len(skipped) == 0 {
					fmt.Fprintf(stderr, "%s: valid, %d entries\n", path, len(c.Entries))
				} else {
					fmt.Fprintf(stderr, "%s: valid, %d entries; %d indexed once nested catalogs are read, the warnings above say what is left out\n", path, len(c.Entries), len(entries))
				}
			}
		}
		if bad {
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "ardgate catalog: unknown command %q\nusage:\n  %s\n", args[0], usageCatalog)
	return 2
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)}))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 && (v == "" || v == "(devel)") {
			v = "devel+" + s.Value[:12]
		}
	}
	if v == "" {
		v = "dev"
	}
	return v
}
