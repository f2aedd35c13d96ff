package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"time"
)

// unreadBench runs the ardgate binary over stdio with a client that
// writes pings and reads none of the answers for a while: the gateway's
// peak RSS then is what such a client costs it. The client then reads
// everything, and every ping must have its answer.
func unreadBench(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("unread", flag.ContinueOnError)
	pings := fs.Int("pings", 3_000_000, "pings written")
	unread := fs.Duration("unread", 40*time.Second, "how long stdout goes unread while they are written")
	gateway := fs.String("gateway", "", "an ardgate binary to run instead of one built from this tree")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, gw, _, err := buildBinaries()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if *gateway != "" {
		gw = *gateway
	}
	cfg, err := writeConfig(dir, nil, nil, nil)
	if err != nil {
		return err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(gw, "serve", "--config", cfg, "--log-level", "error")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	inR.Close()
	outW.Close()
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	fmt.Fprintf(out, "a stdio client that stops reading: up to %d pings, stdout unread for %s; %s\n", *pings, *unread, machine())
	answers := bufio.NewReaderSize(outR, 1<<20)
	if err := initialize(inW, answers); err != nil {
		return err
	}
	fmt.Fprintf(out, "RSS once initialized: %.1f MiB\n", float64(rssKiB(pid))/1024)

	var written atomic.Int64
	var stop atomic.Bool
	wrote := make(chan error, 1)
	go func() { wrote <- writePings(inW, *pings, &written, &stop) }()
	start := time.Now()
	select {
	case err = <-wrote:
		wrote <- err // read again below
	case <-time.After(*unread):
		stop.Store(true) // after the write under way, which may wait on the gateway
	}
	fmt.Fprintf(out, "after %s unread: %d pings written, peak RSS %.1f MiB (VmHWM), RSS now %.1f MiB\n",
		time.Since(start).Round(time.Second), written.Load(), float64(hwmKiB(pid))/1024, float64(rssKiB(pid))/1024)

	// Read now: every ping written has its answer, and once the writing
	// has ended and stdin is closed, the gateway ends stdout.
	readStart := time.Now()
	answered := make(chan error, 1)
	var got atomic.Int64
	go func() { answered <- readAnswers(answers, &got) }()
	if err := <-wrote; err != nil {
		return fmt.Errorf("writing pings: %w", err)
	}
	peak := hwmKiB(pid)
	_ = inW.Close()
	if err := <-answered; err != nil {
		return fmt.Errorf("after %d answers: %w", got.Load(), err)
	}
	if got.Load() != written.Load() {
		return fmt.Errorf("%d answers for %d pings", got.Load(), written.Load())
	}
	fmt.Fprintf(out, "then read: all %d answered in %s; peak RSS %.1f MiB (VmHWM) once all were written\n",
		got.Load(), time.Since(readStart).Round(time.Millisecond), float64(peak)/1024)
	return nil
}

// initialize opens the session and reads its answer.
func initialize(w io.Writer, r *bufio.Reader) error {
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	if _, err := io.WriteString(w, init); err != nil {
		return err
	}
	_, err := r.ReadSlice('\n')
	return err
}

// writePings writes up to n pings with ids from 1, in writes of 1,000,
// counting those written, until stop.
func writePings(w io.Writer, n int, written *atomic.Int64, stop *atomic.Bool) error {
	var buf []byte
	for i := 1; i <= n && !stop.Load(); i++ {
		buf = fmt.Appendf(buf, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
		if i%1000 == 0 || i == n {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			written.Store(int64(i))
			buf = buf[:0]
		}
	}
	return nil
}

// readAnswers reads ping answers to the end of stdout, each id once.
func readAnswers(r *bufio.Reader, got *atomic.Int64) error {
	seen := map[int]bool{}
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return nil
		}
		if err != nil {
			return err
		}
		rest, ok := bytes.CutPrefix(line, []byte(`{"jsonrpc":"2.0","id":`))
		end := bytes.IndexByte(rest, ',')
		if !ok || end < 0 {
			return fmt.Errorf("not an answer: %.200q", line)
		}
		id, err := strconv.Atoi(string(rest[:end]))
		switch {
		case err != nil || id < 1:
			return fmt.Errorf("an answer to no ping: %.200q", line)
		case seen[id]:
			return fmt.Errorf("ping %d answered twice", id)
		case !bytes.Contains(rest[end:], []byte(`"result":{}`)):
			return fmt.Errorf("ping %d: %.200q", id, line)
		}
		seen[id] = true
		got.Add(1)
	}
}

// hwmKiB is process pid's peak resident memory (VmHWM), in KiB.
func hwmKiB(pid int) int { return statusKiB(pid, "VmHWM:") }
