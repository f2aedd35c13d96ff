package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// scaleCase is one kind of session the sessions bench holds open by the
// thousand: each is initialized and lists its tools, then does what the
// case says and stays idle.
type scaleCase struct {
	name   string
	attach bool // attach two remote servers and call each once
	listen bool // keep the standalone GET stream open, as many clients do
	// vanish: closing the client sends no DELETE, as when a client goes
	// away without ending its session; the gateway's idle sweep ends it.
	vanish bool
	// pinned: the config pins the remote server as "fixture", so every
	// session has it from its start; the session calls its echo once.
	pinned bool
}

var scaleCases = []scaleCase{
	{name: "(a) idle, no attachments"},
	{name: "(a') idle, GET stream open", listen: true},
	{name: "(b) 2 remote attachments", attach: true},
	{name: "(c) 1 pinned remote server", pinned: true},
}

// settle is how long sessions stay idle, once open, before they are
// measured.
var settle = 2 * time.Second

// caseB is the index of case (b) in scaleCases, for the figures per
// attachment.
const caseB = 2

// drive does the case's work on an initialized session and returns the
// time each attach took.
func (c scaleCase) drive(call func(name string, args map[string]any) error) ([]time.Duration, error) {
	if c.pinned {
		return nil, call("mcp_fixture__echo", map[string]any{"message": "hi"})
	}
	if !c.attach {
		return nil, nil
	}
	var lat []time.Duration
	for _, name := range []string{"a", "b"} {
		t := time.Now()
		if err := call("attach_resource", map[string]any{"urn": "urn:air:bench.test:mcp:" + name}); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t))
		if err := call("mcp_"+name+"__echo", map[string]any{"message": "hi"}); err != nil {
			return lat, err
		}
	}
	return lat, nil
}

// scaleBench holds many HTTP sessions open on one gateway, for each case on
// a fresh gateway process, and reports memory and goroutines per session,
// attach time, and errors; then the same cases on an in-process twin for
// the live Go heap per session.
func scaleBench(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	n := fs.Int("sessions", 1000, "concurrent sessions per case")
	parallel := fs.Int("parallel", 50, "sessions being opened at once")
	manyTools := fs.Int("many-tools", 0, "tools of about 2 KiB each the upstream lists besides its own 9, as a large server does")
	fs.DurationVar(&settle, "settle", settle, "how long the sessions stay idle before they are measured; past 3m, the answers kept for resuming streams (2m) have gone")
	var others rivals
	fs.StringVar(&others.toolhive, "toolhive", "", "also hold the sessions side by side on ToolHive's thv proxy and vMCP, given the thv binary (rivals.go)")
	fs.StringVar(&others.dockerMCP, "docker-mcp", "", "also hold the sessions side by side on Docker's MCP gateway, given the docker-mcp binary (rivals.go)")
	profiles := fs.String("profiles", "", "write the in-process twin's profiles to this directory: per case, the heap with the sessions open (N.heap.pprof) and before (N.heap.base.pprof), the goroutines with them open (N.goroutines.txt) and 2 s after they closed (N.goroutines.after.txt)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *profiles != "" {
		runtime.MemProfileRate = 4096 // a sample per 4 KiB: fine enough for small per-session objects
	}
	dir, gw, fx, err := buildBinaries()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	others.dir, others.fixture = dir, fx
	upURL, stopUp, err := startFixtureHTTP(fx, fmt.Sprintf("--many-tools=%d", *manyTools))
	if err != nil {
		return err
	}
	defer stopUp()
	remote := map[string]any{"remotes": []any{map[string]any{"type": "streamable-http", "url": upURL}}}
	cfg, err := writeConfig(dir, map[string]map[string]any{"a": remote, "b": remote}, nil, nil)
	if err != nil {
		return err
	}
	pinnedDir := filepath.Join(dir, "pinned")
	if err := os.MkdirAll(pinnedDir, 0o700); err != nil {
		return err
	}
	pinnedCfg, err := writeConfig(pinnedDir, nil, nil, map[string]any{"servers": []any{map[string]any{"name": "fixture", "url": upURL}}})
	if err != nil {
		return err
	}
	cfgFor := func(c scaleCase) string {
		if c.pinned {
			return pinnedCfg
		}
		return cfg
	}

	var procs []processFigures
	for _, c := range scaleCases {
		p, err := sessionsOnGateway(gw, cfgFor(c), c, *n, *parallel)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		procs = append(procs, p)
	}
	var twins []heapFigures
	for i, c := range scaleCases {
		prefix := ""
		if *profiles != "" {
			prefix = filepath.Join(*profiles, strconv.Itoa(i+1))
		}
		h, err := heapPerSession(cfgFor(c), c, *n, *parallel, prefix)
		if err != nil {
			return fmt.Errorf("%s (in process): %w", c.name, err)
		}
		twins = append(twins, h)
	}

	listing := ""
	if *manyTools > 0 {
		listing = fmt.Sprintf(", the upstream listing %d more tools of about 2 KiB", *manyTools)
	}
	fmt.Fprintf(out, "sessions: %d HTTP sessions per case, opened %d at a time, each case on a fresh gateway%s; %s\n", *n, *parallel, listing, machine())
	fmt.Fprintf(out, "open: time to open them all; RSS: the gateway process (VmRSS) grown with the sessions open and idle;\n")
	fmt.Fprintf(out, "goroutines: its /healthz; Go heap, stacks: the in-process twin, live after GC; errors: process+twin\n\n")
	row := "%-26s %7s %9s %13s %13s %13s %11s\n"
	fmt.Fprintf(out, row, "per session", "errors", "open", "RSS", "Go heap", "stacks", "goroutines")
	kib := func(v float64) string { return fmt.Sprintf("%.1f KiB", v) }
	for i, c := range scaleCases {
		p, t := procs[i], twins[i]
		fmt.Fprintf(out, row, c.name, fmt.Sprintf("%d+%d", p.errors, t.errors), p.open.Round(time.Millisecond),
			kib(p.perSession(p.rss)), kib(t.heapKiB), kib(t.stackKiB), fmt.Sprintf("%.1f", p.perSession(p.goroutines)))
	}
	pi, pa, ti, ta := procs[0], procs[caseB], twins[0], twins[caseB]
	fmt.Fprintf(out, row, "per attachment, (b-a)/2", "", "", kib((pa.perSession(pa.rss)-pi.perSession(pi.rss))/2),
		kib((ta.heapKiB-ti.heapKiB)/2), kib((ta.stackKiB-ti.stackKiB)/2), fmt.Sprintf("%.1f", (pa.perSession(pa.goroutines)-pi.perSession(pi.goroutines))/2))
	fmt.Fprintln(out)
	for i, c := range scaleCases {
		p := procs[i]
		fmt.Fprintf(out, "%s: %d sessions; RSS %d KiB before, %d KiB open, %d KiB after closing; goroutines %d, %d, %d\n",
			c.name, p.sessions, p.rss[0], p.rss[1], p.rss[2], p.goroutines[0], p.goroutines[1], p.goroutines[2])
		for _, e := range []string{p.firstErr, twins[i].firstErr} {
			if e != "" {
				fmt.Fprintf(out, "  first error: %s\n", e)
			}
		}
	}
	if lat := pa.attachLat; len(lat) > 0 {
		slices.Sort(lat)
		fmt.Fprintf(out, "attach of a remote HTTP server, %d sessions opening at once: p50 %s, p99 %s\n", *parallel, pct(lat, 50), pct(lat, 99))
	}
	if lat := pa.quietAttach; len(lat) > 0 {
		slices.Sort(lat)
		fmt.Fprintf(out, "attach of a remote HTTP server, one at a time on the quiet gateway: p50 %s, p99 %s\n", pct(lat, 50), pct(lat, 99))
	}
	if len(others.overHTTP()) == 0 {
		return nil
	}
	ours := rival{"ardgate", func(s string) string { return "mcp_fixture__" + s }, func(string) (string, func(), int, error) { return startGatewayHTTP(gw, pinnedCfg) }}
	return sideBySide(out, append([]rival{ours}, others.overHTTP()...), upURL, *n, *parallel)
}

// sideBySide holds n HTTP sessions on each gateway in turn, each gateway
// in front of upstream as its one server (ardgate's pinned by its
// config), and reports what a session costs each. Every session lists its
// tools and calls the fixture's echo once, then stays idle.
func sideBySide(out io.Writer, gateways []rival, upstream string, n, parallel int) error {
	fmt.Fprintf(out, "\nside by side: %d HTTP sessions on each gateway, opened %d at a time, each listing its tools and calling the fixture's echo once, then idle\n", n, parallel)
	row := "%-12s %7s %9s %13s %13s %12s\n"
	fmt.Fprintf(out, row, "gateway", "errors", "open", "RSS/session", "RSS open", "goroutines")
	for _, g := range gateways {
		url, stop, pid, err := g.start(upstream)
		if err != nil {
			return fmt.Errorf("%s: %w", g.name, err)
		}
		time.Sleep(500 * time.Millisecond)
		before := sampleGateway(url, pid) // goroutines from ardgate's /healthz; the rivals have none
		o := openAll(n, parallel, func() (*client.Client, error) { return openListCall(url, g.tool("echo")) })
		clients, errs, firstErr := o.clients, o.errors, o.firstErr
		open := o.took
		time.Sleep(settle)
		held := sampleGateway(url, pid)
		for _, c := range clients {
			_ = c.Close()
		}
		stop()
		n := float64(max(len(clients), 1))
		goroutines := "-"
		if held.goroutines > 0 {
			goroutines = fmt.Sprintf("%.1f/session", float64(held.goroutines-before.goroutines)/n)
		}
		fmt.Fprintf(out, row, g.name, strconv.Itoa(errs), open.Round(time.Millisecond),
			fmt.Sprintf("%.1f KiB", float64(held.rssKiB-before.rssKiB)/n), fmt.Sprintf("%d KiB", held.rssKiB), goroutines)
		if firstErr != "" {
			fmt.Fprintf(out, "  first error: %s\n", firstErr)
		}
	}
	return nil
}

// opened is what openAll opened, how many failed, the first error, and
// how long it took.
type opened struct {
	clients  []*client.Client
	errors   int
	firstErr string
	took     time.Duration
}

// openAll opens n sessions with open, parallel at a time. A session that
// failed after it opened is kept, to be closed with the others.
func openAll(n, parallel int, open func() (*client.Client, error)) opened {
	var o opened
	var mu sync.Mutex
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := open()
			mu.Lock()
			defer mu.Unlock()
			if c != nil {
				o.clients = append(o.clients, c)
			}
			if err != nil {
				if o.errors++; o.firstErr == "" {
					o.firstErr = err.Error()
				}
			}
		})
	}
	wg.Wait()
	o.took = time.Since(start)
	return o
}

// openListCall opens a session at url, lists its tools and calls tool
// once.
func openListCall(url, tool string) (*client.Client, error) {
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(keepAlive))
	if err != nil {
		return nil, err
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		_ = c.Close()
		return nil, err
	}
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		return c, err
	}
	return c, call(c, tool, map[string]any{"message": "hi"}, nil)
}

// writeConfig writes a gateway config into dir whose one registry is a
// catalog of the server cards given by name (each the card's data, its
// name added) and of the A2A agents given by name (their card's URL), with
// local URLs allowed and the discovery limits off, and returns its path.
// An entry's URN is urn:air:bench.test:mcp:<name> or
// urn:air:bench.test:agent:<name>.
func writeConfig(dir string, cards map[string]map[string]any, agents map[string]string, extra map[string]any) (string, error) {
	entries := []any{} // a catalog of none is "entries": [], not null
	for name, data := range cards {
		data = maps.Clone(data)
		data["name"] = name
		entries = append(entries, map[string]any{"identifier": "urn:air:bench.test:mcp:" + name, "displayName": name,
			"type": "application/mcp-server-card+json", "data": data})
	}
	for name, cardURL := range agents {
		entries = append(entries, map[string]any{"identifier": "urn:air:bench.test:agent:" + name, "displayName": name,
			"type": "application/a2a-agent-card+json", "url": cardURL})
	}
	catalog := filepath.Join(dir, "catalog.json")
	data, _ := json.Marshal(map[string]any{"specVersion": "1.0", "entries": entries})
	path := filepath.Join(dir, "ardgate.json")
	cfg := map[string]any{"allow_local_urls": true, "max_attachments": 32,
		"registries": []any{map[string]any{"id": "bench", "kind": "catalog", "path": catalog}},
		"limits":     map[string]any{"discovery_per_minute": 0, "repeat_max": 0}}
	maps.Copy(cfg, extra)
	cfgData, _ := json.Marshal(cfg)
	if err := os.WriteFile(catalog, data, 0o600); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, cfgData, 0o600)
}

// processFigures are one case's figures on a gateway process; rss and
// goroutines are before, open and after closing.
type processFigures struct {
	open            time.Duration
	sessions        int
	errors          int
	firstErr        string
	attachLat       []time.Duration // under the load of the sessions opening
	quietAttach     []time.Duration // one at a time, after they closed
	rss, goroutines [3]int
}

func (p processFigures) perSession(v [3]int) float64 {
	return float64(v[1]-v[0]) / float64(max(p.sessions, 1))
}

// sessionsOnGateway runs case c with n sessions on a fresh gateway process.
func sessionsOnGateway(gw, cfg string, c scaleCase, n, parallel int) (processFigures, error) {
	var p processFigures
	url, stop, pid, err := startGatewayHTTP(gw, cfg)
	if err != nil {
		return p, err
	}
	defer stop()
	health := func() (rssKiB, goroutines int) {
		s := sampleGateway(url, pid)
		return s.rssKiB, s.goroutines
	}
	time.Sleep(500 * time.Millisecond)
	p.rss[0], p.goroutines[0] = health()

	var mu sync.Mutex
	o := openAll(n, parallel, func() (*client.Client, error) {
		cl, lat, err := openSession(url, c)
		mu.Lock()
		p.attachLat = append(p.attachLat, lat...)
		mu.Unlock()
		return cl, err
	})
	clients := o.clients
	p.open, p.sessions, p.errors, p.firstErr = o.took, len(clients), o.errors, o.firstErr
	time.Sleep(settle)
	p.rss[1], p.goroutines[1] = health()
	for _, c := range clients {
		_ = c.Close()
	}
	time.Sleep(2 * time.Second)
	p.rss[2], p.goroutines[2] = health()
	if c.attach {
		p.quietAttach, err = attachOneAtATime(url, 50)
	}
	return p, err
}

// attachOneAtATime attaches and detaches a remote server n times in one
// session, nothing else running, and returns the time each attach took:
// the latency a user sees, where the figure under load is mostly queueing.
func attachOneAtATime(url string, n int) ([]time.Duration, error) {
	c, _, err := openSession(url, scaleCase{})
	if c != nil {
		defer c.Close()
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lat := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if err := callCheck(ctx, c, "attach_resource", map[string]any{"urn": "urn:air:bench.test:mcp:a"}); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t))
		if err := callCheck(ctx, c, "detach_resource", map[string]any{"name": "a"}); err != nil {
			return lat, err
		}
	}
	return lat, nil
}

// openSession opens one session of case c with mcp-go's client: initialize,
// tools/list, then the case's work. The client is returned whenever it
// started, so that the caller closes it.
func openSession(url string, c scaleCase) (*client.Client, []time.Duration, error) {
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPLogger(slog.New(slog.DiscardHandler))}
	if c.listen {
		opts = append(opts, transport.WithContinuousListening())
	}
	if c.vanish {
		opts = append(opts, transport.WithHTTPBasicClient(&http.Client{Transport: noDelete{http.DefaultTransport}}))
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		return nil, nil, err
	}
	cl := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	// The GET stream lives as long as Start's context.
	if err := cl.Start(context.Background()); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := cl.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		return cl, nil, err
	}
	if _, err := cl.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		return cl, nil, err
	}
	lat, err := c.drive(func(name string, args map[string]any) error { return callCheck(ctx, cl, name, args) })
	return cl, lat, err
}

// callCheck calls a tool that must succeed.
func callCheck(ctx context.Context, c *client.Client, name string, args map[string]any) error {
	return callInto(ctx, c, name, args, nil)
}

// callInto calls a tool that must succeed and decodes its structured
// result into out, unless out is nil.
func callInto(ctx context.Context, c *client.Client, name string, args map[string]any, out any) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if res.IsError {
		b, _ := json.Marshal(res.Content)
		return fmt.Errorf("%s: %s", name, b)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res.RawStructuredContent, out); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// coldStart is a gateway started for its initialize reply.
type coldStart struct {
	name      string
	bin       string
	env, args []string
}

// coldStartBench times exec of the gateway to its initialize reply (the
// whole line) on stdio, with the builtin catalog; with -docker-mcp, also ardgate with
// the fixture pinned and Docker's MCP gateway with the fixture as its
// server, side by side.
func coldStartBench(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("coldstart", flag.ContinueOnError)
	runs := fs.Int("runs", 30, "starts to time")
	var others rivals
	fs.StringVar(&others.dockerMCP, "docker-mcp", "", "also time Docker's MCP gateway, given the docker-mcp binary (rivals.go)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, gw, fx, err := buildBinaries()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	others.dir, others.fixture = dir, fx
	fmt.Fprintf(out, "cold start (exec to the initialize reply, stdio), %d runs; %s\n", *runs, machine())
	path := []string{"PATH=" + os.Getenv("PATH")}
	starts := []coldStart{{"ardgate, builtin catalog", gw, path, nil}}
	if others.dockerMCP != "" {
		pinned, err := writeConfig(dir, nil, nil, map[string]any{"servers": []any{map[string]any{"name": "fixture", "command": fx, "args": []string{"--transport=stdio"}}}})
		if err != nil {
			return err
		}
		env, args, err := others.dockerMCPStdioArgs()
		if err != nil {
			return err
		}
		starts = append(starts, coldStart{"ardgate, the fixture pinned", gw, path, []string{"serve", "--config", pinned}},
			coldStart{"docker-mcp, the fixture its server", others.dockerMCP, env, args})
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"
	for _, st := range starts {
		var lat []time.Duration
		for range *runs {
			cmd := exec.Command(st.bin, st.args...)
			cmd.Env = st.env
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			start := time.Now()
			if err := cmd.Start(); err != nil {
				return err
			}
			_, _ = io.WriteString(stdin, init)
			// The reply's whole line: a gateway may send a notification
			// first.
			lines := bufio.NewReader(stdout)
			for {
				line, err := lines.ReadString('\n')
				if err != nil {
					return fmt.Errorf("%s: no initialize reply: %w", st.name, err)
				}
				if strings.Contains(line, `"id":1,`) {
					break
				}
			}
			lat = append(lat, time.Since(start))
			stdin.Close()
			_ = cmd.Wait()
		}
		slices.Sort(lat)
		fmt.Fprintf(out, "%-36s p50 %s, p99 %s, max %s\n", st.name, pct(lat, 50), pct(lat, 99), lat[len(lat)-1].Round(time.Microsecond))
	}
	return nil
}

// noDelete sends every request but DELETE, which it fails.
type noDelete struct{ http.RoundTripper }

func (n noDelete) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodDelete {
		return nil, errors.New("the client went away without ending its session")
	}
	return n.RoundTripper.RoundTrip(r)
}
