package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ardgate/ardgate/registry"
)

// benchQueries are natural-language needs, as a model would phrase them.
var benchQueries = []string{
	"post a message to a slack channel", "query my postgres database", "search github issues",
	"get the weather forecast", "read and write local files", "control a web browser and take screenshots",
	"kubernetes pods and deployments", "send an email", "look up stock prices", "translate text",
	"search the web", "manage jira tickets", "store memories in a knowledge graph", "run sql on sqlite",
	"find places on a map", "convert units", "echo test tools", "cloud storage buckets", "notion pages", "vector search embeddings",
}

// searchBench measures index build time, heap and search latency at
// several catalog sizes made from the corpus.
func searchBench(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	corpus := fs.String("corpus", "testdata/search-quality/corpus.json", "ARD catalog to replicate")
	sizes := fs.String("sizes", "1000,10000,100000", "catalog sizes")
	rounds := fs.Int("rounds", 50, "passes over the query list per size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	base, _, err := registry.LoadCatalogFile(*corpus)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "search: %d base entries from %s, %d queries x %d rounds; %s\n",
		len(base), *corpus, len(benchQueries), *rounds, machine())
	fmt.Fprintf(out, "%8s  %10s  %10s  %9s  %9s  %9s  %9s\n", "entries", "build", "heap MiB", "p50", "p99", "max", "mean")
	for _, f := range strings.Split(*sizes, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil {
			return fmt.Errorf("size %q: %w", f, err)
		}
		entries := replicate(base, n)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		ix := registry.NewIndex("bench", entries)
		build := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		entries = nil

		var lat []time.Duration
		for range *rounds {
			for _, q := range benchQueries {
				t := time.Now()
				if _, err := ix.Search(registry.Query{Text: q, PageSize: 10}); err != nil {
					return err
				}
				lat = append(lat, time.Since(t))
			}
		}
		slices.Sort(lat)
		var sum time.Duration
		for _, d := range lat {
			sum += d
		}
		heap := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
		fmt.Fprintf(out, "%8d  %10s  %10.1f  %9s  %9s  %9s  %9s\n", ix.Len(), build.Round(time.Millisecond), heap,
			pct(lat, 50), pct(lat, 99), lat[len(lat)-1].Round(time.Microsecond), (sum / time.Duration(len(lat))).Round(time.Microsecond))
		runtime.KeepAlive(ix)
	}
	return nil
}

// machine describes where a run happened.
func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs, GOMAXPROCS=%d, %s", model, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
}

// replicate makes n entries from base: copies with distinct identifiers
// and a varied word, so the index sees n documents, not n duplicates.
func replicate(base []registry.Entry, n int) []registry.Entry {
	out := make([]registry.Entry, 0, n)
	for i := 0; len(out) < n; i++ {
		e := base[i%len(base)]
		if round := i / len(base); round > 0 {
			e.Identifier = fmt.Sprintf("%s-r%d", e.Identifier, round)
			e.DisplayName = fmt.Sprintf("%s %d", e.DisplayName, round)
			e.Tags = append(slices.Clip(e.Tags), fmt.Sprintf("batch%d", round%97))
		}
		out = append(out, e)
	}
	return out
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := min(len(sorted)-1, len(sorted)*p/100)
	return sorted[i].Round(time.Microsecond)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./testdata/bench search|proxy|registry|sessions|coldstart|soak|hostile-registry|unread [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "search":
		err = searchBench(os.Args[2:], os.Stdout)
	case "proxy":
		err = proxyBench(os.Args[2:], os.Stdout)
	case "registry":
		err = registryBench(os.Args[2:], os.Stdout)
	case "sessions":
		err = scaleBench(os.Args[2:], os.Stdout)
	case "coldstart":
		err = coldStartBench(os.Args[2:], os.Stdout)
	case "soak":
		err = soakBench(os.Args[2:], os.Stdout)
	case "unread":
		err = unreadBench(os.Args[2:], os.Stdout)
	case "relay":
		err = relay(os.Args[2:])
	case "hostile-registry":
		err = hostileRegistryBench(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown benchmark %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
