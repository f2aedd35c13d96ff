//go:build unix

package guard

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// TestSignalGroupNonPositive checks that pid 0 and negative pids do not
// turn into kill(0) (the caller's own group) or kill(-1) (everything).
func TestSignalGroupNonPositive(t *testing.T) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGWINCH) // harmless if the rule breaks
	defer signal.Stop(ch)
	for _, pid := range []int{0, -1, -os.Getpid()} {
		if err := signalGroup(pid, syscall.SIGWINCH); err != nil {
			t.Errorf("SignalGroup(%d) = %v, want nil", pid, err)
		}
	}
	select {
	case s := <-ch:
		t.Errorf("the test process got %v", s)
	case <-time.After(200 * time.Millisecond):
	}
}
