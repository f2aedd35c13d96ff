package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// scaleBench opens many HTTP sessions on one gateway, each attaching two
// servers on a shared HTTP upstream and calling them, and reports memory
// and goroutines per session, attach time, and errors.
func scaleBench(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	n := fs.Int("sessions", 1000, "concurrent sessions")
	parallel := fs.Int("parallel", 50, "sessions being opened at once")
	if err := fs.Parse(args); err != nil {
		return err
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
	card := func(name string) map[string]any {
		return map[string]any{"identifier": "urn:air:bench.test:mcp:" + name, "displayName": name, "type": "application/mcp-server-card+json",
			"data": map[string]any{"name": name, "remotes": []any{map[string]any{"type": "streamable-http", "url": upURL}}}}
	}
	catalog := filepath.Join(dir, "catalog.json")
	data, _ := json.Marshal(map[string]any{"specVersion": "1.0", "entries": []any{card("a"), card("b")}})
	cfg := filepath.Join(dir, "ardgate.json")
	cfgData, _ := json.Marshal(map[string]any{"allow_local_urls": true, "max_attachments": 5,
		"registries": []any{map[string]any{"id": "bench", "kind": "catalog", "path": catalog}},
		"limits":     map[string]any{"discovery_per_minute": 0, "repeat_max": 0}})
	if os.WriteFile(catalog, data, 0o600) != nil || os.WriteFile(cfg, cfgData, 0o600) != nil {
		return fmt.Errorf("writing config")
	}
	url, stop, pid, err := startGatewayHTTP(gw, cfg)
	if err != nil {
		return err
	}
	defer stop()
	health := func() (rssKiB, goroutines int) {
		resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
		if err == nil {
			var h struct{ Goroutines int }
			_ = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			goroutines = h.Goroutines
		}
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				rssKiB, _ = strconv.Atoi(strings.Fields(v)[0])
			}
		}
		return
	}
	baseRSS, baseG := health()

	var mu sync.Mutex
	var clients []*client.Client
	var attachLat []time.Duration
	var errs []string
	sem := make(chan struct{}, *parallel)
	var wg sync.WaitGroup
	start := time.Now()
	for range *n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cs, _, err := httpClients(url, 1)
			if err != nil {
				mu.Lock()
				errs = append(errs, err.Error())
				mu.Unlock()
				return
			}
			c := cs[0]
			var lat []time.Duration
			var failed string
			for _, name := range []string{"a", "b"} {
				t := time.Now()
				if err := callCheck(c, "attach_resource", map[string]any{"urn": "urn:air:bench.test:mcp:" + name}); err != nil {
					failed = err.Error()
					break
				}
				lat = append(lat, time.Since(t))
				if err := callCheck(c, "mcp_"+name+"__echo", map[string]any{"message": "hi"}); err != nil {
					failed = err.Error()
					break
				}
			}
			mu.Lock()
			clients = append(clients, c)
			attachLat = append(attachLat, lat...)
			if failed != "" {
				errs = append(errs, failed)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	openFor := time.Since(start)
	time.Sleep(2 * time.Second) // let idle state settle
	rss, g := health()
	for _, c := range clients {
		_ = c.Close()
	}
	time.Sleep(2 * time.Second)
	afterRSS, afterG := health()
	slices.Sort(attachLat)

	fmt.Fprintf(out, "sessions: %d HTTP sessions, 2 remote attachments each on one shared upstream; %s\n", *n, machine())
	fmt.Fprintf(out, "opened, attached and called in %s; errors %d\n", openFor.Round(time.Millisecond), len(errs))
	if len(errs) > 0 {
		fmt.Fprintf(out, "first error: %s\n", errs[0])
	}
	if len(attachLat) > 0 {
		fmt.Fprintf(out, "attach of a remote HTTP server: p50 %s, p99 %s\n", pct(attachLat, 50), pct(attachLat, 99))
	}
	per := func(total, base int) float64 { return float64(total-base) / float64(max(len(clients), 1)) }
	fmt.Fprintf(out, "gateway RSS: %d KiB idle before, %d KiB with %d sessions open (%.0f KiB per session with its 2 attachments), %d KiB after closing\n",
		baseRSS, rss, len(clients), per(rss, baseRSS), afterRSS)
	fmt.Fprintf(out, "goroutines: %d before, %d open (%.1f per session), %d after closing\n", baseG, g, per(g, baseG), afterG)
	return nil
}

func callCheck(c *client.Client, name string, args map[string]any) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		return err
	}
	if res.IsError {
		b, _ := json.Marshal(res.Content)
		return fmt.Errorf("%s: %s", name, b)
	}
	return nil
}

// coldStartBench times exec of the gateway to its initialize reply on
// stdio, with the builtin catalog.
func coldStartBench(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("coldstart", flag.ContinueOnError)
	runs := fs.Int("runs", 30, "starts to time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, gw, _, err := buildBinaries()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"
	var lat []time.Duration
	for range *runs {
		cmd := exec.Command(gw)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			return err
		}
		_, _ = io.WriteString(stdin, init)
		buf := make([]byte, 1)
		if _, err := stdout.Read(buf); err != nil {
			return fmt.Errorf("no initialize reply: %w", err)
		}
		lat = append(lat, time.Since(start))
		stdin.Close()
		_ = cmd.Wait()
	}
	slices.Sort(lat)
	fmt.Fprintf(out, "cold start (exec to the first byte of the initialize reply, stdio, builtin catalog), %d runs; %s\n", *runs, machine())
	fmt.Fprintf(out, "p50 %s, p99 %s, max %s\n", pct(lat, 50), pct(lat, 99), lat[len(lat)-1].Round(time.Microsecond))
	return nil
}
