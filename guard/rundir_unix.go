//go:build unix

package guard

import (
	"io"
	"os"
	"syscall"
)

// holdDir holds a shared lock (flock) on dir until closed.
func holdDir(dir string) (io.Closer, error) {
	f, err := os.Open(dir) // close-on-exec: the server holds no lock
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// claimDir takes an exclusive lock on dir, held until closed; false when
// a gateway holds it (EWOULDBLOCK), or it cannot tell.
func claimDir(dir string) (io.Closer, bool) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// ours tells whether a directory in the temp dir is the gateway's user's,
// which /tmp's other users' are not.
func ours(info os.FileInfo) bool {
	st, _ := info.Sys().(*syscall.Stat_t)
	return st != nil && int(st.Uid) == os.Getuid()
}
