package guard

import "math"

// Rlimits are the resource limits a launched server runs under, each
// process of its tree (npx, then node, then what node starts) held to them
// alone, not the tree together. Zero leaves a limit as the gateway's.
// Linux sets them all (rlimits_linux.go); macOS none but core dumps
// (rlimits_darwin.go); Windows the memory and processor time, in the
// server's job object (tree_windows.go).
type Rlimits struct {
	// MemoryMiB bounds a process's private writable memory (RLIMIT_DATA;
	// on Windows its committed memory), where its heap lives: an
	// allocation past it fails, and the server usually dies saying it ran
	// out of memory. Address space merely reserved (V8's and Go's) does
	// not count.
	MemoryMiB int
	// CPUSeconds bounds the processor time a process uses in its life
	// (RLIMIT_CPU); past it the process gets SIGXCPU, then SIGKILL. On
	// Windows it bounds the time in user mode, past which the process is
	// ended.
	CPUSeconds int
	// OpenFiles bounds a process's open files and sockets (RLIMIT_NOFILE).
	OpenFiles int
	// FileMiB bounds the size of a file a process writes (RLIMIT_FSIZE);
	// a write past it gets SIGXFSZ.
	FileMiB int
}

// mib is n MiB in bytes; a number of MiB past what 64 bits of bytes hold
// is the most they hold: no limit but the gateway's hard one. Shifted, 2^44 MiB wrapped to 0 (no limit
// at all) and one more to 1 MiB, where no server starts.
func mib(n int) uint64 {
	if uint64(n) > math.MaxUint64>>20 {
		return math.MaxUint64
	}
	return uint64(n) << 20
}
