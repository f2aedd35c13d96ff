package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/config"
	"github.com/ardgate/ardgate/guard"
	"github.com/ardgate/ardgate/registry"
	"github.com/ardgate/ardgate/tools"
)

// The gateway's Go heap per session cannot be read exactly from outside its
// process (the figures /metrics exports include garbage not yet collected),
// so the sessions bench also runs an in-process twin: the gateway built as
// `ardgate serve --transport http` builds it, on loopback, driven by bare
// HTTP requests that keep nothing per session but its id (and, with the GET
// stream, the client's end of its socket): after a GC the live heap, stacks
// and goroutines grown per session are the gateway's, to within 0.5 KiB.

// inProcessGateway starts the gateway in this process with the config file
// at cfgPath and returns its /mcp URL.
func inProcessGateway(cfgPath string) (string, func(), error) {
	cfg, err := config.Load(config.Flags{Config: cfgPath, Transport: "http"}, nil)
	if err != nil {
		return "", nil, err
	}
	log := slog.New(slog.DiscardHandler)
	hc := (&guard.Dialer{AllowLocal: cfg.AllowLocalURLs}).Client()
	regs, err := registry.OpenAll(cfg.Registries, registry.OpenOptions{HTTP: hc, Log: log})
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	manager := attach.New(cfg, regs, hc, log, "bench")
	go manager.Run(ctx)
	gw := tools.New(manager, log, tools.Options{Version: "bench", MaxResultBytes: cfg.MaxResultBytes,
		Limits: guard.LimitsFrom(cfg.Limits)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		return "", nil, err
	}
	h := gw.NewHTTP(tools.HTTPOptionsFrom(cfg))
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = h.Shutdown(sctx)
		_ = srv.Shutdown(sctx)
		gw.Close()
		cancel()
	}
	return "http://" + ln.Addr().String() + "/mcp", stop, nil
}

// rawSession is an MCP session driven by bare HTTP requests.
type rawSession struct {
	hc   *http.Client
	url  string
	id   string
	next int
	get  net.Conn // the standalone GET stream, when open
}

const benchProtocol = "2025-11-25"

// openRaw initializes a session and lists its tools.
func openRaw(hc *http.Client, mcpURL string) (*rawSession, error) {
	s := &rawSession{hc: hc, url: mcpURL}
	if _, err := s.rpc("initialize", map[string]any{"protocolVersion": benchProtocol, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "bench", "version": "1"}}); err != nil {
		return nil, err
	}
	if s.id == "" {
		return nil, fmt.Errorf("initialize: no session id")
	}
	if _, err := s.rpc("notifications/initialized", nil); err != nil {
		return nil, err
	}
	if _, err := s.rpc("tools/list", map[string]any{}); err != nil {
		return nil, err
	}
	return s, nil
}

// rpc posts one request (or, without an id, a notification) and returns
// the result; a JSON-RPC error or a tool error is an error.
func (s *rawSession) rpc(method string, params any) (json.RawMessage, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	notification := strings.HasPrefix(method, "notifications/")
	if !notification {
		s.next++
		msg["id"] = s.next
	}
	body, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("MCP-Protocol-Version", benchProtocol)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, bytes.TrimSpace(data))
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.id = id
	}
	if notification {
		return nil, nil
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The reply is the last event; notifications come before it.
		var last []byte
		for line := range bytes.Lines(data) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				last = bytes.TrimSpace(d)
			}
		}
		data = last
	}
	var reply struct {
		Result json.RawMessage
		Error  *struct{ Message string }
	}
	if err := json.Unmarshal(data, &reply); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if reply.Error != nil {
		return nil, fmt.Errorf("%s: %s", method, reply.Error.Message)
	}
	var tool struct{ IsError bool }
	if json.Unmarshal(reply.Result, &tool) == nil && tool.IsError {
		return nil, fmt.Errorf("%s: %s", method, reply.Result)
	}
	return reply.Result, nil
}

func (s *rawSession) call(name string, args map[string]any) error {
	_, err := s.rpc("tools/call", map[string]any{"name": name, "arguments": args})
	return err
}

// listen opens the standalone GET stream on a connection of its own and
// leaves it open, unread: the client side holds a socket and nothing else.
func (s *rawSession) listen() error {
	u, err := url.Parse(s.url)
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n\r\n",
		u.Path, u.Host, s.id, benchProtocol)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	status, err := bufio.NewReaderSize(conn, 64).ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		conn.Close()
		return fmt.Errorf("GET stream: %q %v", strings.TrimSpace(status), err)
	}
	s.get = conn
	return nil
}

func (s *rawSession) close() {
	if s.get != nil {
		s.get.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil)
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("MCP-Protocol-Version", benchProtocol)
	if resp, err := s.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

// heapFigures are the in-process twin's growth per session.
type heapFigures struct {
	heapKiB, stackKiB, goroutines float64
	errors                        int
	firstErr                      string
}

// liveHeap collects garbage and returns the live heap and stack bytes and
// the goroutine count.
func liveHeap() (heap, stack uint64, goroutines int) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse, runtime.NumGoroutine()
}

// heapPerSession opens n sessions of case c on an in-process gateway and
// reports what each one holds once idle. With profiles set, the heap
// profiles before and with the sessions open, for `go tool pprof
// -diff_base`, and the goroutines are written to files named after it.
func heapPerSession(cfgPath string, c scaleCase, n, parallel int, profiles string) (heapFigures, error) {
	var f heapFigures
	mcpURL, stop, err := inProcessGateway(cfgPath)
	if err != nil {
		return f, err
	}
	defer stop()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: parallel, DisableCompression: true}}
	defer hc.CloseIdleConnections()
	warm, err := openRaw(hc, mcpURL) // first-use allocations are not per session
	if err != nil {
		return f, err
	}
	warm.close()
	time.Sleep(200 * time.Millisecond)
	baseHeap, baseStack, baseG := liveHeap()
	if profiles != "" {
		if err := writeProfile("heap", 0, profiles+".heap.base.pprof"); err != nil {
			return f, err
		}
	}
	var mu sync.Mutex
	var sessions []*rawSession
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s, err := openRaw(hc, mcpURL)
			if err == nil {
				_, err = c.drive(s.call)
			}
			if err == nil && c.listen {
				err = s.listen()
			}
			mu.Lock()
			defer mu.Unlock()
			if s != nil {
				sessions = append(sessions, s)
			}
			if err != nil {
				if f.errors++; f.firstErr == "" {
					f.firstErr = err.Error()
				}
			}
		})
	}
	wg.Wait()
	hc.CloseIdleConnections() // the client's pooled connections are not the sessions'
	time.Sleep(settle)
	heap, stack, g := liveHeap()
	if profiles != "" {
		if err := writeProfile("heap", 0, profiles+".heap.pprof"); err != nil {
			return f, err
		}
		if err := writeProfile("goroutine", 1, profiles+".goroutines.txt"); err != nil {
			return f, err
		}
	}
	per := func(v, base uint64) float64 {
		return (float64(v) - float64(base)) / 1024 / float64(max(len(sessions), 1))
	}
	f.heapKiB, f.stackKiB = per(heap, baseHeap), per(stack, baseStack)
	f.goroutines = float64(g-baseG) / float64(max(len(sessions), 1))
	for _, s := range sessions {
		s.close()
	}
	if profiles != "" {
		// What outlives the sessions: after the gateway's pooled
		// connections to the upstream, nothing should.
		time.Sleep(2 * time.Second)
		if err := writeProfile("goroutine", 1, profiles+".goroutines.after.txt"); err != nil {
			return f, err
		}
	}
	return f, nil
}

func writeProfile(name string, debug int, path string) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(file, debug); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}
