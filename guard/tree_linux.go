package guard

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// A local server's processes are killed with its process group, but a
// process may leave the group: one that calls setsid (Puppeteer and
// Playwright start their browsers so) outlived its server for good. While
// the server runs, such a process is still one of its descendants, found
// through /proc, whatever its group.

// Tree is a launched server's processes: its leader's process group, and
// the processes Survey saw below the leader, in the group or not.
type Tree struct {
	cmd *exec.Cmd

	mu     sync.Mutex
	leader proc   // as it started
	below  []proc // seen by Survey
}

// contain limits the leader, before it has started a process of its own
// (npx, uvx and node start none so soon), and notes it as it started.
func (t *Tree) contain(limits Rlimits) error {
	pid := t.cmd.Process.Pid
	if err := limits.apply(pid); err != nil {
		return err
	}
	t.leader, _ = findProc(pid)
	return nil
}

// Survey notes the processes below the leader now, to be killed with the
// tree whatever their group. Call it while the leader runs, before its
// stdin closes: once the leader exits, what it left is no longer below it.
func (t *Tree) Survey() {
	below := descendants(t.leader)
	t.mu.Lock()
	t.below = below
	t.mu.Unlock()
}

// Kill kills every process of the group, and those Survey found: SIGKILL.
// It may be called again.
func (t *Tree) Kill() {
	_ = signalGroup(t.cmd.Process.Pid, syscall.SIGKILL)
	t.mu.Lock()
	below := t.below
	t.mu.Unlock()
	killProcs(below)
}

// proc is a process as /proc showed it: its pid, and its start time, so
// that a pid the kernel gave to another process since is not taken for it.
type proc struct {
	pid   int
	start uint64 // clock ticks after boot (/proc/PID/stat, field 22)
}

// findProc returns the process pid as /proc shows it now; false when it
// is gone.
func findProc(pid int) (proc, bool) {
	start, ok := startTime(pid)
	return proc{pid: pid, start: start}, ok
}

// descendants returns the processes below root, children first, as far
// as /proc shows them; none when root is no longer the process it was
// (its pid given to another since).
func descendants(root proc) []proc {
	if start, ok := startTime(root.pid); !ok || start != root.start {
		return nil
	}
	var out []proc
	queue := children(root.pid)
	seen := map[int]bool{root.pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		if start, ok := startTime(p); ok {
			out = append(out, proc{pid: p, start: start})
			queue = append(queue, children(p)...)
		}
	}
	return out
}

// killProcs sends SIGKILL to each of procs still running as it was seen.
func killProcs(procs []proc) {
	for _, p := range procs {
		if start, ok := startTime(p.pid); ok && start == p.start {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// children lists pid's children: those of each of its threads
// (/proc/PID/task/TID/children).
func children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// startTime reads pid's start time from /proc/PID/stat.
func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name, field 2, is in parentheses and may hold spaces
	// and parentheses itself: the fields after it follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(b[i+1:]) // field 3 (state) on
	const startField = 22 - 3
	if len(fields) <= startField {
		return 0, false
	}
	start, err := strconv.ParseUint(string(fields[startField]), 10, 64)
	if err != nil {
		return 0, false
	}
	return start, true
}
