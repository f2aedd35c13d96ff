package guard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxMessage is the size cap on one JSON-RPC message, on every transport.
const MaxMessage = 10 << 20

// LimitFrames fails the stream once a line (a stdio frame) grows past max
// bytes: an upstream that floods is cut off rather than let grow the
// gateway's memory.
func LimitFrames(r io.Reader, max int) io.Reader { return &frameLimit{r: r, max: max} }

type frameLimit struct {
	r    io.Reader
	max  int
	line int
}

func (f *frameLimit) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	for rest := p[:n]; ; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			f.line += len(rest)
			break
		}
		if f.line+i > f.max {
			f.line += i
			break
		}
		f.line, rest = 0, rest[i+1:]
	}
	if f.line > f.max {
		return 0, fmt.Errorf("sent a message larger than the %s cap", size(f.max))
	}
	return n, err
}

func size(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// TruncateFrames cuts every line longer than max bytes down to max bytes,
// dropping the rest of that line. The cut frame no longer parses, so the
// reader's peer answers it with a parse error and the stream goes on.
func TruncateFrames(r io.Reader, max int) io.Reader { return &frameTruncate{r: r, max: max} }

type frameTruncate struct {
	r    io.Reader
	max  int
	line int
}

func (f *frameTruncate) Read(p []byte) (int, error) {
	for {
		n, err := f.r.Read(p)
		out := 0
		for data := p[:n]; len(data) > 0; {
			line, nl := data, false
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, nl, data = data[:i], true, data[i+1:]
			} else {
				data = nil
			}
			keep := min(len(line), max(0, f.max-f.line)) // past the cap: dropped
			out += copy(p[out:], line[:keep])
			f.line += len(line)
			if nl {
				p[out] = '\n'
				out++
				f.line = 0
			}
		}
		if out > 0 || err != nil {
			return out, err
		}
	}
}

// A LineReader reads lines, one message each. A line that fits in its
// buffer is read in place; a longer one is gathered into a second buffer,
// which is kept while the lines that follow are long too (a run of large
// results costs no allocation each) and dropped at the first short one,
// so that one large message does not hold its memory for the life of the
// connection.
type LineReader struct {
	br   *bufio.Reader
	long []byte
}

// NewLineReader reads r with a buffer of size bytes.
func NewLineReader(r io.Reader, size int) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(r, size)}
}

// ReadLine reads one line, its newline included when there is one. It is
// valid until the next read.
func (l *LineReader) ReadLine() ([]byte, error) {
	line, err := l.br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		l.long = nil
		return line, err
	}
	long := l.long[:0]
	if cap(long) == 0 {
		long = make([]byte, 0, 4*len(line))
	}
	for {
		// Grown by doubling, so that each byte is copied at most twice on
		// average, where append's gentler growth for large slices copies a
		// 1 MiB line several times over.
		if len(long)+len(line) > cap(long) {
			long = append(make([]byte, 0, 2*cap(long)+len(line)), long...)
		}
		long = append(long, line...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		line, err = l.br.ReadSlice('\n')
	}
	l.long = long
	return long, err
}
