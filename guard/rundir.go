package guard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// runDirPrefix names the directories launched servers run in, followed by
// the gateway's pid, for people to tell them by.
const runDirPrefix = "ardgate-run-"

// runDirYoung is how long a run directory is left alone after it was
// made, whatever its lock: between making it and locking it, a gateway
// holds no lock on it.
const runDirYoung = time.Minute

var sweepOnce sync.Once

// RunDir makes an empty directory, in os.TempDir(), for a launched server
// to run in, so that a project's files (an .npmrc, a tarball named as the
// package) choose nothing, and holds a shared lock on it until release,
// which the caller calls once the server has exited, before removing the
// directory. The first call removes what gateways that died left (see
// SweepRunDirs).
func RunDir() (dir string, release func(), err error) {
	sweepOnce.Do(func() { SweepRunDirs(os.TempDir()) })
	dir, err = os.MkdirTemp("", fmt.Sprintf("%s%d-", runDirPrefix, os.Getpid()))
	if err != nil {
		return "", nil, err
	}
	hold, err := holdDir(dir)
	if err != nil {
		os.Remove(dir)
		return "", nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return dir, func() { hold.Close() }, nil // closing it lets go of the lock
}

// SweepRunDirs removes from dir the run directories no gateway holds a
// lock on, ours only (rundir_unix.go, rundir_windows.go), and says how many it removed. A gateway's
// lock goes with it however it ends (SIGKILL runs no cleanup), and tells a
// live gateway's directory from a dead one's where a pid cannot: a
// gateway in a container sharing the temp dir has pids of its own.
func SweepRunDirs(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), runDirPrefix) || !e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if !ours(info) || time.Since(info.ModTime()) < runDirYoung {
			continue
		}
		if sweepRunDir(filepath.Join(dir, e.Name())) {
			removed++
		}
	}
	return removed
}

// sweepRunDir removes path unless a gateway holds its lock.
func sweepRunDir(path string) bool {
	claim, ok := claimDir(path)
	if !ok {
		return false
	}
	removed := os.RemoveAll(path) == nil
	claim.Close()
	return removed || os.Remove(path) == nil
}
