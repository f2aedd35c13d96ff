package guard

import "golang.org/x/sys/unix"

// Undumpable makes the gateway's own process undumpable: its
// /proc/<pid>/environ and mem become root's, and a process of its uid
// may not ptrace it. A launched server runs as the gateway's uid, and
// its environment is cleaned (Stdio.Env), but it could still read the
// gateway's initial environment, ARDGATE_CREDENTIALS_KEY in it, through
// /proc, or attach to it. Call it at start, before any launch. It does
// not reach the children: exec makes a process dumpable again, so the
// gateway still reads their /proc (descendants) and limits them.
func Undumpable() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
