package guard

import (
	"fmt"
	"sync"
	"syscall"
)

// apply sets no limit of l on macOS, which has no prlimit to set one on
// another process, and Go's exec no step in the child before it runs.
// Lowered in the gateway before the child starts, to be inherited, they
// would bound the gateway: its heap, its sockets, its processor time,
// past which it would be killed. Core dumps alone are turned off in the
// gateway itself, once, soft and hard: a core holds the process's
// environment, tokens with it, and the gateway's no less than a
// server's.
func (l Rlimits) apply(int) error { return noCoreDumps() }

var noCoreDumps = sync.OnceValue(func() error {
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{}); err != nil {
		return fmt.Errorf("limit core dumps: %w", err)
	}
	return nil
})
