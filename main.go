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
	"github.com/ardgate/ardgate/attach/credstore"
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
	cmd, args := command(args)
	if c, ok := commands[cmd]; ok {
		return c(args, stdout, stderr)
	}
	fmt.Fprintf(stderr, "ardgate: unknown command %q\n%s\n", cmd, usage)
	return 2
}

// command splits args into the command they name and its arguments:
// serve when they begin with a flag, or are none.
func command(args []string) (string, []string) {
	switch {
	case len(args) == 0:
		return "serve", args
	case isHelp(args[0]):
		// Not serve's flags alone: they say nothing of the other commands.
		return "help", args
	case args[0] == "--version" || args[0] == "-version":
		return "version", args
	case args[0] != "" && args[0][0] != '-':
		return args[0], args[1:]
	}
	return "serve", args
}

// commands run each command on its arguments and return its exit status.
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"serve":    serve,
	"catalog":  catalog,
	"registry": registryCommand,
	"version":  versionCommand,
	"help": func(_ []string, stdout, _ io.Writer) int {
		fmt.Fprintln(stdout, usage)
		return 0
	},
}

func registryCommand(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && isHelp(args[0]):
		fmt.Fprintln(stdout, "usage: "+usageRegistry)
		return 0
	case len(args) == 0 || args[0] != "serve":
		fmt.Fprintln(stderr, "usage: "+usageRegistry)
		return 2
	}
	return registryServe(args[1:], stderr)
}

func versionCommand(args []string, stdout, _ io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(stdout, "usage: ardgate version")
		return 0
	}
	fmt.Fprintln(stdout, "ardgate", buildVersion())
	return 0
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

// openCredentials opens the store of credentials the config names; nil,
// and nothing persists, when it names none. A store that cannot be read
// (another key, altered, readable by others) stops the start: a gateway
// that went on would write over the grants kept there.
func openCredentials(cfg *config.Config, log *slog.Logger) (*credstore.Store, error) {
	if cfg.Credentials.Store == "" {
		return nil, nil
	}
	s, err := credstore.Open(cfg.Credentials.Store, cfg.Credentials.Key)
	if err != nil {
		return nil, fmt.Errorf("credentials.store: %w", err)
	}
	log.Info("OAuth grants are kept across restarts", "store", cfg.Credentials.Store)
	return s, nil
}

func serve(args []string, stdout, stderr io.Writer) int {
	cfg, code := serveConfig(args, stderr)
	if cfg == nil {
		return code
	}
	log := newLogger(cfg, stderr)
	// A client that closed its end of stdout gets an error on the next
	// write, not a SIGPIPE that would end the gateway before it ends its
	// upstreams' processes.
	signal.Ignore(syscall.SIGPIPE)
	// Before any launch: a server of the gateway's uid reads no key from
	// its /proc, nor attaches to it.
	if err := guard.Undumpable(); err != nil {
		log.Warn("the gateway's process stays dumpable: a launched server of its uid may read its environment", "err", err)
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	if cfg.AllowLocalURLs {
		log.Warn("allow_local_urls is on: endpoints may resolve to loopback and private addresses; use it for local testing only")
	}

	creds, err := openCredentials(cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "ardgate:", err)
		return 1
	}

	// Tracing is off unless an OTLP endpoint is configured. Its flush,
	// deferred first, runs last: it sends the spans of the whole run.
	tr, err := startTracing(cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "ardgate:", err)
		return 1
	}
	defer flushTracing(tr, log)

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
	manager.Credentials = creds
	go manager.Run(ctx) // agent health checks
	gw := tools.New(manager, log, tools.Options{
		Version:        buildVersion(),
		MaxResultBytes: cfg.MaxResultBytes,
		Tracing:        tr,
		Limits:         guard.LimitsFrom(cfg.Limits),
		PinnedListWait: cfg.PinnedListWait,
		NoFastPath:     !cfg.FastPath,
		PublicURL:      cfg.PublicURL,
	})
	defer gw.Close()

	var served error
	if cfg.Transport == config.TransportStdio {
		log.Info("serving MCP on stdio", "registries", len(regs))
		served = gw.RunStdio(ctx, grace, os.Stdin, stdout)
	} else {
		ln, err := listenHTTP(cfg, log)
		if err != nil {
			fmt.Fprintln(stderr, "ardgate:", err)
			return 1
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

// serveConfig loads serve's configuration from args and the environment;
// a nil one comes with the exit status, the reason said on stderr.
func serveConfig(args []string, stderr io.Writer) (*config.Config, int) {
	var flags config.Flags
	fs := config.FlagSet("ardgate serve", &flags)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return nil, parseFailed(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ardgate serve: unexpected argument %q\n", fs.Arg(0))
		return nil, 2
	}
	cfg, err := config.Load(flags, os.Environ())
	if err != nil {
		fmt.Fprintln(stderr, "ardgate:", err)
		return nil, 1
	}
	return cfg, 0
}

// startTracing starts exporting spans when an OTLP endpoint is
// configured; with none, tracing is off and the Tracing nil.
func startTracing(cfg *config.Config, log *slog.Logger) (*tools.Tracing, error) {
	if cfg.OTelEndpoint == "" {
		return nil, nil
	}
	tr, err := tools.NewTracing(context.Background(), cfg.OTelEndpoint, buildVersion(), log)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.OTelEndpoint)
	log.Info("tracing on: exporting spans over OTLP/HTTP", "otel_endpoint", u.Redacted())
	return tr, nil
}

// flushTracing sends the spans not yet exported, for up to 5 s.
func flushTracing(tr *tools.Tracing, log *slog.Logger) {
	if tr == nil {
		return
	}
	fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Shutdown(fctx); err != nil {
		log.Warn("tracing: spans not flushed at shutdown", "err", err)
	}
}

// listenHTTP opens the HTTP transport's listener, warning when it reaches
// beyond loopback with no token to guard it.
func listenHTTP(cfg *config.Config, log *slog.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.AuthToken == "" && !loopback(ln.Addr()) {
		log.Warn("listening beyond loopback without ARDGATE_AUTH_TOKEN: anyone who can reach this address can attach servers and call them", "addr", ln.Addr().String())
	}
	return ln, nil
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
	opts, code := registryServeOptions(args, stderr)
	if opts == nil {
		return code
	}
	log := newLogger(&config.Config{LogLevel: opts.logLevel, LogFormat: opts.logFormat}, stderr)
	srv := &ardserver.Server{Catalogs: opts.catalogs, Log: log, Source: opts.source}
	if err := srv.Load(); err != nil {
		fmt.Fprintln(stderr, "ardgate:", err)
		return 1
	}
	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		fmt.Fprintln(stderr, "ardgate:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go srv.Watch(ctx)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: tools.DefaultIdleConnTimeout}
	log.Info("serving an ARD registry", "url", "http://"+ln.Addr().String()+"/", "catalogs", len(opts.catalogs))
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

// registryOptions are registry serve's flags.
type registryOptions struct {
	catalogs                          []string
	addr, source, logLevel, logFormat string
}

// registryServeOptions parses registry serve's args; nil options come
// with the exit status, the reason said on stderr.
func registryServeOptions(args []string, stderr io.Writer) (*registryOptions, int) {
	fs := flag.NewFlagSet("ardgate registry serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o registryOptions
	fs.Func("catalog", "catalog file to serve (repeatable)", func(s string) error { o.catalogs = append(o.catalogs, s); return nil })
	fs.StringVar(&o.addr, "addr", "127.0.0.1:7334", "listen address")
	fs.StringVar(&o.source, "source", "", `the registry's public URL, the "source" of search results (default: the URL each request reached it at, its Host header included)`)
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "text or json")
	if err := fs.Parse(args); err != nil {
		return nil, parseFailed(err)
	}
	if fs.NArg() > 0 {
		// "--catalog a.json b.json": b.json and every flag after it were
		// dropped without a word.
		fmt.Fprintf(stderr, "ardgate registry serve: unexpected argument %q (give each catalog its own --catalog)\n", fs.Arg(0))
		return nil, 2
	}
	if msg := o.check(); msg != "" {
		fmt.Fprintln(stderr, "ardgate registry serve: "+msg)
		return nil, 2
	}
	return &o, 0
}

// check says what is wrong with the flags, or "".
func (o *registryOptions) check() string {
	var level slog.Level
	switch u, err := url.Parse(o.source); {
	case len(o.catalogs) == 0:
		return "give at least one --catalog FILE"
	case level.UnmarshalText([]byte(o.logLevel)) != nil:
		return fmt.Sprintf("--log-level %q is not debug, info, warn or error", o.logLevel)
	case o.logFormat != "text" && o.logFormat != "json":
		return fmt.Sprintf("--log-format %q is not text or json", o.logFormat)
	case o.source != "" && (err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == ""):
		return fmt.Sprintf("--source %q is not an http(s) URL", o.source)
	}
	return ""
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
			if !validateCatalog(path, stdout, stderr) {
				bad = true
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

// validateCatalog says on stdout what is wrong with the catalog file at
// path, a line each, and reports whether it is valid.
func validateCatalog(path string, stdout, stderr io.Writer) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stdout, "%s: %v\n", path, err)
		return false
	}
	violations := registry.ValidateCatalog(data)
	for _, v := range violations {
		fmt.Fprintf(stdout, "%s: %s\n", path, v)
	}
	if len(violations) > 0 {
		return false
	}
	if c, _, err := registry.ParseCatalog(data); err == nil {
		// On stderr: stdout is violations alone, a line each. What the
		// loaders leave out of a valid catalog (a remote nested catalog,
		// a URN listed again in a nested one) is a warning: registry
		// serve and the gateway log the same.
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
	return true
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
