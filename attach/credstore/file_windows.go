package credstore

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// openNoFollow opens the file at path to read it, refusing a symbolic
// link (which only an administrator, or developer mode, may make there).
func openNoFollow(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: %w: it is not a regular file but a symbolic link; name the file itself", path, ErrUnreadable)
	}
	return os.Open(path)
}

// lockFile takes an exclusive lock (LockFileEx) on the first byte of the
// file at path, made if there is none, waiting for another holder to
// release it; unlock releases it.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	h := windows.Handle(f.Fd())
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, new(windows.Overlapped)); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = windows.UnlockFileEx(h, 0, 1, 0, new(windows.Overlapped))
		f.Close()
	}, nil
}

// syncDir does nothing: Windows opens no directory to be synced as unix
// does.
func syncDir(string) error { return nil }
