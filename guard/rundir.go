package guard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// runDirPrefix names the directories launched servers run in, followed by
// the gateway's pid: a gateway killed with SIGKILL removes none of its
// own, and the next one to launch a server tells them by that pid.
const runDirPrefix = "ardgate-run-"

var sweepOnce sync.Once

// RunDir makes an empty directory, in os.TempDir(), for a launched server
// to run in, so that a project's files (an .npmrc, a tarball named as the
// package) choose nothing. The caller removes it once the server has
// exited. The first call removes what gateways that died left (see
// SweepRunDirs).
func RunDir() (string, error) {
	sweepOnce.Do(func() { SweepRunDirs(os.TempDir()) })
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", runDirPrefix, os.Getpid()))
}

// SweepRunDirs removes from dir the run directories of gateways that are
// no longer running, ours (by uid) only, and says how many it removed.
// A directory whose gateway's pid is alive, even as another process
// since, is left alone.
func SweepRunDirs(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		pid, ok := runDirPID(e.Name())
		if !ok || !e.IsDir() || pid == os.Getpid() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if st, _ := info.Sys().(*syscall.Stat_t); st == nil || int(st.Uid) != os.Getuid() {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue // alive, or not ours to signal: alive
		}
		if os.RemoveAll(filepath.Join(dir, e.Name())) == nil {
			removed++
		}
	}
	return removed
}

// runDirPID reads the gateway's pid from a run directory's name,
// ardgate-run-<pid>-<random>.
func runDirPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, runDirPrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}
