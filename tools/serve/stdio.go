package serve

import (
	"bytes"
	"sync"
)

// utf8BOM is the byte order mark some writers put before text.
var utf8BOM = []byte("\xef\xbb\xbf")

// ClientFrame is line, read from the client with err, as a frame: with no
// byte order mark before it, ended by a newline even when the stream ended
// first, and nil when it holds nothing but white space. Without this a
// blank line got a parse error, and a last frame without its newline was
// never answered.
func ClientFrame(line []byte, err error) []byte {
	line = bytes.TrimPrefix(line, utf8BOM)
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	if err != nil && line[len(line)-1] != '\n' {
		line = append(line[:len(line):len(line)], '\n')
	}
	return line
}

// CallGroup waits for calls in flight; once closed it admits no more.
type CallGroup struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Add admits one call more, unless the group is shut.
func (c *CallGroup) Add() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// Done ends a call Add admitted.
func (c *CallGroup) Done() { c.wg.Done() }

// Shut admits no more calls.
func (c *CallGroup) Shut() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// Wait waits for the calls admitted to end.
func (c *CallGroup) Wait() { c.wg.Wait() }
