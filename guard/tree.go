package guard

import "os/exec"

// A launched server runs in a process tree of its own, which ends with its
// session: its leader (npx, uvx, a pinned command) and every process that
// starts. Each OS holds the tree its own way: Linux and macOS in a process
// group (tree_unix.go), Linux also finding through /proc the processes
// that left it (tree_linux.go), Windows in a job object (tree_windows.go).

// Start starts cmd, made by Command, in a tree of its own, each process
// of it held to limits as far as the OS has them. When the tree or its
// limits cannot be set up, the process is killed and waited for, and the
// error says why.
func Start(cmd *exec.Cmd, limits Rlimits) (*Tree, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &Tree{cmd: cmd}
	if err := t.contain(limits); err != nil {
		t.Kill()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return t, nil
}
