// Command openfang is the test peer of package openfang: `openfang mcp`
// serves MCP over stdio with Content-Length framing, as the guide's
// command does; `openfang mcp --newline` frames one message a line.
package main

import (
	"fmt"
	"os"

	"github.com/ardgate/ardgate/testdata/openfang"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "mcp" {
		fmt.Fprintln(os.Stderr, "usage: openfang mcp [--newline]")
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
