package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// ownGroup starts a process in a process group of its own.
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// killGroup kills the process pid: a Windows process group is no unit to
// kill by (the gateway's servers are in jobs, guard.Tree).
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
