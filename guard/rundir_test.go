package guard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// What a gateway killed with SIGKILL left is removed; the directories of
// gateways still running, and anything not named as a run directory, are
// not.
func TestSweepRunDirs(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid // reaped: no process has it, but for a reuse this quick
	dir := t.TempDir()
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	cases := []struct {
		name string
		file bool
		kept bool
	}{
		{name: fmt.Sprintf("ardgate-run-%d-123", dead), kept: false},
		{name: fmt.Sprintf("ardgate-run-%d-456", dead), kept: false},
		{name: fmt.Sprintf("ardgate-run-%d-789", os.Getpid()), kept: true},
		{name: fmt.Sprintf("ardgate-run-%d-123", live.Process.Pid), kept: true},
		{name: "ardgate-run-123456", kept: true}, // before the pid was in the name
		{name: "ardgate-run-x-1", kept: true},
		{name: fmt.Sprintf("ardgate-run-%d-file", dead), file: true, kept: true},
		{name: fmt.Sprintf("other-%d-123", dead), kept: true},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		if c.file {
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// A server that wrote in its directory left files there.
		if err := os.MkdirAll(filepath.Join(p, "node_modules"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if n := SweepRunDirs(dir); n != 2 {
		t.Errorf("removed %d directories, want 2", n)
	}
	for _, c := range cases {
		if _, err := os.Stat(filepath.Join(dir, c.name)); (err == nil) != c.kept {
			t.Errorf("%s kept: %v, want %v", c.name, err == nil, c.kept)
		}
	}
}

// A run directory is named for the gateway that made it.
func TestRunDir(t *testing.T) {
	d, err := RunDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(d)
	if pid, ok := runDirPID(filepath.Base(d)); !ok || pid != os.Getpid() || !strings.HasPrefix(d, os.TempDir()) {
		t.Fatalf("RunDir() = %s", d)
	}
	if entries, err := os.ReadDir(d); err != nil || len(entries) > 0 {
		t.Fatalf("%s: %v, %v", d, entries, err)
	}
}
