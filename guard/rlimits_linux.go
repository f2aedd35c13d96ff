package guard

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// apply sets the limits on the process pid, and no core dumps: a core
// holds the server's environment, its tokens with it. A launched process
// is limited as soon as it has started, before it could start one of its
// own (Go's exec has no way to set them in the child itself).
func (l Rlimits) apply(pid int) error {
	for _, r := range []struct {
		name     string
		resource int
		value    uint64
	}{
		{"core dumps", unix.RLIMIT_CORE, 0},
		{"memory", unix.RLIMIT_DATA, mib(l.MemoryMiB)},
		{"processor time", unix.RLIMIT_CPU, uint64(l.CPUSeconds)},
		{"open files", unix.RLIMIT_NOFILE, uint64(l.OpenFiles)},
		{"file size", unix.RLIMIT_FSIZE, mib(l.FileMiB)},
	} {
		if r.value == 0 && r.resource != unix.RLIMIT_CORE {
			continue
		}
		var old unix.Rlimit
		if err := unix.Prlimit(pid, r.resource, nil, &old); err != nil {
			return fmt.Errorf("limit %s: %w", r.name, err)
		}
		// The hard limit too: a process may raise its soft limit up to
		// it, never the hard one, and a server is not trusted to keep to
		// a limit it could lift.
		lim := unix.Rlimit{Cur: min(r.value, old.Max), Max: min(r.value, old.Max)}
		if r.resource == unix.RLIMIT_CPU {
			// SIGXCPU at the limit, SIGKILL a few seconds on for a
			// process that ignores it.
			lim.Max = min(r.value+5, old.Max)
		}
		if err := unix.Prlimit(pid, r.resource, &lim, nil); err != nil {
			return fmt.Errorf("limit %s: %w", r.name, err)
		}
	}
	return nil
}
