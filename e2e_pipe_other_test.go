//go:build !linux

package main

import "errors"

// writeWaits would report whether a thread of process pid waits in a
// write to a full pipe; only Linux says where a thread sleeps.
func writeWaits(int) (bool, error) { return false, errors.ErrUnsupported }
