package guard

import "syscall"

// sysProcAttr puts a child in a process group of its own, so that the
// Tree's signals reach every process it starts (npx starts node, which may
// start more), and has it get SIGTERM when the gateway dies: a gateway
// killed with SIGKILL ends nothing itself, and a server busy with a call,
// or one that does not read stdin, outlived it. (Linux sends it when the
// thread that started the child ends; Go's threads end only with a
// goroutine locked to one, and the gateway locks none.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
