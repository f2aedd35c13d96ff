//go:build unix

package mcpfixture

import (
	"os/exec"
	"syscall"
)

func processGroup() (int, error) { return syscall.Getpgid(0) }

// sleeper is the process spawn_child starts.
func sleeper() (*exec.Cmd, error) { return exec.Command("sleep", "300"), nil }

// ownSession starts a process in a session, and so a group, of its own.
func ownSession() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
