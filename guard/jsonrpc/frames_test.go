package jsonrpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/goleak"
)

// LimitFrames, against what it promises line by line, whether a read
// brings one byte or the whole stream.
func TestLimitFrames(t *testing.T) {
	const max = 8
	cases := []struct {
		name, in string
		tooBig   bool // some line is longer than max
	}{
		{"short lines", "a\nbb\n\nccc\n", false},
		{"exactly max", "12345678\n12345678", false},
		{"one over", "123456789\nok\n", true},
		{"long last line", "ok\n" + strings.Repeat("x", 30), true},
		{"long middle line", "ok\n" + strings.Repeat("y", 20) + "\nafter\n", true},
		{"no newline at all", "", false},
	}
	for _, c := range cases {
		for rname, r := range readers {
			t.Run(c.name+"/"+rname, func(t *testing.T) {
				got, err := io.ReadAll(LimitFrames(r(c.in), max))
				if (err != nil) != c.tooBig {
					t.Fatalf("LimitFrames: error %v, want one: %v", err, c.tooBig)
				}
				if err == nil && string(got) != c.in {
					t.Errorf("LimitFrames passed %q, not %q", got, c.in)
				}
				if err != nil && !strings.Contains(err.Error(), "larger than the 8 bytes cap") {
					t.Errorf("LimitFrames error %q does not name the cap", err)
				}
			})
		}
	}
}

// readers read a stream whole, a byte at a time, or in halves, so that
// every boundary a guard keeps track of falls between reads somewhere.
var readers = map[string]func(string) io.Reader{
	"whole":    func(s string) io.Reader { return strings.NewReader(s) },
	"bytewise": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	"halves":   func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
}

// ReadLine hands out lines that fit in the reader's buffer where they lie,
// and gathers longer ones whole, in any number of pieces, into a buffer
// reused while long lines follow one another and dropped after them.
func TestReadLine(t *testing.T) {
	const bufSize = 16 // bufio's smallest
	long, longer := strings.Repeat("x", 5*bufSize+3), strings.Repeat("z", 7*bufSize)
	atEdge := strings.Repeat("y", bufSize) // its newline is past the buffer
	in := "short\n" + long + "\n" + longer + "\n" + atEdge + "\n" + "\n" + long + "\n" + "tail"
	want := []struct {
		line     string
		reused   bool // in the long buffer the line before was in
		inBuffer bool // a line in place has no long buffer behind it
	}{
		{"short\n", false, true},
		{long + "\n", false, false},
		{longer + "\n", true, false},
		{atEdge + "\n", true, false},
		{"\n", false, true},
		{long + "\n", false, false}, // after a short line, a new buffer
		{"tail", false, true},
	}
	l := NewLineReader(strings.NewReader(in), bufSize)
	var before []byte
	for i, w := range want {
		line, err := l.ReadLine()
		if string(line) != w.line {
			t.Fatalf("line %d: got %q, want %q", i, line, w.line)
		}
		if wantErr := i == len(want)-1; (err != nil) != wantErr {
			t.Fatalf("line %d: err %v", i, err)
		}
		if reused := before != nil && &line[0] == &before[0]; reused != w.reused {
			t.Errorf("line %d: reused the long buffer %v, want %v", i, reused, w.reused)
		}
		if inBuffer := l.long == nil; inBuffer != w.inBuffer {
			t.Errorf("line %d: read in place %v, want %v", i, inBuffer, w.inBuffer)
		}
		before = nil
		if !w.inBuffer {
			before = line
		}
	}
	if _, err := l.ReadLine(); err != io.EOF {
		t.Fatalf("after the end: %v, want io.EOF", err)
	}
}

// LineBuffered tells whether the next ReadLine has a whole line at hand,
// which is when a reader that holds frames back may go on holding them.
func TestLineBuffered(t *testing.T) {
	r, w := io.Pipe()
	l := NewLineReader(r, 64)
	go func() {
		_, _ = io.WriteString(w, "one\ntwo\nthr")
		_, _ = io.WriteString(w, "ee\n")
		_ = w.Close()
	}()
	steps := []struct {
		line     string
		buffered bool // after reading line
	}{
		{"one\n", true},  // "two\n" came in the same write
		{"two\n", false}, // only "thr" is at hand: the next read waits
		{"three\n", false},
	}
	for i, s := range steps {
		line, err := l.ReadLine()
		if err != nil || string(line) != s.line {
			t.Fatalf("step %d: %q, %v; want %q", i, line, err, s.line)
		}
		if got := l.LineBuffered(); got != s.buffered {
			t.Errorf("after %q: LineBuffered %v, want %v", s.line, got, s.buffered)
		}
	}
}

// writes records each Write it is given, and fails them once failing is
// set.
type writes struct {
	got     []string
	failing error
}

func (w *writes) Write(p []byte) (int, error) {
	if w.failing != nil {
		return 0, w.failing
	}
	w.got = append(w.got, string(p))
	return len(p), nil
}

func frameOf(s string) func([]byte) []byte {
	return func(b []byte) []byte { return append(b, s...) }
}

// frame writes s as a frame, held in batch when there is one.
func frame(w *FrameWriter, batch *Batch, s string) error { return w.Frame(batch, frameOf(s), nil, "") }

// Frames held in a batch go out together, in order, when the batch is
// flushed or when the writer writes anything else; a writer that was
// flushed by another's write is not written again.
func TestFrameWriter(t *testing.T) {
	big := strings.Repeat("b", maxHeld)
	cases := []struct {
		name string
		run  func(a, b *FrameWriter, batch *Batch)
		a, b []string // the writes each stream saw
	}{
		{"no batch writes now", func(a, _ *FrameWriter, _ *Batch) {
			_ = frame(a, nil, "1\n")
			_ = frame(a, nil, "2\n")
		}, []string{"1\n", "2\n"}, nil},
		{"a batch writes each stream once", func(a, b *FrameWriter, batch *Batch) {
			_ = frame(a, batch, "1\n")
			_ = frame(b, batch, "x\n")
			_ = frame(a, batch, "2\n")
			batch.Flush()
			batch.Flush() // nothing held: nothing written
		}, []string{"1\n2\n"}, []string{"x\n"}},
		{"a write goes after the frames held", func(a, _ *FrameWriter, batch *Batch) {
			_ = frame(a, batch, "1\n")
			_, _ = a.Write([]byte("w\n"))
			_ = frame(a, batch, "2\n")
			batch.Flush()
		}, []string{"1\nw\n", "2\n"}, nil},
		{"a frame without a batch takes the held ones", func(a, _ *FrameWriter, batch *Batch) {
			_ = frame(a, batch, "1\n")
			_ = frame(a, nil, "2\n")
			batch.Flush()
		}, []string{"1\n2\n"}, nil},
		{"frames past the bound go out at once", func(a, _ *FrameWriter, batch *Batch) {
			_ = frame(a, batch, "1\n")
			_ = frame(a, batch, big)
			_ = frame(a, batch, "2\n")
			batch.Flush()
		}, []string{"1\n" + big, "2\n"}, nil},
		{"a large part is written where it lies", func(a, _ *FrameWriter, batch *Batch) {
			_ = frame(a, batch, "1\n")
			_ = a.Frame(nil, frameOf("<"), []byte(big), ">\n")
			batch.Flush()
		}, []string{"1\n<", big, ">\n"}, nil},
		{"a frame in parts is one write", func(a, _ *FrameWriter, _ *Batch) {
			_ = a.Frame(nil, frameOf("<"), []byte("body"), ">\n")
		}, []string{"<body>\n"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var wa, wb writes
			var batch Batch
			c.run(NewFrameWriter(&wa), NewFrameWriter(&wb), &batch)
			if !slices.Equal(wa.got, c.a) || !slices.Equal(wb.got, c.b) {
				t.Errorf("writes %q and %q, want %q and %q", wa.got, wb.got, c.a, c.b)
			}
			if len(batch.held) != 0 {
				t.Errorf("the batch still holds %d writers", len(batch.held))
			}
		})
	}
}

// A stream that fails says so once, to OnError, and every write after it
// fails the same way, held frames included.
func TestFrameWriterError(t *testing.T) {
	broken := errors.New("broken pipe")
	w := &writes{}
	f := NewFrameWriter(w)
	var told []error
	f.OnError = func(err error) { told = append(told, err) }
	var batch Batch
	if err := frame(f, &batch, "held\n"); err != nil {
		t.Fatal(err)
	}
	w.failing = broken
	batch.Flush()
	for _, err := range []error{
		frame(f, nil, "after\n"),
		frame(f, &batch, "held after\n"),
		f.Flush(),
		f.Frame(nil, nil, []byte("x"), "\n"),
	} {
		if !errors.Is(err, broken) {
			t.Errorf("a write after the failure: %v, want %v", err, broken)
		}
	}
	if len(told) != 1 || told[0] != broken {
		t.Errorf("OnError heard %v, want the failure once", told)
	}
	if len(w.got) != 0 {
		t.Errorf("written after all: %q", w.got)
	}
}

// A writer with a backlog never waits on a reader that has stopped: what
// the pipe does not take is kept and written, in order, once the reader
// reads again. Past the backlog a frame is refused, and the stream goes on.
func TestFrameWriterBacklog(t *testing.T) {
	defer goleak.VerifyNone(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f := NewFrameWriter(w)
	f.Backlog = 1 << 20
	told := make(chan error, 2)
	f.OnError = func(err error) { told <- err }

	// Written while nobody reads: a frame four times what a pipe holds,
	// then small ones, held and not, until the backlog is full.
	big := strings.Repeat("b", 256<<10) + "\n"
	var want strings.Builder
	var batch Batch
	write := func(frame string, b *Batch) error {
		done := make(chan error, 1)
		go func() { done <- f.Frame(b, nil, []byte(frame), "") }()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("a write waited on the reader")
			return nil
		}
	}
	if err := write(big, nil); err != nil {
		t.Fatal(err)
	}
	want.WriteString(big)
	for i := range 3 {
		line := fmt.Sprintf("small %d\n", i)
		if err := write(line, &batch); err != nil {
			t.Fatal(err)
		}
		want.WriteString(line)
	}
	batch.Flush()
	refused := 0
	for i := range 8 {
		line := fmt.Sprintf("%d", i) + big
		err := write(line, nil)
		switch {
		case err == nil:
			want.WriteString(line)
		case errors.Is(err, ErrBacklog):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if refused == 0 || refused == 8 {
		t.Fatalf("%d of 8 frames refused, want some past the 1 MiB backlog", refused)
	}
	// What waits is what was accepted less what the pipe took (64 KiB
	// here, at most 1 MiB anywhere).
	if n := f.Waiting(); n < want.Len()-(1<<20) || n > want.Len() || n == 0 {
		t.Errorf("%d bytes waiting with %d accepted and none read", n, want.Len())
	}

	got := make([]byte, want.Len())
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Fatalf("the reader got %d bytes, not the %d accepted, in order", len(got), want.Len())
	}
	// drain's last write returns just after the reader has it all.
	for deadline := time.Now().Add(5 * time.Second); f.Waiting() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes waiting 5 s after the reader read them all", f.Waiting())
		}
	}
	// Drained, it takes frames again.
	if err := write("after\n", nil); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "after\n" {
		t.Fatalf("after the backlog: %q, %v", line, err)
	}

	// A reader that goes away fails the stream, once, even mid-backlog.
	if err := write(big, nil); err != nil {
		t.Fatal(err)
	}
	r.Close()
	select {
	case err := <-told:
		if !brokenPipe(err) || !brokenPipe(f.Flush()) || len(told) != 0 {
			t.Fatalf("OnError heard %v (and %d more); the stream says %v", err, len(told), f.Flush())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnError never heard of the reader's end")
	}
	w.Close()
}

// Writers racing through a backlog to a reader that keeps stopping: every
// frame taken arrives whole, and each writer's frames in the order it
// wrote them; a refused frame never arrives.
func TestFrameWriterBacklogConcurrent(t *testing.T) {
	defer goleak.VerifyNone(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	f := NewFrameWriter(w)
	f.Backlog = 2 << 20
	const writers, frames = 6, 150
	refused := make([]map[int]bool, writers)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for id := range writers {
			refused[id] = map[int]bool{}
			wg.Go(func() {
				var b Batch
				for seq := range frames {
					size := (seq*7919 + id*104729) % (20 << 10)
					if seq%10 == 0 {
						size = 150 << 10 // past what the pipe holds
					}
					line := fmt.Sprintf("%d %d %d %s\n", id, seq, size, strings.Repeat(string(rune('a'+id)), size))
					var err error
					if seq%3 == 0 {
						err = f.Frame(&b, nil, []byte(line), "")
						b.Flush()
					} else {
						err = f.Frame(nil, nil, []byte(line), "")
					}
					if errors.Is(err, ErrBacklog) {
						refused[id][seq] = true
						time.Sleep(time.Millisecond) // as a caller told to try again later
					} else if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		// What is still waiting goes out before the end of the stream.
		for f.Frame(nil, nil, []byte("end\n"), "") != nil {
			time.Sleep(time.Millisecond)
		}
	}()

	br := bufio.NewReaderSize(r, 4096)
	next := make([]int, writers)
	arrived := map[[2]int]bool{}
	got := 0
	for n := 0; ; n++ {
		if n%32 == 0 {
			time.Sleep(2 * time.Millisecond) // a reader that keeps stopping
		}
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read after %d frames: %v", got, err)
		}
		if line == "end\n" {
			break
		}
		var id, seq, size int
		var body string
		if _, err := fmt.Sscanf(line, "%d %d %d %s", &id, &seq, &size, &body); err != nil && size != 0 {
			t.Fatalf("frame %d is not whole: %.80q", got, line)
		}
		if len(body) != size || strings.Trim(body, string(rune('a'+id))) != "" {
			t.Fatalf("writer %d frame %d: %d bytes of body, want %d of %q", id, seq, len(body), size, rune('a'+id))
		}
		if seq < next[id] {
			t.Fatalf("writer %d: frame %d after frame %d", id, seq, next[id]-1)
		}
		next[id] = seq + 1
		arrived[[2]int{id, seq}] = true
		got++
	}
	<-done
	total := 0
	for id := range writers {
		for seq := range refused[id] {
			if arrived[[2]int{id, seq}] {
				t.Fatalf("writer %d: refused frame %d arrived", id, seq)
			}
		}
		total += len(refused[id])
	}
	if got+total != writers*frames {
		t.Fatalf("%d frames arrived and %d were refused, of %d written", got, total, writers*frames)
	}
	t.Logf("%d frames arrived, %d refused", got, total)
	w.Close()
	r.Close()
}

// A writer with a backlog and Wait takes frames while the backlog has
// room, whether or not its stream can tell that a write would wait; at
// the bound it holds its writers, and Room its reader, until the reader
// reads. Nothing is refused: every frame arrives, in order.
func TestFrameWriterBacklogWait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pipes func(t *testing.T) (io.ReadCloser, io.WriteCloser)
	}{
		{"os.Pipe", func(t *testing.T) (io.ReadCloser, io.WriteCloser) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			return r, w
		}},
		{"io.Pipe", func(*testing.T) (io.ReadCloser, io.WriteCloser) { return io.Pipe() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			r, w := tc.pipes(t)
			defer r.Close()
			const bound, frame, frames = 256 << 10, 1 << 10, 1024
			f := NewFrameWriter(w)
			f.Backlog, f.Wait = bound, true
			var taken atomic.Int64
			wrote := make(chan error, 1)
			var want strings.Builder
			for i := range frames {
				fmt.Fprintf(&want, "%04d%s\n", i, strings.Repeat("w", frame-5))
			}
			go func() {
				for i := range frames {
					line := want.String()[i*frame : (i+1)*frame]
					if err := f.Frame(nil, nil, []byte(line), ""); err != nil {
						wrote <- err
						return
					}
					taken.Add(1)
				}
				wrote <- nil
			}()
			for deadline := time.Now().Add(10 * time.Second); f.Waiting() < bound; time.Sleep(time.Millisecond) {
				select {
				case err := <-wrote:
					t.Fatalf("every frame taken (%v) with none read, %d bytes waiting", err, f.Waiting())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("10 s on, %d frames taken and %d bytes waiting, bound %d", taken.Load(), f.Waiting(), bound)
				}
			}
			if n := f.Waiting(); n > bound+frame {
				t.Errorf("%d bytes waiting, bound %d", n, bound)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if f.Room(ctx) {
				t.Error("Room reported room at the bound, ctx done")
			}

			got := make([]byte, want.Len())
			if _, err := io.ReadFull(r, got); err != nil {
				t.Fatal(err)
			}
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			if string(got) != want.String() {
				t.Fatal("the frames did not all arrive in order")
			}
			if err := f.Written(); err != nil || f.Waiting() != 0 || !f.Room(context.Background()) {
				t.Fatalf("drained: Written %v, %d bytes waiting", err, f.Waiting())
			}

			// A reader that goes away ends the waits, with its error.
			go func() { _ = f.Frame(nil, nil, []byte(strings.Repeat("x", 2*bound)), "\n") }()
			for deadline := time.Now().Add(10 * time.Second); f.Waiting() == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("a frame twice the bound was not taken")
				}
			}
			r.Close()
			if err := f.Written(); err == nil {
				t.Fatal("Written returned no error with the reader gone")
			}
			w.Close()
		})
	}
}
