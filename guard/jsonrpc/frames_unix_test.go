//go:build unix

package jsonrpc

import (
	"errors"
	"syscall"
)

// brokenPipe tells a write to a pipe whose reader has gone.
func brokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }
