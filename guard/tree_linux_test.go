package guard_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/ardgate/ardgate/guard"

	"github.com/ardgate/ardgate/testdata/proctest"
)

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

// Terminate and Kill end a tree's whole process group, and again do no
// harm once it is gone.
func TestTreeEnds(t *testing.T) {
	tests := []struct {
		name string
		kill func(*guard.Tree)
	}{
		{"Kill", (*guard.Tree).Kill},
		{"Terminate", (*guard.Tree).Terminate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := (&guard.Stdio{}).Env(nil) // PATH only, so sh finds sleep
			cmd, err := guard.Command("sh", []string{"-c", "sleep 300 & sleep 300"}, env)
			if err != nil {
				t.Skip(err)
			}
			tree, err := guard.Start(cmd, guard.Rlimits{})
			if err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			waited := false
			t.Cleanup(func() {
				tree.Kill()
				if !waited {
					_ = cmd.Wait()
				}
			})

			// The grandchild (backgrounded sleep) and the second sleep (or sh
			// waiting for it) are in the group.
			waitFor(t, "two processes in the group", func() bool { return len(proctest.GroupMembers(pid)) >= 2 })

			tt.kill(tree)
			werr := cmd.Wait()
			waited = true
			var exit *exec.ExitError
			if !errors.As(werr, &exit) {
				t.Errorf("Wait = %v, want the child killed by a signal", werr)
			}
			waitFor(t, "the group to die", func() bool { return len(proctest.GroupMembers(pid)) == 0 })

			tt.kill(tree) // a group already gone is no harm
		})
	}
}

// A child outlives no gateway: killed with SIGKILL, the gateway's death
// sends its children SIGTERM (Linux's parent-death signal). A server busy
// with a call, or one that does not read stdin, outlived it.
func TestChildEndsWithTheGateway(t *testing.T) {
	if os.Getenv("ARDGATE_TEST_GATEWAY") == "1" {
		cmd, err := guard.Command("sleep", []string{"60"}, []string{"PATH=" + os.Getenv("PATH")})
		if err == nil {
			_, err = guard.Start(cmd, guard.Rlimits{})
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
