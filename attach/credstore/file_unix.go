//go:build unix

package credstore

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock (flock) on the file at path, made if
// there is none, waiting for another holder to release it; unlock
// releases it. Not followed if a symbolic link: the lock file is the
// store's own.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing releases it
}
