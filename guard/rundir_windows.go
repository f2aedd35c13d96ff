package guard

import (
	"io"
	"os"

	"golang.org/x/sys/windows"
)

// Windows has no flock: a directory's lock is an open handle to it that
// shares no deletion, which keeps it from being removed, and which an
// exclusive open (sharing nothing) cannot be taken beside.

// holdDir holds dir open until closed.
func holdDir(dir string) (io.Closer, error) {
	return openDir(dir, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE)
}

// claimDir opens dir for the caller alone, until closed; false while
// another handle to it is open (a gateway's hold, or a server's current
// directory), or it cannot tell.
func claimDir(dir string) (io.Closer, bool) {
	f, err := openDir(dir, 0)
	return f, err == nil
}

func openDir(dir string, share uint32) (*os.File, error) {
	name, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return nil, err
	}
	// Backup semantics: the flag that opens a directory. Not inherited:
	// the server holds no lock.
	h, err := windows.CreateFile(name, windows.GENERIC_READ, share, nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(h), dir), nil
}

// ours tells whether a directory in the temp dir is the gateway's user's:
// on Windows the temp dir is the user's own (%LOCALAPPDATA%\Temp).
func ours(os.FileInfo) bool { return true }
