// Package proctest reads /proc for tests that check processes are gone.
package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// GroupMembers returns the live processes of process group pgid. Zombies
// do not count: they are dead, only their parent's wait is missing.
func GroupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		i := strings.LastIndexByte(string(data), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 3 {
			continue
		}
		if pgrp, _ := strconv.Atoi(f[2]); pgrp == pgid && f[0] != "Z" && f[0] != "X" {
			out = append(out, pid)
		}
	}
	return out
}

// Alive reports whether pid is a live process (not a zombie).
func Alive(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	return i >= 0 && len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
