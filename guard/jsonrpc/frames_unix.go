//go:build unix

package jsonrpc

import (
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// tryWrite writes what of p the stream takes without waiting. f.mu is
// held.
func (f *FrameWriter) tryWrite(p []byte) (int, error) {
	if !f.rawTried {
		f.rawTried = true
		if sc, ok := f.w.(syscall.Conn); ok {
			f.raw, _ = sc.SyscallConn()
		}
		if f.raw != nil && !nonBlocking(f.raw) {
			f.raw = nil // its writes wait: they cannot tell
		}
		f.try = f.tryOnce
	}
	switch {
	case f.raw == nil && f.Wait:
		return 0, nil // drain writes it all, as on Windows
	case f.raw == nil:
		return f.w.Write(p)
	}
	f.tryBuf, f.tryN, f.tryErr = p, 0, nil
	err := f.raw.Write(f.try)
	n := f.tryN
	if err == nil {
		err = f.tryErr
	}
	f.tryBuf, f.tryErr = nil, nil
	return n, err
}

// nonBlocking tells a descriptor whose writes return instead of waiting
// (O_NONBLOCK): the ends of an os.Pipe, not an inherited stdout.
func nonBlocking(raw syscall.RawConn) bool {
	var fl int
	var err error
	if cerr := raw.Control(func(fd uintptr) { fl, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); cerr != nil || err != nil {
		return false
	}
	return fl&unix.O_NONBLOCK != 0
}

// tryOnce writes f.tryBuf until the descriptor would block (EAGAIN); it
// never asks the runtime to wait.
func (f *FrameWriter) tryOnce(fd uintptr) bool {
	for f.tryN < len(f.tryBuf) {
		n, err := syscall.Write(int(fd), f.tryBuf[f.tryN:])
		if n > 0 {
			f.tryN += n
		}
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			return true
		case err != nil:
			f.tryErr = &os.PathError{Op: "write", Path: "pipe", Err: err}
			return true
		case n == 0:
			f.tryErr = io.ErrShortWrite
			return true
		}
	}
	return true
}
