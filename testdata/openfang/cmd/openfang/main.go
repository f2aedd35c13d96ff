// Command openfang is the test peer of package openfang: `openfang mcp`
// serves MCP over stdio with Content-Length framing, as the guide's
// command does; `openfang mcp --newline` frames one message a line.
// `openfang a2a [addr]` serves the guide's A2A endpoints on addr
// (127.0.0.1:50051 by default, the guide's example card's).
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/ardgate/ardgate/testdata/openfang"
)

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "a2a" {
		serveA2A()
		return
	}
	if len(os.Args) < 2 || os.Args[1] != "mcp" {
		fmt.Fprintln(os.Stderr, "usage: openfang mcp [--newline] | openfang a2a [addr]")
		os.Exit(2)
	}
	framing := openfang.ContentLength
	if len(os.Args) > 2 && os.Args[2] == "--newline" {
		framing = openfang.Newline
	}
	if err := openfang.ServeMCP(os.Stdin, os.Stdout, framing); err != nil {
		fmt.Fprintln(os.Stderr, "openfang mcp:", err)
		os.Exit(1)
	}
}

func serveA2A() {
	addr := "127.0.0.1:50051"
	if len(os.Args) > 2 {
		addr = os.Args[2]
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "openfang a2a:", err)
		os.Exit(1)
	}
	origin := "http://" + ln.Addr().String()
	fmt.Println(origin)
	srv := &http.Server{Handler: openfang.NewA2A(origin), ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "openfang a2a:", err)
		os.Exit(1)
	}
}
