package guard

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// A local server's processes are killed with its process group, but a
// process may leave the group: one that calls setsid (Puppeteer and
// Playwright start their browsers so) outlived its server for good. While
// the server runs, such a process is still one of its descendants, found
// through /proc, whatever its group.

// Proc is a process as /proc showed it: its pid, and its start time, so
// that a pid the kernel gave to another process since is not taken for it.
type Proc struct {
	PID   int
	Start uint64 // clock ticks after boot (/proc/PID/stat, field 22)
}

// Find returns the process pid as /proc shows it now; false when it is
// gone.
func Find(pid int) (Proc, bool) {
	start, ok := startTime(pid)
	return Proc{PID: pid, Start: start}, ok
}

// Descendants returns the processes below root, children first, as far
// as /proc shows them; none when root is no longer the process it was
// (its pid given to another since).
func Descendants(root Proc) []Proc {
	if start, ok := startTime(root.PID); !ok || start != root.Start {
		return nil
	}
	var out []Proc
	queue := children(root.PID)
	seen := map[int]bool{root.PID: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		if start, ok := startTime(p); ok {
			out = append(out, Proc{PID: p, Start: start})
			queue = append(queue, children(p)...)
		}
	}
	return out
}

// KillProcs sends SIGKILL to each of procs still running as it was seen.
func KillProcs(procs []Proc) {
	for _, p := range procs {
		if start, ok := startTime(p.PID); ok && start == p.Start {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
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
