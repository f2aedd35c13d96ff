//go:build linux

package main

import (
	"fmt"
	"os"
	"strings"
)

// writeWaits reports whether a thread of process pid waits in a write to
// a pipe, one full for want of a reader; the kernel names where each
// thread sleeps.
func writeWaits(pid int) (bool, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false, err
	}
	for _, task := range tasks {
		wchan, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, task.Name()))
		if err == nil && strings.Contains(string(wchan), "pipe_write") { // an error: the thread ended
			return true, nil
		}
	}
	return false, nil
}
