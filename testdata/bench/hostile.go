package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// hostileRegistryBench runs the gateway over HTTP against a loopback ARD
// registry that answers every search with -entries entries, each with a
// description of -desc bytes, and drives discover_resources with a new
// text on every call (each answer is a new one to the gateway) for
// -duration, sampling the gateway's RSS. It runs twice: with new URNs in
// every answer (what the gateway keeps of entries grows with them), and
// with the same URNs in every answer (only the answers kept grow).
func hostileRegistryBench(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("hostile-registry", flag.ContinueOnError)
	duration := fs.Duration("duration", 20*time.Second, "how long each variant searches")
	workers := fs.Int("workers", 4, "searches at once")
	entries := fs.Int("entries", 7, "results in every answer")
	desc := fs.Int("desc", 1<<20, "bytes of every result's description")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, gw, _, err := buildBinaries()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(out, "hostile registry: %d results of %d KiB descriptions per answer, %d searches at once, %s per variant; %s\n",
		*entries, *desc>>10, *workers, *duration, machine())
	fmt.Fprintf(out, "%-12s %9s %10s %10s %10s %7s\n", "URNs", "searches", "start MB", "peak MB", "final MB", "errors")
	for _, fixed := range []bool{false, true} {
		f, err := hostileRun(dir, gw, *entries, *desc, *workers, *duration, fixed)
		if err != nil {
			return err
		}
		name := "new each"
		if fixed {
			name = "fixed"
		}
		fmt.Fprintf(out, "%-12s %9d %10.1f %10.1f %10.1f %7d\n", name, f.searches,
			float64(f.start)/1024, float64(f.peak)/1024, float64(f.final)/1024, f.errors)
		if f.firstErr != "" {
			fmt.Fprintf(out, "  first error: %s\n", f.firstErr)
		}
	}
	return nil
}

// hostileFigures are one variant's counts and RSS in KiB: before the
// first search, the highest sampled, and after the last.
type hostileFigures struct {
	searches, errors   int
	firstErr           string
	start, peak, final int
}

func hostileRun(dir, gw string, entries, desc, workers int, d time.Duration, fixed bool) (hostileFigures, error) {
	var f hostileFigures
	regURL, stopReg, err := serveHostileRegistry(entries, desc, fixed)
	if err != nil {
		return f, err
	}
	defer stopReg()
	cfg := filepath.Join(dir, "hostile.json")
	data, _ := json.Marshal(map[string]any{"allow_local_urls": true,
		"registries": []any{map[string]any{"id": "hostile", "kind": "ard", "url": regURL}},
		"limits":     map[string]any{"discovery_per_minute": 0, "repeat_max": 0}})
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		return f, err
	}
	url, stop, pid, err := startGatewayHTTP(gw, cfg)
	if err != nil {
		return f, err
	}
	defer stop()
	cs, closeClients, err := httpClients(url, workers)
	defer closeClients()
	if err != nil {
		return f, err
	}
	f.start = rssKiB(pid)
	f.peak = f.start
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f.peak = max(f.peak, rssKiB(pid))
			}
		}
	}()
	var n, failed atomic.Int64
	var errOnce sync.Once
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w, c := range cs {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				err := callCheck(context.Background(), c, "discover_resources",
					map[string]any{"text": fmt.Sprintf("weather forecast %d %d", w, i), "page_size": 10})
				n.Add(1)
				if err != nil {
					failed.Add(1)
					errOnce.Do(func() { f.firstErr = err.Error()[:min(len(err.Error()), 200)] })
				}
			}
		})
	}
	wg.Wait()
	close(done)
	<-sampled
	f.final = rssKiB(pid)
	f.peak = max(f.peak, f.final)
	f.searches, f.errors = int(n.Load()), int(failed.Load())
	return f, nil
}

// serveHostileRegistry serves POST /search on loopback: entries results,
// each with a description of desc bytes, under new URNs in every answer
// unless fixed.
func serveHostileRegistry(entries, desc int, fixed bool) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	long := strings.Repeat("forecast ", desc/9+1)[:desc]
	var answer atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		a := answer.Add(1)
		if fixed {
			a = 0
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"results":[`)
		for i := range entries {
			if i > 0 {
				_, _ = io.WriteString(w, ",")
			}
			fmt.Fprintf(w, `{"identifier":"urn:air:hostile.test:mcp:s%d-%d","displayName":"Server %d","type":"application/mcp-server-card+json","url":"https://hostile.test/%d.json","score":50,"description":"%s"}`,
				a, i, i, i, long)
		}
		_, _ = io.WriteString(w, `]}`)
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}
