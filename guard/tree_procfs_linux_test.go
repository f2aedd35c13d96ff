package guard

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The processes below one are found, one in a session of its own too, and
// killProcs ends them; below a pid whose start time is not the one seen
// (given to another process since), none is found.
func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "setsid sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	root, ok := findProc(cmd.Process.Pid)
	if !ok {
		t.Fatal("the shell is not in /proc")
	}
	var below []proc
	for deadline := time.Now().Add(2 * time.Second); len(below) == 0; time.Sleep(10 * time.Millisecond) {
		if below = descendants(root); len(below) == 0 && time.Now().After(deadline) {
			t.Fatal("no process found below the shell")
		}
	}
	if descendants(proc{pid: root.pid, start: root.start + 1}) != nil {
		t.Error("processes found below a pid whose start time is not the one seen")
	}
	killProcs(below)
	for _, p := range below {
		for deadline := time.Now().Add(2 * time.Second); running(p); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d still runs after killProcs", p.pid)
			}
		}
	}
}

// running tells whether p still runs as seen: not gone, not another
// process under its pid, not a zombie.
func running(p proc) bool {
	q, ok := findProc(p.pid)
	if !ok || q.start != p.start {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat")
	return err == nil && !strings.Contains(string(b[strings.LastIndexByte(string(b), ')'):]), ") Z ")
}
