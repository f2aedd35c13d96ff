package guard_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ardgate/ardgate/guard"
)

// The processes below one are found, one in a session of its own too, and
// KillProcs ends them; below a pid whose start time is not the one seen
// (given to another process since), none is found.
func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "setsid sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	root, ok := guard.Find(cmd.Process.Pid)
	if !ok {
		t.Fatal("the shell is not in /proc")
	}
	var below []guard.Proc
	for deadline := time.Now().Add(2 * time.Second); len(below) == 0; time.Sleep(10 * time.Millisecond) {
		if below = guard.Descendants(root); len(below) == 0 && time.Now().After(deadline) {
			t.Fatal("no process found below the shell")
		}
	}
	if guard.Descendants(guard.Proc{PID: root.PID, Start: root.Start + 1}) != nil {
		t.Error("processes found below a pid whose start time is not the one seen")
	}
	guard.KillProcs(below)
	for _, p := range below {
		for deadline := time.Now().Add(2 * time.Second); running(p); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d still runs after KillProcs", p.PID)
			}
		}
	}
}

// running tells whether p still runs as seen: not gone, not another
// process under its pid, not a zombie.
func running(p guard.Proc) bool {
	q, ok := guard.Find(p.PID)
	if !ok || q.Start != p.Start {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/stat")
	return err == nil && !strings.Contains(string(b[strings.LastIndexByte(string(b), ')'):]), ") Z ")
}
