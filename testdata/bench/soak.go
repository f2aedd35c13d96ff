package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/testdata/a2afixture"
)

// soakBench keeps one gateway busy for a while with whole sessions, one
// after another on each worker, and samples what the gateway holds as it
// goes: whatever a session leaves behind when it ends (memory, goroutines,
// processes, file descriptors) shows as growth over thousands of them.
//
// A session: initialize, tools/list, attach a remote (HTTP) server and a
// stdio one (a process the gateway starts), calls to both, a call with a
// progress token, a call the client gives up on, a listing, a prompt, a
// resource read and a subscription taken and given up, an A2A agent
// attached with a task run to its end and one cancelled, detach of the
// stdio server (its process ends), and DELETE of the session, which ends
// the rest. With -abandon, some sessions end without DELETE instead, as
// when a client goes away, and the gateway's idle sweep ends them.
func soakBench(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	duration := fs.Duration("duration", 2*time.Minute, "how long sessions are run")
	workers := fs.Int("workers", 8, "sessions run at once")
	calls := fs.Int("calls", 20, "echo calls per session, half to each server")
	samples := fs.Int("samples", 8, "samples taken while running")
	stdio := fs.Bool("stdio", false, "one client on the gateway's stdio instead: each worker runs rounds in that one session, attaching and detaching servers and an agent of its own, so that what a round leaves behind piles up in one session")
	abandon := fs.Int("abandon", 0, "over HTTP, every Nth session of each worker ends without DELETE, left to the gateway's idle sweep (0: none)")
	idle := fs.Duration("idle", 5*time.Second, "the gateway's session_idle_timeout, with -abandon")
	inProcess := fs.Bool("in-process", false, "run the gateway in this process, and report its live Go heap after a GC at each sample (the bench's clients share the process; each is closed with its session)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *stdio && *inProcess {
		return errors.New("-stdio and -in-process do not go together")
	}
	if *abandon < 0 || *abandon > 0 && *stdio {
		return errors.New("-abandon takes a count of sessions, over HTTP")
	}
	dir, gw, fx, err := buildBinaries()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	upURL, stopUp, err := startFixtureHTTP(fx)
	if err != nil {
		return err
	}
	defer stopUp()
	// The stdio server is an npm package whose npx is the fixture, as in
	// the proxy bench; the gateway finds npx on the PATH it inherits.
	npx := filepath.Join(dir, "npx", "npx")
	if err := os.MkdirAll(filepath.Dir(npx), 0o755); err != nil {
		return err
	}
	if err := os.Link(fx, npx); err != nil {
		return err
	}
	if err := os.Setenv("PATH", filepath.Dir(npx)+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		return err
	}
	// A session attaches a URN once, so over stdio, where the workers
	// share one session, each has servers of its own: remote<w>, local<w>.
	suffixes := []string{""}
	if *stdio {
		suffixes = nil
		for w := range *workers {
			suffixes = append(suffixes, strconv.Itoa(w))
		}
	}
	agent := a2afixture.Serve()
	defer agent.Close()
	cards, agents := map[string]map[string]any{}, map[string]string{}
	for _, sfx := range suffixes {
		agents["agent"+sfx] = agent.URL + a2afixture.CardPath
		cards["remote"+sfx] = map[string]any{"remotes": []any{map[string]any{"type": "streamable-http", "url": upURL}}}
		cards["local"+sfx] = map[string]any{"packages": []any{map[string]any{"registryType": "npm", "identifier": "@ardgate-bench/fixture", "version": "1.0.0",
			"transport":        map[string]any{"type": "stdio"},
			"packageArguments": []any{map[string]any{"type": "positional", "value": "--transport=stdio"}}}}}
	}
	extra := map[string]any{}
	if *abandon > 0 {
		extra["session_idle_timeout"] = idle.String()
	}
	cfg, err := writeConfig(dir, cards, agents, extra)
	if err != nil {
		return err
	}
	var url string        // "" over stdio
	var sc *client.Client // the stdio client
	var stop func()
	pid := os.Getpid()
	switch {
	case *stdio:
		sc, stop, pid, err = stdioClient(gw, nil, "serve", "--config", cfg, "--log-level", "error")
	case *inProcess:
		url, stop, err = inProcessGateway(cfg)
	default:
		url, stop, pid, err = startGatewayHTTP(gw, cfg)
	}
	if err != nil {
		return err
	}
	defer stop()
	// run is one unit of a worker's work: a whole HTTP session, or a round
	// in the one stdio session.
	sessions := make([]int, *workers) // each worker's so far
	run := func(worker int) (int, error) {
		sessions[worker]++
		return soakSession(url, *calls, *abandon > 0 && sessions[worker]%*abandon == 0)
	}
	what, transport, unit := "whole sessions", "HTTP", "session"
	if *stdio {
		run = func(worker int) (int, error) { return soakRound(sc, strconv.Itoa(worker), *calls, true) }
		what, transport, unit = "rounds in one session", "stdio", "round"
	}

	var done, failed, callsDone atomic.Int64
	fmt.Fprintf(out, "soak: %d workers running %s for %s on one gateway over %s, each attaching a remote server, a stdio server and an A2A agent: %d echo calls, one with progress, one given up, a task run to its end, one cancelled; %s\n",
		*workers, what, *duration, transport, *calls, machine())
	where := "the gateway's"
	if *inProcess {
		where = "the bench's, the gateway running in it"
	}
	if *abandon > 0 {
		fmt.Fprintf(out, "every %d sessions of a worker, one ends without DELETE: the gateway's idle sweep ends it (session_idle_timeout %s)\n", *abandon, *idle)
	}
	fmt.Fprintf(out, "RSS, goroutines, sessions open: %s (VmRSS, /healthz, not over stdio); processes: its children; fds: its open file descriptors\n", where)
	fmt.Fprintln(out)
	row := "%-10s %9s %9s %7s %10s %11s %9s %10s %5s %10s\n"
	fmt.Fprintf(out, row, "at", unit+"s", "calls", "errors", "RSS", "goroutines", "open", "processes", "fds", "live heap")
	line := func(at string) soakSample {
		s := sampleGateway(url, pid)
		heap := "-"
		if *inProcess {
			h, _, _ := liveHeap()
			heap = fmt.Sprintf("%.1f MiB", float64(h)/(1<<20))
		}
		fmt.Fprintf(out, row, at, strconv.FormatInt(done.Load(), 10), strconv.FormatInt(callsDone.Load(), 10), strconv.FormatInt(failed.Load(), 10),
			fmt.Sprintf("%.1f MiB", float64(s.rssKiB)/1024), count(s.goroutines), count(s.sessions), strconv.Itoa(s.children), strconv.Itoa(s.fds), heap)
		return s
	}
	base := line("start") // before the first session
	var firstErr atomic.Value
	deadline := time.Now().Add(*duration)
	var wg sync.WaitGroup
	for w := range *workers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				n, err := run(w)
				callsDone.Add(int64(n))
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
				done.Add(1)
			}
		})
	}

	every := *duration / time.Duration(max(*samples, 1))
	var first, last soakSample
	var firstDone, lastDone int64
	for i := 1; i <= *samples; i++ {
		time.Sleep(time.Until(deadline.Add(-*duration + time.Duration(i)*every)))
		s := line(time.Duration(i * int(every)).Round(time.Second).String())
		if i == 1 {
			first, firstDone = s, done.Load()
		}
		last, lastDone = s, done.Load()
	}
	wg.Wait()
	settle := 2 * time.Second // sessions closed, processes reaped
	if *abandon > 0 {
		settle += *idle * 3 / 2 // and the abandoned ones swept
	}
	time.Sleep(settle)
	after := line("after")
	fmt.Fprintln(out)
	if n := lastDone - firstDone; n > 0 {
		fmt.Fprintf(out, "RSS from the first sample to the last, while running: %+.1f MiB over %d %ss (%+.2f KiB a %s)\n",
			float64(last.rssKiB-first.rssKiB)/1024, n, unit, float64(last.rssKiB-first.rssKiB)/float64(n), unit)
	}
	fmt.Fprintf(out, "after the last %s: %s sessions open, %d processes, goroutines %s (%s at start), fds %d (%d at start)\n",
		unit, count(after.sessions), after.children, count(after.goroutines), count(base.goroutines), after.fds, base.fds)
	if e, ok := firstErr.Load().(string); ok {
		fmt.Fprintf(out, "first error: %s\n", e)
	}
	return nil
}

// soakSession runs one HTTP session of the soak and returns how many
// calls it made; its end (DELETE, unless it vanishes) detaches the remote
// server.
func soakSession(url string, calls int, vanish bool) (int, error) {
	c, _, err := openSession(url, scaleCase{vanish: vanish})
	if c != nil {
		defer c.Close() // DELETE: the session's end
	}
	if err != nil {
		return 0, err
	}
	return soakRound(c, "", calls, false)
}

// soakRound attaches the remote and the stdio server remote<suffix> and
// local<suffix> (their URNs' names) and calls them, gets a prompt and
// reads and subscribes to a resource (soakOffers), runs tasks on the
// agent agent<suffix> (soakAgent), detaches the stdio server and, with
// both, the remote and the agent too, and returns how many calls it made.
func soakRound(c *client.Client, suffix string, calls int, both bool) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	remote, local := "remote"+suffix, "local"+suffix
	for _, name := range []string{remote, local} {
		if err := callCheck(ctx, c, "attach_resource", map[string]any{"urn": "urn:air:bench.test:mcp:" + name, "name": name}); err != nil {
			return 0, err
		}
	}
	n := 0
	for i := range calls {
		tool := "mcp_" + []string{remote, local}[i%2] + "__echo"
		if err := callCheck(ctx, c, tool, map[string]any{"message": "soak " + strconv.Itoa(i)}); err != nil {
			return n, err
		}
		n++
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "mcp_"+local+"__slow", map[string]any{"ms": 60}
	req.Params.Meta = &mcp.Meta{ProgressToken: "soak"}
	if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
		return n, fmt.Errorf("slow call with progress: %v %v", err, res)
	}
	n++
	// A call given up on: the client's context ends while the upstream
	// works, and the client sends notifications/cancelled.
	giveUp, stopCall := context.WithTimeout(ctx, 30*time.Millisecond)
	req.Params.Name, req.Params.Arguments, req.Params.Meta = "mcp_"+remote+"__slow", map[string]any{"ms": 5000}, nil
	_, err := c.CallTool(giveUp, req)
	stopCall()
	if !errors.Is(err, context.DeadlineExceeded) {
		return n, fmt.Errorf("a call given up on ended with %v", err)
	}
	n++
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		return n, err
	}
	if err := soakOffers(ctx, c, local, suffix); err != nil {
		return n, err
	}
	agent := "agent" + suffix
	if err := soakAgent(ctx, c, agent); err != nil {
		return n, err
	}
	detach := []string{local}
	if both {
		detach = append(detach, remote, agent)
	}
	for _, name := range detach {
		if err := callCheck(ctx, c, "detach_resource", map[string]any{"name": name}); err != nil {
			return n, err
		}
	}
	return n, nil
}

// soakOffers gets the stdio server's prompt, reads a resource by its
// template, and subscribes to one and gives the subscription up (a URI of
// this round's own: over stdio the rounds share one session).
func soakOffers(ctx context.Context, c *client.Client, local, suffix string) error {
	get := mcp.GetPromptRequest{}
	get.Params.Name, get.Params.Arguments = "mcp_"+local+"__greet", map[string]string{"name": "soak"}
	if _, err := c.GetPrompt(ctx, get); err != nil {
		return fmt.Errorf("prompts/get: %w", err)
	}
	read := mcp.ReadResourceRequest{}
	read.Params.URI = "fixture://items/soak" + suffix
	if _, err := c.ReadResource(ctx, read); err != nil {
		return fmt.Errorf("resources/read: %w", err)
	}
	if err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: read.Params.URI}}); err != nil {
		return fmt.Errorf("resources/subscribe: %w", err)
	}
	if err := c.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: read.Params.URI}}); err != nil {
		return fmt.Errorf("resources/unsubscribe: %w", err)
	}
	return nil
}

// soakAgent attaches the A2A agent under name, runs a task to its end
// (spawn_agent, wait_task), and cancels another (cancel_task).
func soakAgent(ctx context.Context, c *client.Client, name string) error {
	if err := callCheck(ctx, c, "attach_resource", map[string]any{"urn": "urn:air:bench.test:agent:" + name, "name": name}); err != nil {
		return err
	}
	var task struct {
		TaskID string `json:"task_id"`
		State  string
	}
	if err := callInto(ctx, c, "spawn_agent", map[string]any{"agent": name, "message": "stream 2"}, &task); err != nil {
		return err
	}
	if err := callInto(ctx, c, "wait_task", map[string]any{"task_id": task.TaskID, "timeout_seconds": 10}, &task); err != nil {
		return err
	}
	if task.State != "completed" {
		return fmt.Errorf("task %s ended %s", task.TaskID, task.State)
	}
	if err := callInto(ctx, c, "spawn_agent", map[string]any{"agent": name, "message": "wait"}, &task); err != nil {
		return err
	}
	return callCheck(ctx, c, "cancel_task", map[string]any{"task_id": task.TaskID})
}

// count is n, or "-" for a figure not read (-1).
func count(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// soakSample is what the gateway holds at one moment.
type soakSample struct {
	rssKiB, goroutines, sessions, children, fds int
}

func sampleGateway(url string, pid int) soakSample {
	var s soakSample
	if url == "" { // stdio: no /healthz
		s.goroutines, s.sessions = -1, -1
	} else if resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/healthz"); err == nil {
		var h struct{ Goroutines, Sessions int }
		_ = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		s.goroutines, s.sessions = h.Goroutines, h.Sessions
	}
	s.rssKiB = rssKiB(pid)
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	s.fds = len(fds)
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read past
		// its closing parenthesis.
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			s.children++
		}
	}
	return s
}

// rssKiB is process pid's resident memory (VmRSS), in KiB.
func rssKiB(pid int) int { return statusKiB(pid, "VmRSS:") }

// statusKiB is the figure, in KiB, of field in process pid's status.
func statusKiB(pid int, field string) int {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kib, _ := strconv.Atoi(strings.Fields(v)[0])
			return kib
		}
	}
	return 0
}
