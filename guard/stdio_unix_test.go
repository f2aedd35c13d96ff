//go:build unix

package guard_test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ardgate/ardgate/guard"
)

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
		tree, err := guard.Start(cmd, guard.Rlimits{})
		if err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		t.Cleanup(func() { tree.Kill(); _ = cmd.Wait() })
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
