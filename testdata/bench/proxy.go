package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
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

// proxyBench runs the same workloads against the Go fixture directly and
// through ardgate (the fixture pinned as an upstream), in one run, for
// stdio and streamable HTTP, and prints the ratios.
func proxyBench(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	calls := fs.Int("calls", 20000, "sequential calls per case")
	clients := fs.Int("clients", 64, "concurrent clients")
	concCalls := fs.Int("conc-calls", 200, "calls per concurrent client")
	bigCalls := fs.Int("big-calls", 200, "1 MiB results per case")
	rounds := fs.Int("rounds", 10, "turns the paths take at each workload")
	transports := fs.String("transports", "stdio,http", "which transports to measure")
	stdioSessions := fs.Int("stdio-sessions", 1, "stdio clients, each with its own chain of processes; the concurrent callers share them")
	native := fs.Bool("native-relays", false, "also measure socat (stdio) and nginx (HTTP) as relays; both must be installed")
	var rival rivals
	fs.StringVar(&rival.toolhive, "toolhive", "", "also measure ToolHive's thv proxy and vMCP (HTTP), given the thv binary (rivals.go)")
	fs.StringVar(&rival.dockerMCP, "docker-mcp", "", "also measure Docker's MCP gateway (stdio and HTTP), given the docker-mcp binary (rivals.go)")
	baseline := fs.String("baseline", "", "also measure this ardgate binary, built at an earlier commit, beside the current one")
	progress := fs.Bool("progress-token", false, "give every measured call a progress token, as Claude Code and the MCP Inspector call tools")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, gw, fx, err := buildBinaries()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rival.dir, rival.fixture = dir, fx
	fmt.Fprintf(out, "proxy: %d sequential calls, %d clients x %d calls, %d x 1 MiB; %s\n", *calls, *clients, *concCalls, *bigCalls, machine())
	var meta *mcp.Meta
	if *progress {
		meta = &mcp.Meta{ProgressToken: "bench"}
		fmt.Fprintln(out, "every measured call carries a progress token")
	}
	if *stdioSessions > 1 {
		fmt.Fprintf(out, "stdio: %d client sessions, each with its own relay or gateway and fixture processes\n", *stdioSessions)
	}
	fmt.Fprintln(out, "cpu/call: the CPU time (user+system) of the relay or gateway process alone, per call")
	fmt.Fprintln(out, "all/call: the CPU time of the whole machine (client, relay or gateway, upstream) per call; busy: its share of both CPUs")

	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, transportName := range strings.Split(*transports, ",") {
		paths := []benchPath{
			{"direct", func() (target, func(), error) { return startDirect(transportName, fx, *stdioSessions) }},
			{"relay", func() (target, func(), error) { return startRelay(transportName, self, fx, *stdioSessions) }},
		}
		if *native {
			paths = append(paths, benchPath{nativeRelay(transportName), func() (target, func(), error) { return startNative(transportName, fx, dir, *stdioSessions) }})
		}
		paths = append(paths, rival.paths(transportName, *stdioSessions)...)
		if *baseline != "" {
			paths = append(paths, benchPath{"ardgate@base", func() (target, func(), error) {
				return startViaGateway(transportName, *baseline, fx, dir, *stdioSessions)
			}})
		}
		paths = append(paths, benchPath{"ardgate", func() (target, func(), error) { return startViaGateway(transportName, gw, fx, dir, *stdioSessions) }})
		targets := make([]target, len(paths))
		for i, p := range paths {
			t, stop, err := p.start()
			if err != nil {
				return fmt.Errorf("%s %s: %w", transportName, p.name, err)
			}
			defer stop()
			t.meta = meta
			targets[i] = t
		}
		cases := []struct {
			name  string
			calls int // in all, split over the rounds
			run   func(c target, n int) (sample, error)
		}{
			{"sequential echo", *calls, func(c target, n int) (sample, error) {
				return sequential(c, n, "echo", map[string]any{"message": "ping"})
			}},
			{fmt.Sprintf("%d concurrent", *clients), *clients * *concCalls, func(c target, n int) (sample, error) {
				return concurrent(c, *clients, max(1, n / *clients))
			}},
			{"1 MiB results", *bigCalls, func(c target, n int) (sample, error) {
				return sequential(c, n, "big", map[string]any{"bytes": 1 << 20})
			}},
		}
		fmt.Fprintf(out, "\n%s upstream, %s client\n", transportName, transportName)
		fmt.Fprintf(out, "%-16s %-12s %9s %9s %9s %10s %9s %9s %5s\n", "workload", "path", "p50", "p99", "max", "calls/s", "cpu/call", "all/call", "busy")
		for _, c := range cases {
			// The paths take turns, a round each, so that the machine's
			// drift during the run falls on all of them alike.
			all := make([]sample, len(paths))
			for range *rounds {
				for i, p := range paths {
					before, machineBefore := cpuTime(targets[i].pids), machineTime()
					got, err := c.run(targets[i], max(1, c.calls / *rounds))
					if err != nil {
						return fmt.Errorf("%s %s: %w", c.name, p.name, err)
					}
					got.cpu = cpuTime(targets[i].pids) - before
					got.machine = machineTime() - machineBefore
					all[i].add(got)
				}
			}
			res := make([]stats, len(paths))
			for i, p := range paths {
				res[i] = all[i].stats()
				label := c.name
				if i > 0 {
					label = ""
				}
				cpu := "-"
				if len(targets[i].pids) > 0 {
					cpu = res[i].cpu.String()
				}
				fmt.Fprintf(out, "%-16s %-12s %9s %9s %9s %10.0f %9s %9s %4.0f%%\n", label, p.name, res[i].p50, res[i].p99, res[i].max, res[i].rate, cpu, res[i].machine, 100*res[i].busy)
			}
			for i := 1; i < len(paths); i++ {
				d, v := res[0], res[i]
				fmt.Fprintf(out, "%-16s %-12s %8.2fx %8.2fx %9s %9.2fx   (+%s at p50)\n", "", paths[i].name+"/d",
					ratio(v.p50, d.p50), ratio(v.p99, d.p99), "", v.rate/d.rate, (v.p50 - d.p50).Round(time.Microsecond))
			}
		}
	}
	return nil
}

// benchPath is one way of reaching the fixture: its name and how to start it.
type benchPath struct {
	name  string
	start func() (target, func(), error)
}

// buildBinaries builds the gateway and the fixture server into a new
// temporary directory, which the caller removes.
func buildBinaries() (dir, gateway, fixture string, err error) {
	if dir, err = os.MkdirTemp("", "ardgate-bench-"); err != nil {
		return "", "", "", err
	}
	gateway, fixture = filepath.Join(dir, "ardgate"), filepath.Join(dir, "mcpfixture")
	for _, b := range [][]string{{gateway, "."}, {fixture, "./testdata/mcpfixture/cmd/mcpfixture"}} {
		if out, err := exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return "", "", "", fmt.Errorf("build %s: %v\n%s", b[1], err, out)
		}
	}
	return dir, gateway, fixture, nil
}

// target is a pool of connected clients: one for stdio (requests are
// multiplexed on the pipe), one session each for HTTP.
type target struct {
	clients []*client.Client
	tool    func(string) string // fixture tool name → name on this path
	pids    []int               // the relay or gateway processes; none when direct
	meta    *mcp.Meta           // the _meta of every measured call
}

type stats struct {
	p50, p99, max time.Duration
	rate          float64
	cpu           time.Duration // the middle process's, per call
	machine       time.Duration // the whole machine's, per call
	busy          float64       // the machine's CPU time over the wall time of both CPUs
}

// sample is what one or more rounds of a workload measured on one path.
type sample struct {
	lat     []time.Duration
	wall    time.Duration
	cpu     time.Duration // the middle process's CPU time
	machine time.Duration // the whole machine's
}

func (s *sample) add(o sample) {
	s.lat = append(s.lat, o.lat...)
	s.wall += o.wall
	s.cpu += o.cpu
	s.machine += o.machine
}

func (s sample) stats() stats {
	slices.Sort(s.lat)
	return stats{p50: pct(s.lat, 50), p99: pct(s.lat, 99), max: s.lat[len(s.lat)-1].Round(time.Microsecond), rate: float64(len(s.lat)) / s.wall.Seconds(),
		cpu:     (s.cpu / time.Duration(len(s.lat))).Round(time.Microsecond),
		machine: (s.machine / time.Duration(len(s.lat))).Round(time.Microsecond),
		busy:    s.machine.Seconds() / s.wall.Seconds() / float64(runtime.NumCPU())}
}

// machineTime is the CPU time the whole machine has spent busy (not idle
// or waiting on I/O), from the first line of /proc/stat, in clock ticks of
// 10 ms.
func machineTime() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	var busy int64
	for i, f := range strings.Fields(line)[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		if i != 3 && i != 4 && i < 7 { // user nice system (idle iowait) irq softirq
			busy += n
		}
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

// cpuTime is the user and system CPU time processes pids have used.
func cpuTime(pids []int) time.Duration {
	var t time.Duration
	for _, pid := range pids {
		t += processTime(pid)
	}
	return t
}

// processTime is the user and system CPU time process pid has used, from
// /proc/<pid>/stat (in clock ticks, which Linux fixes at 100 a second for
// user space).
func processTime(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is the first, utime the 12th, stime the 13th.
	_, after, _ := strings.Cut(string(data), ") ")
	f := strings.Fields(after)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func call(c *client.Client, name string, args map[string]any, meta *mcp.Meta) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	req.Params.Meta = meta
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s: tool error %v", name, res.Content)
	}
	return nil
}

func sequential(t target, n int, tool string, args map[string]any) (sample, error) {
	c, name := t.clients[0], t.tool(tool)
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for range n {
		s := time.Now()
		if err := call(c, name, args, t.meta); err != nil {
			return sample{}, err
		}
		lat = append(lat, time.Since(s))
	}
	return sample{lat: lat, wall: time.Since(start)}, nil
}

func concurrent(t target, clients, per int) (sample, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		c := t.clients[i%len(t.clients)]
		wg.Go(func() {
			local := make([]time.Duration, 0, per)
			for range per {
				s := time.Now()
				if err := call(c, t.tool("echo"), map[string]any{"message": "ping"}, t.meta); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				local = append(local, time.Since(s))
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if firstErr != nil {
		return sample{}, firstErr
	}
	return sample{lat: lat, wall: time.Since(start)}, nil
}

const sessions = 64

func startDirect(kind, fixture string, stdioSessions int) (target, func(), error) {
	if kind == "stdio" {
		cs, stop, _, err := stdioClients(stdioSessions, fixture, nil, "--transport=stdio")
		return target{clients: cs, tool: same}, stop, err
	}
	url, stopFx, err := startFixtureHTTP(fixture)
	if err != nil {
		return target{}, nil, err
	}
	cs, stopClients, err := httpClients(url, sessions)
	stop := func() { stopClients(); stopFx() }
	if err != nil {
		stop()
		return target{}, nil, err
	}
	return target{clients: cs, tool: same}, stop, nil
}

// startRelay puts the byte-copying relay (relay.go) where the gateway
// would be.
func startRelay(kind, self, fixture string, stdioSessions int) (target, func(), error) {
	if kind == "stdio" {
		cs, stop, pids, err := stdioClients(stdioSessions, self, nil, "relay", "stdio", fixture, "--transport=stdio")
		return target{clients: cs, tool: same, pids: pids}, stop, err
	}
	return behindHTTPRelay(fixture, func(upstream string) (string, func(), int, error) {
		cmd := exec.Command(self, "relay", "http", upstream)
		cmd.Stderr = os.Stderr // what the reverse proxy says went wrong
		return readyURL(cmd, cmd.StdoutPipe, func(line string) (string, bool) { return strings.CutPrefix(line, "READY ") })
	})
}

// behindHTTPRelay runs the fixture over HTTP, puts the relay that start
// starts in front of it, and connects the clients to the relay's URL.
func behindHTTPRelay(fixture string, start func(upstream string) (url string, stop func(), pid int, err error)) (target, func(), error) {
	upstream, stopFx, err := startFixtureHTTP(fixture)
	if err != nil {
		return target{}, nil, err
	}
	url, stopRelay, pid, err := start(upstream)
	if err != nil {
		stopFx()
		return target{}, nil, err
	}
	cs, stopClients, err := httpClients(url, sessions)
	stop := func() { stopClients(); stopRelay(); stopFx() }
	if err != nil {
		stop()
		return target{}, nil, err
	}
	return target{clients: cs, tool: same, pids: []int{pid}}, stop, nil
}

// startViaGateway puts ardgate in front of the fixture, which each session
// attaches with attach_resource from a catalog file of the bench's own:
// over HTTP a remote on loopback; over stdio an npm package, launched by
// npx as any would be, where the bench's "npx" is the fixture itself.
func startViaGateway(kind, gateway, fixture, dir string, stdioSessions int) (target, func(), error) {
	via := func(s string) string { return "mcp_fx__" + s }
	card := map[string]any{"name": "bench/fx", "packages": []any{map[string]any{
		"registryType": "npm", "identifier": "@ardgate-bench/fixture", "version": "1.0.0",
		"transport": map[string]any{"type": "stdio"}, "packageArguments": []any{map[string]any{"type": "positional", "value": "--transport=stdio"}},
	}}}
	stopFx := func() {}
	if kind == "http" {
		url, stop, err := startFixtureHTTP(fixture)
		if err != nil {
			return target{}, nil, err
		}
		card, stopFx = map[string]any{"name": "bench/fx", "remotes": []any{map[string]any{"type": "streamable-http", "url": url}}}, stop
	}
	catalog := filepath.Join(dir, "catalog-"+kind+".json")
	cfg := filepath.Join(dir, "bench-"+kind+".json")
	catalogData, _ := json.Marshal(map[string]any{"specVersion": "1.0", "entries": []any{map[string]any{
		"identifier": "urn:air:bench.test:mcp:fx", "displayName": "fx", "type": "application/mcp-server-card+json", "data": card}}})
	cfgData, _ := json.Marshal(map[string]any{"registries": []any{map[string]any{"id": "bench", "kind": "catalog", "path": catalog}},
		"allow_local_urls": true, "max_result_bytes": 8 << 20})
	npx := filepath.Join(dir, "npx", "npx")
	if os.MkdirAll(filepath.Dir(npx), 0o755) != nil || os.WriteFile(catalog, catalogData, 0o600) != nil || os.WriteFile(cfg, cfgData, 0o600) != nil {
		stopFx()
		return target{}, nil, fmt.Errorf("writing the bench's catalog and config")
	}
	if err := os.Link(fixture, npx); err != nil && !os.IsExist(err) {
		stopFx()
		return target{}, nil, err
	}
	var t target
	var stop func()
	var err error
	if kind == "stdio" {
		t.clients, stop, t.pids, err = stdioClients(stdioSessions, gateway, []string{"PATH=" + filepath.Dir(npx) + ":" + os.Getenv("PATH")}, "serve", "--config", cfg, "--log-level", "error")
		t.tool = via
	} else {
		var url string
		var pid int
		url, stop, pid, err = startGatewayHTTP(gateway, cfg)
		t.pids = []int{pid}
		if err == nil {
			var stopClients func()
			t.clients, stopClients, err = httpClients(url, sessions)
			t.tool = via
			prev := stop
			stop = func() { stopClients(); prev() }
		}
	}
	if err != nil {
		stopFx()
		return target{}, nil, err
	}
	all := func() { stop(); stopFx() }
	for _, c := range t.clients {
		if err := call(c, "attach_resource", map[string]any{"urn": "urn:air:bench.test:mcp:fx", "name": "fx"}, nil); err != nil {
			all()
			return target{}, nil, fmt.Errorf("attach the fixture through ardgate (%s): %w", kind, err)
		}
		if err := call(c, via("echo"), map[string]any{"message": "attached"}, nil); err != nil {
			all()
			return target{}, nil, fmt.Errorf("the attached fixture did not answer through ardgate (%s): %w", kind, err)
		}
	}
	return t, all, nil
}

// stdioClients starts n of bin, each with a client connected over its
// stdio; pids are bin's processes.
func stdioClients(n int, bin string, env []string, args ...string) ([]*client.Client, func(), []int, error) {
	var cs []*client.Client
	var stops []func()
	var pids []int
	stop := func() {
		for _, s := range stops {
			s()
		}
	}
	for range max(1, n) {
		c, s, pid, err := stdioClient(bin, env, args...)
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		cs, stops, pids = append(cs, c), append(stops, s), append(pids, pid)
	}
	return cs, stop, pids, nil
}

// stdioClient starts bin and connects a client to it over its stdio; pid
// is bin's process.
func stdioClient(bin string, env []string, args ...string) (c *client.Client, stop func(), pid int, err error) {
	var proc *exec.Cmd
	tr := transport.NewStdioWithOptions(bin, env, args, transport.WithCommandFunc(func(_ context.Context, cmd string, _ []string, args []string) (*exec.Cmd, error) {
		c := exec.Command(cmd, args...)
		proc = c
		c.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...) // the last PATH counts
		c.Stderr = io.Discard
		return c, nil
	}))
	c = client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	if err := c.Start(context.Background()); err != nil {
		return nil, nil, 0, err
	}
	if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
		return nil, nil, 0, err
	}
	return c, func() { _ = c.Close() }, proc.Process.Pid, nil
}

// keepAlive keeps a connection per concurrent call, as separate clients
// would: http.DefaultTransport keeps two per host, so 64 sessions in one
// process would dial again for most calls, on every path alike.
var keepAlive = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

func httpClients(url string, n int) ([]*client.Client, func(), error) {
	var cs []*client.Client
	stop := func() {
		for _, c := range cs {
			_ = c.Close()
		}
	}
	for range n {
		tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(keepAlive))
		if err != nil {
			return nil, stop, err
		}
		c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
		if err := c.Start(context.Background()); err != nil {
			return nil, stop, err
		}
		if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{}); err != nil {
			return nil, stop, err
		}
		cs = append(cs, c)
	}
	return cs, stop, nil
}

// startFixtureHTTP runs the fixture over streamable HTTP on loopback.
func startFixtureHTTP(fixture string, args ...string) (string, func(), error) {
	cmd := exec.Command(fixture, append([]string{"--transport=http", "--addr=127.0.0.1:0"}, args...)...)
	url, stop, _, err := readyURL(cmd, cmd.StdoutPipe, func(line string) (string, bool) { return strings.CutPrefix(line, "READY ") })
	return url, stop, err
}

// startGatewayHTTP runs ardgate over streamable HTTP on loopback and
// returns its URL, a stop function and its pid.
func startGatewayHTTP(gateway, cfg string) (string, func(), int, error) {
	cmd := exec.Command(gateway, "serve", "--transport", "http", "--addr", "127.0.0.1:0", "--config", cfg, "--log-format", "json")
	return readyURL(cmd, cmd.StderrPipe, func(line string) (string, bool) {
		var rec struct{ URL string }
		return rec.URL, json.Unmarshal([]byte(line), &rec) == nil && rec.URL != ""
	})
}

func readyURL(cmd *exec.Cmd, pipe func() (io.ReadCloser, error), parse func(string) (string, bool)) (string, func(), int, error) {
	r, err := pipe()
	if err != nil {
		return "", nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, 0, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if url, ok := parse(sc.Text()); ok {
			go io.Copy(io.Discard, r)
			return url, stop, cmd.Process.Pid, nil
		}
	}
	stop()
	return "", nil, 0, fmt.Errorf("%s did not say where it listens", cmd.Path)
}
