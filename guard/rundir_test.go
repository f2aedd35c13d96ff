package guard

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// What a gateway killed with SIGKILL left is removed; the directories a
// gateway still holds, made less than a minute ago, or not named as run
// directories are not. A gateway is told by its lock, not its pid: one in
// a container sharing the temp dir has pids of its own, and a sweep by
// pid removed a live gateway's directory.
func TestSweepRunDirs(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * runDirYoung)
	// The held one, made in dir (Windows takes TMP for the temp dir, Unix
	// TMPDIR): a live gateway's, made long ago. A held directory cannot be
	// moved on Windows.
	t.Setenv("TMPDIR", dir)
	t.Setenv("TMP", dir)
	held, release, err := RunDir()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { release(); os.RemoveAll(held) }()
	if filepath.Dir(held) != filepath.Clean(dir) {
		t.Fatalf("RunDir() = %s, not in %s", held, dir)
	}
	cases := []struct {
		name  string
		file  bool
		young bool
		kept  bool
	}{
		{name: "ardgate-run-1-dead", kept: false},
		{name: "ardgate-run-123456", kept: false}, // before the pid was in the name
		{name: "ardgate-run-2-young", young: true, kept: true},
		{name: filepath.Base(held), kept: true},
		{name: "ardgate-run-3-file", file: true, kept: true},
		{name: "other-1-dead", kept: true},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		switch {
		case c.file:
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		case p != held:
			// A server that wrote in its directory left files there.
			if err := os.MkdirAll(filepath.Join(p, "node_modules"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if !c.young {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
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
	// Released, as by a gateway that ended, it goes too.
	release()
	release = func() {}
	if n := SweepRunDirs(dir); n != 1 {
		t.Errorf("after its release: removed %d directories, want 1", n)
	}
}

// A run directory is empty, and named for the gateway that made it.
func TestRunDir(t *testing.T) {
	d, release, err := RunDir()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { release(); os.Remove(d) }()
	if base := filepath.Base(d); !strings.HasPrefix(base, runDirPrefix+strconv.Itoa(os.Getpid())+"-") || filepath.Dir(d) != filepath.Clean(os.TempDir()) {
		t.Fatalf("RunDir() = %s", d)
	}
	if entries, err := os.ReadDir(d); err != nil || len(entries) > 0 {
		t.Fatalf("%s: %v, %v", d, entries, err)
	}
}
