package guard

import "syscall"

// sysProcAttr puts a child in a process group of its own, so that the
// Tree's signals reach every process it starts. macOS has no parent-death
// signal: a gateway killed with SIGKILL leaves its servers to end on their
// own, as an MCP stdio server does when its stdin, the gateway's pipe,
// closes with the gateway.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
