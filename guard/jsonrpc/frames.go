package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
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
		return 0, frameTooLarge(f.max)
	}
	return n, err
}

// ErrFrameTooLarge is the error of a stream cut by LimitFrames.
var ErrFrameTooLarge = errors.New("a message larger than the cap")

// frameTooLarge is a LimitFrames cut: its text names the cap.
type frameTooLarge int

func (e frameTooLarge) Error() string {
	return fmt.Sprintf("sent a message larger than the %s cap", size(int(e)))
}

func (e frameTooLarge) Is(target error) bool { return target == ErrFrameTooLarge }

func size(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// A LineReader reads lines, one message each. A line that fits in its
// buffer is read in place; a longer one is gathered into a second buffer,
// which is kept while the lines that follow are long too (a run of large
// results costs no allocation each) and dropped at the first short one,
// so that one large message does not hold its memory for the life of the
// connection.
type LineReader struct {
	// Max, when not zero, caps a line: a longer one is not gathered but
	// read to its end and dropped, and ReadLine returns a *LongLine for
	// it, unwrapped (an ErrFrameTooLarge); the next ReadLine reads the
	// next line.
	// Max must exceed the buffer's size. Set it before use.
	Max int

	br   *bufio.Reader
	long []byte
}

// NewLineReader reads r with a buffer of size bytes.
func NewLineReader(r io.Reader, size int) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(r, size)}
}

// LineBuffered reports whether a whole line is buffered, so that the next
// ReadLine returns it without waiting for input. A reader that holds
// frames back while it has more at hand (Batch) flushes them when not.
func (l *LineReader) LineBuffered() bool {
	b, _ := l.br.Peek(l.br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
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
		if l.Max > 0 && len(long) > l.Max+len("\r\n") || !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		line, err = l.br.ReadSlice('\n')
	}
	if l.Max > 0 && len(bytes.TrimRight(long, "\r\n")) > l.Max {
		l.long = nil // a line this long is rare: its memory is not kept
		return nil, l.skipLong(long, err)
	}
	l.long = long
	return long, err
}

// A FrameWriter writes frames to one stream, each whole. A reader that has
// more frames at hand than the one it is handling can hold back the frames
// it writes (Frame with a Batch) and flush them once it has none left: a
// run of frames then costs one write, and one wake-up of the process that
// reads the other end, instead of one each. Whatever is written while
// frames are held goes out after them, so frames keep their order.
type FrameWriter struct {
	// OnError, when set, hears the first error writing the stream, once;
	// every write after it fails with that error. Set it before use.
	OnError func(error)

	// Backlog, when not zero, lets no writer wait on a reader that has
	// stopped reading (an upstream busy on a call, its stdin pipe full):
	// what the stream does not take at once is kept, and written in order
	// by a goroutine of the writer's own. While it is being written, a
	// frame that would take it past Backlog bytes fails with ErrBacklog
	// and is not written (unless Wait); the stream goes on. Only a descriptor the
	// runtime polls (the ends of an os.Pipe) can tell that a write would
	// wait; to any other writer, frames are written as without a
	// backlog. On Windows, where no write can tell, every frame is
	// written by that goroutine. Set it before use.
	Backlog int

	// Wait, with a Backlog, has a frame that finds the backlog at Backlog
	// bytes or more wait until the reader has taken some, instead of
	// failing: nothing is lost, and a reader that stopped reading holds
	// up its writers, not the gateway's memory. A writer whose stream
	// cannot tell that a write would wait then has every frame written
	// by that goroutine, so that none waits on the reader while the
	// backlog has room. Set it before use.
	Wait bool

	mu  sync.Mutex
	w   io.Writer
	buf []byte // the frames held, and where the next one is put together
	err error  // the first write error

	// With a Backlog: w's descriptor (nil when it has none), a write to
	// it that returns instead of waiting, and what is left to write.
	raw      syscall.RawConn
	rawTried bool
	try      func(fd uintptr) bool // tryOnce, made once: a closure per write would allocate
	drains   func()                // drain, made once, for the same reason
	tryBuf   []byte
	tryN     int
	tryErr   error
	writing  int           // the bytes drain is writing now
	backlog  []byte        // what drain writes next
	progress chan struct{} // closed when drain has written some, or the stream failed
}

// NewFrameWriter writes frames to w.
func NewFrameWriter(w io.Writer) *FrameWriter { return &FrameWriter{w: w} }

// maxHeld bounds the frames held in one writer: past it they are written
// at once.
const maxHeld = 64 << 10

// InPlace is the size from which a frame's body is written where it
// lies, between its head and tail, rather than copied to be written with
// them: one write a frame matters for small bodies, the copy of a large
// one costs more.
const InPlace = 64 << 10

// Frame writes one frame: what head appends (nothing when nil), then body,
// then tail, after the frames held and with nothing between them. With a
// batch it is held, and written when the batch is flushed or when this
// writer next writes anything else; without one it goes out now, with
// the frames held before it. A body too long to copy is written where it
// lies, and nothing is held then.
func (f *FrameWriter) Frame(b *Batch, head func([]byte) []byte, body []byte, tail string) error {
	if err := f.lock(); err != nil {
		return err
	}
	held := len(f.buf)
	if head != nil {
		f.buf = head(f.buf)
	}
	if waiting := f.waiting(); !f.Wait && waiting > 0 && waiting+len(f.buf)+len(body)+len(tail) > f.Backlog {
		f.buf = f.buf[:held]
		f.mu.Unlock()
		return fmt.Errorf("%w: %s sent wait unread", ErrBacklog, size(waiting))
	}
	if len(body) >= InPlace {
		if err := f.flush(); err != nil {
			return f.unlock(err)
		}
		if err := f.write(body); err != nil {
			return f.unlock(err)
		}
		f.buf = append(f.buf, tail...)
		return f.unlock(f.flush())
	}
	f.buf = append(append(f.buf, body...), tail...)
	if b != nil && len(f.buf) < maxHeld {
		if held == 0 {
			b.held = append(b.held, f) // the batch that holds the first frame flushes them all
		}
		f.mu.Unlock()
		return nil
	}
	return f.unlock(f.flush())
}

// Write writes p as a frame, after the frames held.
func (f *FrameWriter) Write(p []byte) (int, error) {
	if err := f.Frame(nil, nil, p, ""); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the frames held.
func (f *FrameWriter) Flush() error {
	if err := f.lock(); err != nil {
		return err
	}
	return f.unlock(f.flush())
}

// lock locks f, unless the stream has failed: then it returns why, and f
// stays unlocked. With Wait, it first waits for room in the backlog.
func (f *FrameWriter) lock() error {
	f.mu.Lock()
	for f.Wait && f.err == nil && f.full() {
		progress := f.progressed()
		f.mu.Unlock()
		<-progress
		f.mu.Lock()
	}
	if err := f.err; err != nil {
		f.mu.Unlock()
		return err
	}
	return nil
}

// flush writes the buffer and empties it, keeping it for the next frames
// unless a large frame grew it. f.mu is held.
func (f *FrameWriter) flush() error {
	if len(f.buf) == 0 {
		return nil
	}
	err := f.write(f.buf)
	f.buf = f.buf[:0]
	if cap(f.buf) > maxHeld {
		f.buf = nil
	}
	return err
}

func (f *FrameWriter) write(p []byte) error {
	if f.Backlog == 0 {
		_, err := f.w.Write(p)
		return err
	}
	if f.waiting() > 0 { // drain runs: after what it has
		f.backlog = append(f.backlog, p...)
		return nil
	}
	n, err := f.tryWrite(p)
	if err != nil || n == len(p) {
		return err
	}
	f.backlog = append(f.backlog, p[n:]...)
	if f.drains == nil {
		f.drains = f.drain
	}
	go f.drains()
	return nil
}

// ErrBacklog is the error of a frame that a writer with a Backlog did not
// take: its reader has left that much unread.
var ErrBacklog = errors.New("the reader has stopped reading")

// drainChunk is the most drain writes at once: what waits on room in the
// backlog hears of it as the reader takes each, not only once it has taken
// the whole backlog.
const drainChunk = 256 << 10

// drain writes the backlog, waiting on the reader, until none is left or
// the stream fails.
func (f *FrameWriter) drain() {
	f.mu.Lock()
	var p []byte
	for len(f.backlog) > 0 {
		// What is appended meanwhile goes after p, or to a new array.
		p = f.backlog[:min(len(f.backlog), drainChunk)]
		f.backlog, f.writing = f.backlog[len(p):], len(p)
		f.mu.Unlock()
		_, err := f.w.Write(p)
		f.mu.Lock()
		f.writing = 0
		f.progress = wake(f.progress)
		if err != nil {
			f.backlog = nil
			_ = f.unlock(err)
			return
		}
	}
	f.backlog = nil // a burst's memory is not kept, a small one's is
	if cap(p) <= maxHeld {
		f.backlog = p[:0] // written: the next frames reuse it
	}
	f.mu.Unlock()
}

// progressed returns the channel closed at drain's next progress, or when
// the stream fails. f.mu is held.
func (f *FrameWriter) progressed() chan struct{} {
	if f.progress == nil {
		f.progress = make(chan struct{})
	}
	return f.progress
}

// wake closes progress, when there is one, and returns nil for it.
func wake(progress chan struct{}) chan struct{} {
	if progress != nil {
		close(progress)
	}
	return nil
}

// Room waits until the backlog is under Backlog bytes, the stream has
// failed, or ctx is done, and reports whether ctx is still live. A reader
// whose requests are answered through f waits on it before it reads the
// next one, so that a peer that stops reading its answers stops being
// read too, rather than grow the answers held without bound.
func (f *FrameWriter) Room(ctx context.Context) bool {
	f.mu.Lock()
	for f.err == nil && f.full() && ctx.Err() == nil {
		progress := f.progressed()
		f.mu.Unlock()
		select {
		case <-progress:
		case <-ctx.Done():
		}
		f.mu.Lock()
	}
	f.mu.Unlock()
	return ctx.Err() == nil
}

// Written waits until the stream has taken every frame accepted, and
// returns the stream's error if it failed first: the backlog of a stream
// about to be closed goes out before it.
func (f *FrameWriter) Written() error {
	f.mu.Lock()
	for f.err == nil && f.waiting() > 0 {
		progress := f.progressed()
		f.mu.Unlock()
		<-progress
		f.mu.Lock()
	}
	err := f.err
	f.mu.Unlock()
	return err
}

// Waiting returns the bytes of frames accepted with a Backlog that the
// stream has not taken yet: not zero while its reader lags.
func (f *FrameWriter) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting()
}

// waiting is what the backlog holds, written or not yet: not zero exactly
// while drain runs. f.mu is held.
func (f *FrameWriter) waiting() int { return f.writing + len(f.backlog) }

// full tells a backlog at its bound. f.mu is held.
func (f *FrameWriter) full() bool { return f.Backlog > 0 && f.waiting() >= f.Backlog }

// unlock records err as the stream's first error, unlocks, and tells
// OnError, outside the lock: it may write to the stream itself.
func (f *FrameWriter) unlock(err error) error {
	first := err != nil && f.err == nil
	if first {
		f.err = err
		f.buf = nil
		f.progress = wake(f.progress) // what waits on the backlog waits no more
	}
	f.mu.Unlock()
	if first && f.OnError != nil {
		f.OnError(err)
	}
	return err
}

// A Batch is what one reader has held back while it had more frames at
// hand: the writers it holds frames in. Its zero value is empty. It
// belongs to the goroutine that reads; other goroutines write without one.
type Batch struct {
	held []*FrameWriter
}

// Flush writes the frames held, each writer's in one write. A writer's
// error is its own to report (OnError); the other writers still flush.
func (b *Batch) Flush() {
	for i, w := range b.held {
		_ = w.Flush()
		b.held[i] = nil
	}
	b.held = b.held[:0]
}
