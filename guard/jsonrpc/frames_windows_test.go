package jsonrpc

import (
	"errors"

	"golang.org/x/sys/windows"
)

// brokenPipe tells a write to a pipe whose reader has gone: "the pipe is
// being closed", or "the pipe has been ended".
func brokenPipe(err error) bool {
	return errors.Is(err, windows.ERROR_NO_DATA) || errors.Is(err, windows.ERROR_BROKEN_PIPE)
}
