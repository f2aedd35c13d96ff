package guard_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ardgate/ardgate/guard"

	"github.com/ardgate/ardgate/testdata/proctest"
)

// wantRefusal asserts err is a *guard.Refusal by rule, wrapping
// guard.ErrRefused, and mentions each of mention.
func wantRefusal(t *testing.T, err error, rule string, mention ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want a refusal by %s", rule)
	}
	var r *guard.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("error %v (%T) is not a *guard.Refusal", err, err)
	}
	if r.Rule != rule {
		t.Errorf("refused by %q, want %q (%v)", r.Rule, rule, err)
	}
	if !errors.Is(err, guard.ErrRefused) {
		t.Errorf("errors.Is(%v, ErrRefused) is false", err)
	}
	for _, m := range mention {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
}

func TestStdioCheckRegistry(t *testing.T) {
	p := &guard.Stdio{AllowFrom: []string{"builtin", "team"}}
	tests := []struct {
		id string
		ok bool
	}{
		{"builtin", true},
		{"team", true},
		{"public", false},
		{"", false},
		{"Builtin", false},
		{"team ", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := p.CheckRegistry(tt.id)
			if tt.ok {
				if err != nil {
					t.Errorf("CheckRegistry(%q) = %v", tt.id, err)
				}
				return
			}
			wantRefusal(t, err, "stdio.allow_from", strconv.Quote(tt.id))
		})
	}
	t.Run("empty policy refuses all", func(t *testing.T) {
		// Saying so: it read "only [] may".
		wantRefusal(t, (&guard.Stdio{}).CheckRegistry("builtin"), "stdio.allow_from", "stdio.allow_from lets no registry")
	})
}

func TestStdioCheckLauncher(t *testing.T) {
	p := &guard.Stdio{Launchers: []string{"npx", "uvx"}}
	tests := []struct {
		launcher string
		ok       bool
	}{
		{"npx", true},
		{"uvx", true},
		{"bash", false},
		{"sh", false},
		{"/usr/bin/npx", false},
		{"npx ", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.launcher, func(t *testing.T) {
			err := p.CheckLauncher(tt.launcher)
			if tt.ok {
				if err != nil {
					t.Errorf("CheckLauncher(%q) = %v", tt.launcher, err)
				}
				return
			}
			wantRefusal(t, err, "stdio.launchers", strconv.Quote(tt.launcher))
		})
	}
	t.Run("empty policy refuses all", func(t *testing.T) {
		wantRefusal(t, (&guard.Stdio{}).CheckLauncher("npx"), "stdio.launchers")
	})
}

func TestCheckPackage(t *testing.T) {
	tests := []struct {
		typ, id, version string
		ok               bool
	}{
		// Real names and versions.
		{"npm", "@modelcontextprotocol/server-everything", "", true},
		{"npm", "@modelcontextprotocol/server-everything", "2026.8.31", true},
		{"npm", "@modelcontextprotocol/server-filesystem", "1.0.0-beta.1", true},
		{"npm", "mcp-remote", "0.1.18", true},
		{"npm", "left-pad", "1.0.0+build.5", true},
		{"npm", "lodash.merge", "latest", true},
		{"npm", "@a/b", "", true},
		{"npm", "x_y~z", "", true},
		{"pypi", "mcp-server-fetch", "", true},
		{"pypi", "mcp-server-fetch", "2026.8.31", true},
		{"pypi", "mcp_server_git", "1.0.0rc1", true},
		{"pypi", "Django", "1!2.0.post1", true},
		{"pypi", "zope.interface", "6.0+local.1", true},
		{"pypi", "a", "1", true},
		// Option smuggling.
		{"npm", "-e", "", false},
		{"npm", "--yes", "", false},
		{"npm", "-c", "", false},
		{"npm", "--call=id", "", false},
		{"pypi", "-e", "", false},
		{"pypi", "--with", "", false},
		{"pypi", "--from=evil", "", false},
		{"npm", "good", "--foo", false},
		{"npm", "good", "-1", false},
		{"pypi", "good", "--foo", false},
		{"pypi", "good", "-e", false},
		// Paths, specs and scopes that are not package names.
		{"npm", "@scope/../x", "", false},
		{"npm", "../x", "", false},
		{"npm", "./local", "", false},
		{"npm", "/abs/path", "", false},
		{"npm", "@scope/", "", false},
		{"npm", "@/x", "", false},
		{"npm", "@scope/a/b", "", false},
		{"npm", "github:user/repo", "", false},
		{"npm", "git+https://x.example.com/r.git", "", false},
		{"npm", "foo@1.0.0", "", false},
		// Archive files, which npx and uvx install from disk.
		{"npm", "evil.tgz", "", false},
		{"npm", "evil.TAR", "", false},
		{"npm", "@scope/evil.tar.gz", "", false},
		{"npm", "good", "evil.tgz", false},
		{"pypi", "evil.whl", "", false},
		{"pypi", "evil.tar.gz", "", false},
		{"pypi", "evil.zip", "", false},
		{"pypi", "good", "1.0.tar.gz", false},
		{"pypi", "evil.tar.zst", "", false},
		{"pypi", "evil.txz", "", false},
		{"pypi", "evil.tar.lzma", "", false},
		{"npm", "tgz", "", true},
		{"pypi", "zipp", "", true},
		{"npm", "socket.io", "4.7.5", true},
		{"npm", "JSONStream", "", true}, // legacy upper-case names exist
		{"npm", "_private", "", false},
		{"npm", "", "", false},
		{"npm", strings.Repeat("a", 215), "", false},
		{"pypi", "pkg==1.0", "", false},
		{"pypi", "pkg[extra]", "", false},
		{"pypi", "git+https://x.example.com/r.git", "", false},
		{"pypi", ".hidden", "", false},
		{"pypi", "trailing-", "", false},
		{"pypi", "", "", false},
		{"pypi", strings.Repeat("a", 101), "", false},
		// Spaces and shell metacharacters.
		{"npm", "a b", "", false},
		{"npm", "a;id", "", false},
		{"npm", "a|id", "", false},
		{"npm", "a&&id", "", false},
		{"npm", "$(id)", "", false},
		{"npm", "`id`", "", false},
		{"npm", "a\nb", "", false},
		{"npm", "a>b", "", false},
		{"pypi", "a b", "", false},
		{"pypi", "a;id", "", false},
		{"pypi", "$(id)", "", false},
		{"npm", "good", "1.0 || 2", false},
		{"npm", "good", "1.0;id", false},
		{"npm", "good", "^1.0.0", false},
		{"npm", "good", "1.0.0\n", false},
		{"pypi", "good", ">=1.0", false},
		{"pypi", "good", "1.0,<2", false},
		{"pypi", "good", "1.0 ; id", false},
		{"npm", "good", strings.Repeat("1", 65), false},
		// Registry types that cannot be launched.
		{"oci", "docker.io/library/alpine", "3", false},
		{"NPM", "left-pad", "", false},
		{"", "left-pad", "", false},
		{"nuget", "Some.Package", "", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%q@%q", tt.typ, tt.id, tt.version), func(t *testing.T) {
			err := guard.CheckPackage(tt.typ, tt.id, tt.version)
			if tt.ok {
				if err != nil {
					t.Errorf("CheckPackage = %v, want ok", err)
				}
				return
			}
			wantRefusal(t, err, "stdio.package")
		})
	}
}

func TestStdioEnv(t *testing.T) {
	gateway := map[string]string{
		"PATH":                  "/usr/local/bin:/usr/bin",
		"HOME":                  "/home/gw",
		"LANG":                  "C.UTF-8",
		"EMPTY":                 "",
		"AWS_SECRET_ACCESS_KEY": "do-not-leak",
		"ARDGATE_AUTH_TOKEN":    "do-not-leak-either",
		"NODE_OPTIONS":          "--require /tmp/evil.js",
	}
	tests := []struct {
		name    string
		passEnv []string
		extra   []string
		noPath  bool
		want    []string
	}{
		{"PATH only", nil, nil, false, []string{"PATH=/usr/local/bin:/usr/bin"}},
		{"pass env", []string{"HOME", "LANG"}, nil, false, []string{"PATH=/usr/local/bin:/usr/bin", "HOME=/home/gw", "LANG=C.UTF-8"}},
		{"extra", nil, []string{"HOME"}, false, []string{"PATH=/usr/local/bin:/usr/bin", "HOME=/home/gw"}},
		{"missing names are skipped", []string{"NOPE", "HOME"}, []string{"ALSO_NOPE"}, false, []string{"PATH=/usr/local/bin:/usr/bin", "HOME=/home/gw"}},
		{"set but empty is passed", []string{"EMPTY"}, nil, false, []string{"PATH=/usr/local/bin:/usr/bin", "EMPTY="}},
		{"no duplicates", []string{"HOME", "PATH", "HOME"}, []string{"LANG", "HOME", "PATH", "LANG"}, false,
			[]string{"PATH=/usr/local/bin:/usr/bin", "HOME=/home/gw", "LANG=C.UTF-8"}},
		{"no PATH in gateway", []string{"HOME"}, nil, true, []string{"HOME=/home/gw"}},
		{"names with = are not variables", []string{"HOME=/evil"}, []string{"PATH=/evil", "=x"}, false, []string{"PATH=/usr/local/bin:/usr/bin"}},
		{"nothing at all", nil, nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var looked []string
			lookup := func(name string) (string, bool) {
				mu.Lock()
				looked = append(looked, name)
				mu.Unlock()
				if tt.noPath && name == "PATH" {
					return "", false
				}
				v, ok := gateway[name]
				return v, ok
			}
			p := &guard.Stdio{PassEnv: tt.passEnv, LookupEnv: lookup}
			got := p.Env(tt.extra)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Env = %q, want %q", got, tt.want)
			}
			asked := slices.Concat([]string{"PATH"}, tt.passEnv, tt.extra)
			for _, kv := range got {
				name, value, _ := strings.Cut(kv, "=")
				if !slices.Contains(asked, name) {
					t.Errorf("Env leaked %q, which nobody asked for", kv)
				}
				if gateway[name] != value {
					t.Errorf("Env has %q, gateway value is %q", kv, gateway[name])
				}
				if strings.Contains(value, "do-not-leak") {
					t.Errorf("Env leaked a secret: %q", kv)
				}
			}
			for _, name := range looked {
				if !slices.Contains(asked, name) {
					t.Errorf("Env looked up %q, which nobody asked for", name)
				}
			}
			if uniq := slices.Compact(slices.Sorted(slices.Values(looked))); len(uniq) != len(looked) {
				t.Errorf("Env looked up a name twice: %q", looked)
			}
		})
	}

	t.Run("real environment by default", func(t *testing.T) {
		t.Setenv("ARDGATE_GUARD_TEST_PASS", "yes")
		t.Setenv("ARDGATE_GUARD_TEST_SECRET", "no")
		got := (&guard.Stdio{PassEnv: []string{"ARDGATE_GUARD_TEST_PASS"}}).Env(nil)
		if !slices.Contains(got, "ARDGATE_GUARD_TEST_PASS=yes") {
			t.Errorf("Env = %q, want the passed variable", got)
		}
		if path, ok := os.LookupEnv("PATH"); ok && !slices.Contains(got, "PATH="+path) {
			t.Errorf("Env = %q, want PATH", got)
		}
		for _, kv := range got {
			if strings.HasPrefix(kv, "ARDGATE_GUARD_TEST_SECRET=") {
				t.Errorf("Env leaked %q", kv)
			}
		}
		if len(got) > 2 {
			t.Errorf("Env = %q, want PATH and one variable", got)
		}
	})
}

func TestCommand(t *testing.T) {
	for _, prog := range []string{"sh", "env", "echo", "sleep"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s not found: %v", prog, err)
		}
	}
	tests := []struct {
		name    string
		program string
		args    []string
		env     []string
		wantEnv []string
	}{
		{"nil env is empty, not inherited", "env", nil, nil, []string{}},
		{"empty env", "env", nil, []string{}, []string{}},
		{"given env", "env", nil, []string{"A=1", "PATH=/bin"}, []string{"A=1", "PATH=/bin"}},
		{"args are not shell words", "echo", []string{"$HOME; echo pwned", "`id`", "a b", "*"}, nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, err := guard.Command(tt.program, tt.args, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if cmd.Env == nil || !slices.Equal(cmd.Env, tt.wantEnv) {
				t.Errorf("Env = %#v, want %#v (non-nil)", cmd.Env, tt.wantEnv)
			}
			if cmd.SysProcAttr == nil || !cmd.SysProcAttr.Setpgid {
				t.Errorf("SysProcAttr = %+v, want Setpgid", cmd.SysProcAttr)
			}
			if !filepath.IsAbs(cmd.Path) || filepath.Base(cmd.Path) != tt.program {
				t.Errorf("Path = %q, want an absolute path to %s", cmd.Path, tt.program)
			}
			if !slices.Equal(cmd.Args[1:], tt.args) || len(cmd.Args) != len(tt.args)+1 {
				t.Errorf("Args = %q, want program then %q", cmd.Args, tt.args)
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			switch tt.program {
			case "env":
				// env prints exactly the child's environment.
				var got []string
				if s := strings.TrimSuffix(string(out), "\n"); s != "" {
					got = strings.Split(s, "\n")
				}
				if !slices.Equal(got, tt.wantEnv) && !(len(got) == 0 && len(tt.wantEnv) == 0) {
					t.Errorf("child environment = %q, want %q", got, tt.wantEnv)
				}
			case "echo":
				if want := strings.Join(tt.args, " ") + "\n"; string(out) != want {
					t.Errorf("echo printed %q, want %q (no shell expansion)", out, want)
				}
			}
		})
	}

	t.Run("own process group", func(t *testing.T) {
		cmd, err := guard.Command("sleep", []string{"30"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		t.Cleanup(func() { _ = guard.KillGroup(pid); _ = cmd.Wait() })
		pgid, err := syscall.Getpgid(pid)
		if err != nil {
			t.Fatal(err)
		}
		if pgid != pid || pgid == syscall.Getpgrp() {
			t.Errorf("child pgid = %d, want its own pid %d (test's group %d)", pgid, pid, syscall.Getpgrp())
		}
	})

	t.Run("unknown program", func(t *testing.T) {
		if _, err := guard.Command("ardgate-no-such-program-xyz", nil, nil); err == nil {
			t.Error("no error for a program that does not exist")
		}
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestKillGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	tests := []struct {
		name string
		kill func(pid int) error
	}{
		{"KillGroup", guard.KillGroup},
		{"SignalGroup SIGTERM", func(pid int) error { return guard.SignalGroup(pid, syscall.SIGTERM) }},
		{"SignalGroup SIGKILL", func(pid int) error { return guard.SignalGroup(pid, syscall.SIGKILL) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := (&guard.Stdio{}).Env(nil) // PATH only, so sh finds sleep
			cmd, err := guard.Command("sh", []string{"-c", "sleep 300 & sleep 300"}, env)
			if err != nil {
				t.Skip(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			waited := false
			t.Cleanup(func() {
				_ = guard.KillGroup(pid)
				if !waited {
					_ = cmd.Wait()
				}
			})

			// The grandchild (backgrounded sleep) and the second sleep (or sh
			// waiting for it) are in the group.
			waitFor(t, "two processes in the group", func() bool { return len(proctest.GroupMembers(pid)) >= 2 })

			if err := tt.kill(pid); err != nil {
				t.Fatalf("kill: %v", err)
			}
			werr := cmd.Wait()
			waited = true
			var exit *exec.ExitError
			if !errors.As(werr, &exit) {
				t.Errorf("Wait = %v, want the child killed by a signal", werr)
			}
			waitFor(t, "the group to die", func() bool { return len(proctest.GroupMembers(pid)) == 0 })

			// A group that is already gone is not an error.
			if err := tt.kill(pid); err != nil {
				t.Errorf("second kill of a dead group = %v, want nil", err)
			}
		})
	}
}

// TestSignalGroupNonPositive checks that pid 0 and negative pids do not
// turn into kill(0) (the caller's own group) or kill(-1) (everything).
func TestSignalGroupNonPositive(t *testing.T) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGWINCH) // harmless if the rule breaks
	defer signal.Stop(ch)
	for _, pid := range []int{0, -1, -os.Getpid()} {
		if err := guard.SignalGroup(pid, syscall.SIGWINCH); err != nil {
			t.Errorf("SignalGroup(%d) = %v, want nil", pid, err)
		}
	}
	select {
	case s := <-ch:
		t.Errorf("the test process got %v", s)
	case <-time.After(200 * time.Millisecond):
	}
}

// A child outlives no gateway: killed with SIGKILL, the gateway's death
// sends its children SIGTERM (Linux's parent-death signal). A server busy
// with a call, or one that does not read stdin, outlived it.
func TestChildEndsWithTheGateway(t *testing.T) {
	if os.Getenv("ARDGATE_TEST_GATEWAY") == "1" {
		cmd, err := guard.Command("sleep", []string{"60"}, []string{"PATH=" + os.Getenv("PATH")})
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			fmt.Println(-1, err)
			os.Exit(2)
		}
		fmt.Println(cmd.Process.Pid)
		time.Sleep(time.Minute) // until killed
		return
	}
	gateway := exec.Command(os.Args[0], "-test.run=^TestChildEndsWithTheGateway$")
	gateway.Env = append(os.Environ(), "ARDGATE_TEST_GATEWAY=1")
	out, err := gateway.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := gateway.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil || pid <= 0 {
		_ = gateway.Process.Kill()
		_ = gateway.Wait()
		t.Fatalf("the stand-in gateway started no child: %d %v", pid, err)
	}
	_ = gateway.Process.Kill()
	_ = gateway.Wait()
	for deadline := time.Now().Add(5 * time.Second); proctest.Alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the child outlived the gateway killed with SIGKILL")
		}
	}
}
