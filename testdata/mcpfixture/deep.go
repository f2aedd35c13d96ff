package mcpfixture

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// MaxNesting caps the depth that DeepAnswers nests an answer to.
const MaxNesting = 100000

// DeepAnswers reads r, the server's input over stdio, for mcp-go's stdio
// server, but for the requests it answers itself on w with JSON nested
// deeper than encoding/json writes (mcp-go's server cannot write them): a
// call of nested {depth}, with structured content of depth arrays one in
// the other, and, when listDepth is above 0, every tools/list, with a tool
// whose input schema nests listDepth arrays. Its answers are written as
// the inline log messages are, straight to w.
func DeepAnswers(r io.Reader, w io.Writer, listDepth int) io.Reader {
	return &deepAnswers{br: bufio.NewReader(r), w: w, listDepth: listDepth}
}

type deepAnswers struct {
	br        *bufio.Reader
	w         io.Writer
	listDepth int
	rest      []byte // of the line being passed on
	err       error  // reading r, once rest is passed on
}

func (d *deepAnswers) Read(p []byte) (int, error) {
	for len(d.rest) == 0 && d.err == nil {
		var line []byte
		line, d.err = d.br.ReadBytes('\n')
		if len(line) > 0 && !d.answered(line) {
			d.rest = line
		}
	}
	if len(d.rest) == 0 {
		return 0, d.err
	}
	n := copy(p, d.rest)
	d.rest = d.rest[n:]
	return n, nil
}

// answered answers line, a request, when it is one of DeepAnswers', and
// tells whether it was.
func (d *deepAnswers) answered(line []byte) bool {
	var req struct {
		ID     json.RawMessage
		Method string
		Params struct {
			Name      string
			Arguments struct{ Depth int }
		}
	}
	if json.Unmarshal(line, &req) != nil || req.ID == nil {
		return false
	}
	var result string
	switch {
	case req.Method == "tools/call" && req.Params.Name == "nested":
		result = `{"content":[{"type":"text","text":"nested"}],"structuredContent":` + brackets(req.Params.Arguments.Depth) + `}`
	case req.Method == "tools/list" && d.listDepth > 0:
		result = `{"tools":[{"name":"deep","inputSchema":{"type":"object","properties":{"d":{"default":` + brackets(d.listDepth) + `}}}}]}`
	default:
		return false
	}
	_, _ = fmt.Fprintf(d.w, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n", req.ID, result)
	return true
}

// brackets is depth arrays, one in the other, around 1.
func brackets(depth int) string {
	depth = min(max(depth, 0), MaxNesting)
	return strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
}
