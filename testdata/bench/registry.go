package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/registry/ardserver"
)

// registryBench serves a catalog with the registry server over loopback
// HTTP and drives POST /search from concurrent workers.
func registryBench(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	corpus := fs.String("corpus", "testdata/search-quality/corpus.json", "ARD catalog to replicate")
	size := fs.Int("entries", 10000, "catalog size")
	workers := fs.Int("workers", 32, "concurrent clients")
	dur := fs.Duration("duration", 5*time.Second, "how long to drive it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	base, _, err := registry.LoadCatalogFile(*corpus)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ardgate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	catalog := filepath.Join(dir, "catalog.json")
	data, _ := json.Marshal(registry.Catalog{SpecVersion: "1.0", Entries: replicate(base, *size)})
	if err := os.WriteFile(catalog, data, 0o600); err != nil {
		return err
	}
	srv := &ardserver.Server{Catalogs: []string{catalog}}
	if err := srv.Load(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	url := "http://" + ln.Addr().String() + "/search"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *workers}}

	var mu sync.Mutex
	var lat []time.Duration
	var failures int
	var wg sync.WaitGroup
	start := time.Now()
	for w := range *workers {
		wg.Go(func() {
			var local []time.Duration
			bad := 0
			for i := w; time.Since(start) < *dur; i++ {
				body := fmt.Sprintf(`{"query":{"text":%q},"pageSize":10}`, benchQueries[i%len(benchQueries)])
				t := time.Now()
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusOK {
					bad++
					continue
				}
				local = append(local, time.Since(t))
			}
			mu.Lock()
			lat, failures = append(lat, local...), failures+bad
			mu.Unlock()
		})
	}
	wg.Wait()
	wall := time.Since(start)
	slices.Sort(lat)
	fmt.Fprintf(out, "registry serve: %d entries, %d workers on loopback for %s; %s\n", *size, *workers, *dur, machine())
	fmt.Fprintf(out, "requests %d, errors %d, %.0f req/s, p50 %s, p99 %s, max %s\n",
		len(lat), failures, float64(len(lat))/wall.Seconds(), pct(lat, 50), pct(lat, 99), lat[len(lat)-1].Round(time.Microsecond))
	return nil
}
