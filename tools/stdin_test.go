package tools

import (
	"bufio"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Standard input arrives as a blocking pipe. While the session runs the
// gateway reads it through the poller (non-blocking), and when the session
// ends by its context, with the client still connected, the read in flight
// ends too (no reader is left behind) and the pipe
// is blocking again, as the gateway found it.
func TestServeStdioOnABlockingPipe(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	inR, inW := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
	t.Cleanup(func() { inR.Close(); inW.Close() })
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outR.Close(); outW.Close() })

	tg := newGateway(t, 10*time.Second)
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- tg.g.ServeStdio(ctx, inR, outW) }()

	if _, err := inW.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) || !strings.Contains(line, `"serverInfo"`) {
		t.Fatalf("initialize answered %q, %v", line, err)
	}
	if !nonblocking(t, fds[0]) {
		t.Error("standard input is read blocking while the session runs")
	}

	cancel()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return when its context ended")
	}
	if nonblocking(t, fds[0]) {
		t.Error("standard input was left non-blocking after the session")
	}
	// The client has not hung up: only the session's end can have stopped
	// the read.
	goleak.VerifyNone(t, before)
}

func nonblocking(t *testing.T, fd int) bool {
	t.Helper()
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatalf("fcntl: %v", errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}
