package guard

import (
	"fmt"
	"math"

	"golang.org/x/sys/unix"
)

// Rlimits are the resource limits a launched server runs under. Linux
// keeps them per process and a child inherits its parent's, so each
// process of a server's tree (npx, then node, then what node starts) is
// held to them alone, not the tree together. Zero leaves a limit as the
// gateway's.
type Rlimits struct {
	// MemoryMiB bounds a process's private writable memory (RLIMIT_DATA),
	// where its heap lives: an allocation past it fails, and the server
	// usually dies saying it ran out of memory. Address space merely
	// reserved (V8's and Go's) does not count.
	MemoryMiB int
	// CPUSeconds bounds the processor time a process uses in its life
	// (RLIMIT_CPU); past it the process gets SIGXCPU, then SIGKILL.
	CPUSeconds int
	// OpenFiles bounds a process's open files and sockets (RLIMIT_NOFILE).
	OpenFiles int
	// FileMiB bounds the size of a file a process writes (RLIMIT_FSIZE);
	// a write past it gets SIGXFSZ.
	FileMiB int
}

// Apply sets the limits on the process pid, and no core dumps: a core
// holds the server's environment, its tokens with it. A launched process
// is limited as soon as it has started, before it could start one of its
// own (Go's exec has no way to set them in the child itself).
func (l Rlimits) Apply(pid int) error {
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

// mib is n MiB in bytes; a number of MiB past what 64 bits of bytes hold
// is no limit but the hard one. Shifted, 2^44 MiB wrapped to 0 (no limit
// at all) and one more to 1 MiB, where no server starts.
func mib(n int) uint64 {
	if uint64(n) > math.MaxUint64>>20 {
		return unix.RLIM_INFINITY
	}
	return uint64(n) << 20
}
