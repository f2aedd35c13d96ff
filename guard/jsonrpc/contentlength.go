package jsonrpc

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Framing names how a stdio peer delimits its messages.
const (
	// FramingNewline is one message a line, as MCP's stdio transport
	// frames them: the default.
	FramingNewline = "newline"
	// FramingContentLength is a Content-Length header before each
	// message, as LSP frames them (OpenFang's `openfang mcp`).
	FramingContentLength = "content-length"
)

// ErrNotContentLength is a stream read as Content-Length framed that is
// not: its peer writes something else where a header belongs.
var ErrNotContentLength = errors.New("no Content-Length header where one was expected")

// maxHeaders bounds the header block of one Content-Length framed
// message: real peers send one or two short headers.
const maxHeaders = 4 << 10

// ContentLengthLines reads messages framed with Content-Length headers from
// r and returns them as newline-delimited frames, so that every reader of
// lines serves such a peer unchanged. A valid JSON body holds no raw line
// break inside a string, so each CR or LF in it is white space between
// tokens and becomes a space: a body streams through in constant memory,
// whatever its size. Callers cap the lines as for any peer (LimitFrames).
func ContentLengthLines(r io.Reader) io.Reader {
	return &contentLengthReader{r: bufio.NewReader(r)}
}

type contentLengthReader struct {
	r    *bufio.Reader
	left int64 // bytes of the current body still to read; -1 at its end
	err  error
}

func (c *contentLengthReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.left == 0 {
		n, err := c.header()
		if err != nil {
			c.err = err
			return 0, err
		}
		c.left = cmp.Or(n, -1) // an empty body is an empty line
	}
	if c.left < 0 { // the body is read: end its line
		c.left = 0
		p[0] = '\n'
		return 1, nil
	}
	n, err := c.r.Read(p[:int(min(int64(len(p)), c.left))])
	for i, b := range p[:n] {
		if b == '\n' || b == '\r' {
			p[i] = ' '
		}
	}
	if c.left -= int64(n); c.left == 0 {
		c.left = -1
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF // the header promised more
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

// header reads one message's header block and returns its Content-Length.
// A stream that ends between messages ends cleanly (io.EOF).
func (c *contentLengthReader) header() (int64, error) {
	length, read, headers := int64(-1), 0, 0
	for {
		line, err := c.r.ReadSlice('\n')
		read += len(line)
		switch {
		case errors.Is(err, io.EOF) && read == 0:
			return 0, io.EOF
		case errors.Is(err, bufio.ErrBufferFull) || read > maxHeaders:
			return 0, fmt.Errorf("%w: a header block of over %d bytes", ErrNotContentLength, maxHeaders)
		case err != nil:
			return 0, err
		}
		text := strings.TrimRight(string(line), "\r\n")
		switch {
		case text == "" && length >= 0:
			return length, nil
		case text == "" && headers > 0:
			return 0, fmt.Errorf("%w: the headers name no Content-Length", ErrNotContentLength)
		case text == "":
			continue // a blank line between messages
		}
		headers++
		if length, err = headerLength(text, length); err != nil {
			return 0, err
		}
	}
}

// headerLength reads one header line, and returns the Content-Length it
// gives, or the one given before.
func headerLength(text string, length int64) (int64, error) {
	name, value, ok := strings.Cut(text, ":")
	if !ok || !headerName(name) {
		return 0, fmt.Errorf("%w: the peer wrote %q", ErrNotContentLength, shorten(text))
	}
	if !strings.EqualFold(name, "Content-Length") {
		return length, nil // Content-Type, as LSP allows
	}
	value = strings.TrimSpace(value)
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: Content-Length %q is not a length", ErrNotContentLength, shorten(value))
	}
	return n, nil
}

// headerName tells whether name can name a header: letters, digits and
// dashes. A JSON line ({"id":…) has a colon too.
func headerName(name string) bool {
	return name != "" && strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") == ""
}

// shorten bounds a peer's text quoted in an error.
func shorten(s string) string {
	const most = 60
	if len(s) > most {
		return s[:most] + "…"
	}
	return s
}

// ContentLengthWriter frames each line written to it (a newline-delimited
// frame, which it may get in pieces) as one message with a Content-Length
// header, and writes it to w. Blank lines are dropped. Close is not
// needed: a line not ended when writing stops is a frame never finished.
func ContentLengthWriter(w io.Writer) io.Writer { return &contentLengthWriter{w: w} }

type contentLengthWriter struct {
	w    io.Writer
	line []byte // the start of a line whose end is still to come
}

func (c *contentLengthWriter) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			c.line = append(c.line, rest...)
			break
		}
		body := rest[:i]
		if len(c.line) > 0 {
			body = append(c.line, body...)
		}
		rest = rest[i+1:]
		if err := c.frame(bytes.TrimRight(body, "\r")); err != nil {
			return len(p) - len(rest), err
		}
		c.line = c.line[:0]
	}
	return len(p), nil
}

// frame writes body with its header, in one write.
func (c *contentLengthWriter) frame(body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	msg := make([]byte, 0, len(body)+32)
	msg = append(msg, "Content-Length: "...)
	msg = strconv.AppendInt(msg, int64(len(body)), 10)
	msg = append(msg, "\r\n\r\n"...)
	_, err := c.w.Write(append(msg, body...))
	return err
}
