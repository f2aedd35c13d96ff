//go:build linux

package winesmoke

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// wait bounds each step: Wine starts a process in about a second, more on
// a loaded machine.
const wait = 2 * time.Minute

func TestWindowsBuildUnderWine(t *testing.T) {
	wine := findWine(t)
	dir := t.TempDir()
	gateway := build(t, dir, "ardgate.exe", "github.com/ardgate/ardgate")
	// A name of its own, to find its processes (and only them) by.
	marker := fmt.Sprintf("mcpfixture-%d", time.Now().UnixNano())
	fixture := build(t, dir, marker+".exe", "github.com/ardgate/ardgate/testdata/mcpfixture/cmd/mcpfixture")
	nodeDir := fakeNode(t, filepath.Join(dir, marker+"-nodejs"), fixture)
	tool := filepath.Join(dir, "tool.cmd") // leaves a file saying it ran, which it must not
	if err := os.WriteFile(tool, []byte("@echo ran> "+windowsPath(tool+"-ran")+"\r\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	// What no batch file may leave: a file it made, or one made by a
	// command a registry's argument spelled to cmd.exe.
	ran := []string{tool + "-ran", filepath.Join(nodeDir, "npx.cmd-ran"), filepath.Join(dir, "pwned")}
	hostile := hostileArgs(ran[2])
	config := filepath.Join(dir, "ardgate.json")
	writeConfig(t, config, fixture, tool, hostile)
	t.Cleanup(func() {
		for _, f := range ran {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("a batch file ran: %s is there", f)
			}
		}
	})
	t.Setenv("WINEPATH", windowsPath(nodeDir)) // before Wine's PATH: its "node" is found

	t.Run("version", func(t *testing.T) {
		cmd := exec.Command(wine, gateway, "version")
		cmd.Env = wineEnv()
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), "ardgate ") {
			t.Fatalf("ardgate.exe version: %v: %q", err, out)
		}
	})

	t.Run("session", func(t *testing.T) {
		s := start(t, wine, gateway, config)
		s.discoverAndCall(marker, hostile)
		if err := s.in.Close(); err != nil { // the session ends with stdin
			t.Fatal(err)
		}
		s.waitExit()
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("ardgate.exe exited %d at the end of stdin, want 0\n%s", code, s.stderr)
		}
		waitGone(t, marker, "the session ended")
	})

	t.Run("gateway killed", func(t *testing.T) {
		s := start(t, wine, gateway, config)
		s.discoverAndCall(marker, hostile)
		if err := s.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		s.waitExit()
		waitGone(t, marker, "ardgate.exe was killed")
	})
}

// findWine is Wine's wine64, when it can run Go programs: a WINEPREFIX
// with the bcryptprimitives shim.
func findWine(t *testing.T) string {
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + " (.ci/run shows how to set it up)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if runtime.GOARCH != "amd64" {
		missing("the smoke runs Windows amd64 programs under Wine on linux/amd64, not linux/%s", runtime.GOARCH)
	}
	wine, err := exec.LookPath("wine64")
	if err != nil {
		wine, err = exec.LookPath("/usr/lib/wine/wine64") // Debian's, off PATH
	}
	if err != nil {
		missing("no wine64: %v", err)
	}
	prefix := os.Getenv("WINEPREFIX")
	if prefix == "" {
		missing("WINEPREFIX is not set")
	}
	if _, err := os.Stat(filepath.Join(prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll")); err != nil {
		missing("the prefix has no bcryptprimitives.dll, without which Go programs do not start under Wine 8: %v", err)
	}
	return wine
}

// wineEnv is the environment Wine runs in: the test's, with Wine's own
// diagnostics off (they go to stderr, and one stub's "fixme" line is not
// the gateway's).
func wineEnv() []string { return append(os.Environ(), "WINEDEBUG=-all") }

// build builds pkg for windows/amd64 as dir/name.
func build(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// windowsPath is path as Wine's drive Z: shows it.
func windowsPath(path string) string { return `Z:` + strings.ReplaceAll(path, "/", `\`) }

// fakeNode lays out dir as Node.js installs itself on Windows: node.exe
// (the fixture, which takes any arguments), npm's npx-cli.js beside it, and
// an npx.cmd, which must not run: it leaves a file saying it did.
func fakeNode(t *testing.T, dir, fixture string) string {
	t.Helper()
	b, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(dir, "node_modules", "npm", "bin", "npx-cli.js")
	if err := os.MkdirAll(filepath.Dir(cli), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		filepath.Join(dir, "node.exe"): b,
		cli:                            []byte("// npm's npx, which the fake node.exe does not read\n"),
		filepath.Join(dir, "npx.cmd"):  []byte("@echo ran> " + windowsPath(filepath.Join(dir, "npx.cmd-ran")) + "\r\n"),
	} {
		if err := os.WriteFile(name, content, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// hostileArgs are a registry's arguments with characters cmd.exe would
// act on: npx must pass them to node as they are; a batch file is refused
// them. The first, as Go quotes it for a command line, ends cmd.exe's
// quoting at its \" and runs a command that makes the file pwned.
func hostileArgs(pwned string) []string {
	return []string{`x"&echo pwned>` + windowsPath(pwned) + `&rem "`, `%PATH%`, `^x`, `"quoted" two`, `a|b`, `!x!`}
}

// writeConfig pins three servers, given time to start under Wine: the
// fixture; npx, with hostile arguments (the fake node.exe running the
// fixture); and a batch file with a hostile argument, which the gateway
// must refuse to start.
func writeConfig(t *testing.T, path, fixture, batch string, hostile []string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"registries":       []any{map[string]any{"id": "builtin", "kind": "catalog"}},
		"pinned_list_wait": "2m",
		"start_timeout":    "2m",
		"servers": []any{
			map[string]any{"name": "fixture", "command": windowsPath(fixture), "args": []string{"--transport=stdio"}},
			map[string]any{"name": "vianpx", "command": "npx", "args": slices.Concat([]string{"-y", "--", "@scope/pkg@1.0.0"}, hostile)},
			map[string]any{"name": "batch", "command": windowsPath(batch), "args": []string{hostile[0]}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// session is ardgate.exe under Wine, spoken to over its stdio.
type session struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan []byte
	exited chan struct{}
	stderr *syncBuffer
	id     int
}

// secret is in the gateway's environment, and must not be in a server's.
const secret = "ARDGATE_SMOKE_SECRET"

func start(t *testing.T, wine, gateway, config string) *session {
	t.Helper()
	s := &session{t: t, lines: make(chan []byte, 64), exited: make(chan struct{}), stderr: &syncBuffer{}}
	s.cmd = exec.Command(wine, gateway, "serve", "--config", windowsPath(config))
	s.cmd.Env = append(wineEnv(), secret+"=do-not-pass")
	s.cmd.Stderr = s.stderr
	s.cmd.WaitDelay = 10 * time.Second // a process left holding its stderr must not stall the test
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.lines)
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				s.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { _ = s.cmd.Wait(); close(s.exited) }() // after stdout is read through
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			t.Logf("ardgate.exe's stderr:\n%s", s.stderr)
		}
	})
	s.request("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "winesmoke", "version": "1"}})
	s.write(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return s
}

func (s *session) write(msg any) {
	s.t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatalf("write to ardgate.exe: %v", err)
	}
}

// request sends a request and returns its result, passing over the
// notifications and requests that come meanwhile.
func (s *session) request(method string, params any) json.RawMessage {
	s.t.Helper()
	s.id++
	s.write(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params})
	deadline := time.After(wait)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("%s: ardgate.exe closed its stdout", method)
			}
			var msg struct {
				ID     *int
				Method string
				Result json.RawMessage
				Error  json.RawMessage
			}
			if err := json.Unmarshal(line, &msg); err != nil {
				s.t.Fatalf("%s: not JSON-RPC: %q", method, line)
			}
			if msg.Method != "" || msg.ID == nil || *msg.ID != s.id {
				continue
			}
			if msg.Error != nil {
				s.t.Fatalf("%s: %s", method, msg.Error)
			}
			return msg.Result
		case <-deadline:
			s.t.Fatalf("%s: no answer in %v", method, wait)
		}
	}
}

type result struct {
	Content []struct {
		Type, Text string
	}
	StructuredContent json.RawMessage
	IsError           bool
}

// call calls a tool that must succeed.
func (s *session) call(name string, args any) result {
	s.t.Helper()
	var r result
	if err := json.Unmarshal(s.request("tools/call", map[string]any{"name": name, "arguments": args}), &r); err != nil {
		s.t.Fatal(err)
	}
	if r.IsError || len(r.Content) == 0 && r.StructuredContent == nil {
		s.t.Fatalf("%s: %+v", name, r)
	}
	return r
}

// discoverAndCall discovers in the builtin catalog, then calls the pinned
// fixture: echo; env, which must hold what Windows programs need and no
// more of the gateway's environment; spawn_child, whose child must be in
// the fixture's tree. The fixture's processes, two, then run.
func (s *session) discoverAndCall(marker string, hostile []string) {
	s.t.Helper()
	var found struct {
		Count   int
		Results []struct{ URN string }
	}
	if err := json.Unmarshal(s.call("discover_resources", map[string]any{"text": "echo test tools"}).StructuredContent, &found); err != nil || found.Count == 0 ||
		!slices.ContainsFunc(found.Results, func(r struct{ URN string }) bool { return strings.Contains(r.URN, ":mcp:everything") }) {
		s.t.Fatalf("discover_resources found %+v (%v), want the builtin catalog's server-everything", found, err)
	}
	echo := s.tool("fixture", "echo")
	if r := s.call(echo, map[string]any{"message": "hello from Wine"}); r.Content[0].Text != "hello from Wine" {
		s.t.Errorf("%s = %+v", echo, r)
	}
	var env struct {
		Env  []string
		Args []string
	}
	if err := json.Unmarshal(s.call(s.tool("fixture", "env"), map[string]any{}).StructuredContent, &env); err != nil {
		s.t.Fatal(err)
	}
	for _, want := range []string{"SystemRoot=", "PATH=", "TEMP="} {
		if !slices.ContainsFunc(env.Env, func(kv string) bool { return strings.HasPrefix(strings.ToUpper(kv), strings.ToUpper(want)) }) {
			s.t.Errorf("the server's environment has no %s: %q", want, env.Env)
		}
	}
	if slices.ContainsFunc(env.Env, func(kv string) bool { return strings.HasPrefix(strings.ToUpper(kv), secret) }) {
		s.t.Errorf("the gateway's %s reached the server: %q", secret, env.Env)
	}
	s.call(s.tool("fixture", "spawn_child"), map[string]any{})
	s.npxAndBatch(hostile)
	if n := len(processes(marker)); n != 3 {
		s.t.Fatalf("%d processes of the fixture run, want 3 (it, its child, and npx's node)", n)
	}
}

// npxAndBatch checks that npx ran as node on npx-cli.js, its arguments
// whole, and that the batch file was refused its argument. That no batch
// file ran is checked at the end of the test.
func (s *session) npxAndBatch(hostile []string) {
	s.t.Helper()
	var npx struct{ Args []string }
	if err := json.Unmarshal(s.call(s.tool("vianpx", "env"), map[string]any{}).StructuredContent, &npx); err != nil {
		s.t.Fatal(err)
	}
	want := slices.Concat([]string{`node_modules\npm\bin\npx-cli.js`, "-y", "--", "@scope/pkg@1.0.0"}, hostile)
	if len(npx.Args) != len(want)+1 || !strings.HasSuffix(strings.ToLower(npx.Args[0]), `\node.exe`) ||
		!strings.HasSuffix(npx.Args[1], want[0]) || !slices.Equal(npx.Args[2:], want[1:]) {
		s.t.Errorf("npx ran as %q, want node.exe on ...\\%s with %q", npx.Args, want[0], want[1:])
	}
	var list struct{ Attachments []attachment }
	if err := json.Unmarshal(s.call("list_attached_resources", map[string]any{}).StructuredContent, &list); err != nil {
		s.t.Fatal(err)
	}
	i := slices.IndexFunc(list.Attachments, func(a attachment) bool { return a.Name == "batch" })
	if i < 0 || list.Attachments[i].Status != "down" || !strings.Contains(list.Attachments[i].WhyDown, "batch file") {
		s.t.Errorf("the batch file given %q: %+v, want it down, refused", hostile[0], list.Attachments)
	}
}

// attachment is an entry of list_attached_resources.
type attachment struct {
	Name, Status string
	WhyDown      string `json:"why_down"`
}

// tool is the name the session lists a pinned server's tool under.
func (s *session) tool(server, tool string) string {
	s.t.Helper()
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(s.request("tools/list", map[string]any{}), &list); err != nil {
		s.t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if strings.HasSuffix(tl.Name, "_"+server+"__"+tool) {
			return tl.Name
		}
	}
	s.t.Fatalf("no tool %s of the pinned %s in %+v", tool, server, list.Tools)
	return ""
}

func (s *session) waitExit() {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(wait):
		s.t.Fatalf("ardgate.exe did not exit in %v", wait)
	}
}

// processes are the pids of the (Linux) processes Wine runs the fixture
// in, told by the marker in their command lines.
func processes(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) && !zombie(e.Name()) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func zombie(pid string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	i := bytes.LastIndexByte(b, ')')
	return err != nil || i < 0 || bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
}

// waitGone waits for the fixture's processes to end, and kills what is
// left when they do not.
func waitGone(t *testing.T, marker, after string) {
	t.Helper()
	for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		left := processes(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				var n int
				if _, err := fmt.Sscan(pid, &n); err == nil {
					_ = syscall.Kill(n, syscall.SIGKILL)
				}
			}
			t.Fatalf("the fixture's processes %v outlived %v by %v", left, after, wait)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
