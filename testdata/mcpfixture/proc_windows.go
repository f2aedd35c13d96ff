package mcpfixture

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// processGroup is 0: Windows has no process groups.
func processGroup() (int, error) { return 0, nil }

// sleeper is the process spawn_child starts: cmd/mcpfixture, which sleeps
// with --sleep, as Windows has no sleep program.
func sleeper() (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(self, "--sleep=300s"), nil
}

// ownSession asks Windows to start a process out of the job the fixture
// runs in, as a process leaves its group with setsid elsewhere.
func ownSession() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_BREAKAWAY_FROM_JOB | windows.CREATE_NEW_PROCESS_GROUP}
}
