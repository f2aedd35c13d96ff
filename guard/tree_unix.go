//go:build unix

package guard

import (
	"errors"
	"syscall"
)

// Terminate asks every process of the group to end: SIGTERM.
func (t *Tree) Terminate() { _ = signalGroup(t.cmd.Process.Pid, syscall.SIGTERM) }

// signalGroup sends sig to the process group led by pid. A group that is
// already gone is not an error; a pid of 0 or less, which kill(2) would
// take for the gateway's own group or for every process, is none.
func signalGroup(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
