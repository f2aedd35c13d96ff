package guard

import (
	"os/exec"
	"syscall"
)

// Tree is a launched server's processes: its leader's process group. A
// process that leaves the group (setsid, as Puppeteer starts a browser)
// is not reached: macOS has no /proc to find it below the leader by.
type Tree struct {
	cmd *exec.Cmd
}

// contain sets what limits macOS can set (rlimits_darwin.go).
func (t *Tree) contain(limits Rlimits) error { return limits.apply(t.cmd.Process.Pid) }

// Survey does nothing on macOS, where the group is the whole tree known;
// on Linux it notes the processes that left it.
func (t *Tree) Survey() {}

// Kill kills every process of the group: SIGKILL. It may be called again.
func (t *Tree) Kill() { _ = signalGroup(t.cmd.Process.Pid, syscall.SIGKILL) }
