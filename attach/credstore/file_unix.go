//go:build unix

package credstore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// openNoFollow opens the file at path to read it, refusing a symbolic
// link: the kernel does (O_NOFOLLOW), so that no link made after a check
// is followed.
func openNoFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) { // EMLINK: the BSDs'
		return nil, fmt.Errorf("%s: %w: it is not a regular file but a symbolic link; name the file itself", path, ErrUnreadable)
	}
	return f, err
}

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

// syncDir syncs the directory dir, so that a rename in it is on disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
