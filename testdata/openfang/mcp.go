// Package openfang is a peer written from OpenFang's MCP and A2A guide
// (../../../shared/seeds/openfang-mcp-a2a.txt), for the tests: OpenFang
// itself does not run here. It serves what that guide says `openfang mcp`
// serves, section "MCP Server": each agent as a tool named
// openfang_agent_{name}, over stdio, framed with Content-Length headers
// ("Message Framing (stdio mode)"), in protocol 2024-11-05.
//
// It imports only the standard library.
package openfang

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// MCPHandler serves OpenFang's HTTP MCP endpoint (section "HTTP MCP
// Endpoint"): POST /mcp takes one JSON-RPC message and answers it in
// plain JSON, with no session; any other method is 405. OpenFang's own
// config calls this transport "sse".
func MCPHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		var req request
		if err := json.NewDecoder(io.LimitReader(r.Body, MaxMessage)).Decode(&req); err != nil {
			http.Error(w, "Bad Request", http.StatusBadRequest)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result, rerr := answer(req)
		w.Header().Set("Content-Type", "application/json")
		_ = write(w, Newline, req.ID, result, rerr)
	})
}

// ProtocolVersion is the MCP version OpenFang implements.
const ProtocolVersion = "2024-11-05"

// MaxMessage is OpenFang's MAX_MCP_MESSAGE_SIZE: a larger message is
// drained and rejected.
const MaxMessage = 10 << 20

// Agents are the agents the peer exposes, by name, each answering with
// its name and the message.
var Agents = []string{"code-reviewer", "researcher"}

// ToolName is the tool of an agent: hyphens become underscores.
func ToolName(agent string) string {
	return "openfang_agent_" + strings.ReplaceAll(agent, "-", "_")
}

// Framing is how ServeMCP frames messages.
type Framing int

// The framings: Content-Length, as OpenFang does, or one message a line,
// as a variant of the same server does.
const (
	ContentLength Framing = iota
	Newline
)

type request = RPCRequest

// ServeMCP serves MCP on in and out until in ends.
func ServeMCP(in io.Reader, out io.Writer, framing Framing) error {
	r := bufio.NewReader(in)
	for {
		body, err := readMessage(r, framing)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, errTooLarge):
			continue // drained and rejected
		case err != nil:
			return err
		}
		var req request
		if err := json.Unmarshal(body, &req); err != nil {
			if err := write(out, framing, nil, nil, &rpcError{Code: -32700, Message: "Parse error"}); err != nil {
				return err
			}
			continue
		}
		if req.ID == nil {
			continue // a notification: notifications/initialized has no response
		}
		result, rerr := answer(req)
		if err := write(out, framing, req.ID, result, rerr); err != nil {
			return err
		}
	}
}

var errTooLarge = errors.New("message too large")

// readMessage reads one message: a header block and its body, or a line.
func readMessage(r *bufio.Reader, framing Framing) ([]byte, error) {
	if framing == Newline {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) == 0 && err != nil {
			return nil, err
		}
		return line, nil
	}
	length := -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if name, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			if length, err = strconv.Atoi(strings.TrimSpace(value)); err != nil {
				return nil, fmt.Errorf("Content-Length %q: %w", value, err)
			}
		}
	}
	if length < 0 {
		return nil, errors.New("a message with no Content-Length")
	}
	if length > MaxMessage {
		if _, err := io.CopyN(io.Discard, r, int64(length)); err != nil {
			return nil, err
		}
		return nil, errTooLarge
	}
	body := make([]byte, length)
	_, err := io.ReadFull(r, body)
	return body, err
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// answer serves the four methods the guide lists; any other is -32601.
func answer(req request) (any, *rpcError) {
	switch req.Method {
	case "initialize":
		return map[string]any{
			"protocolVersion": ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "openfang", "version": "0.1.0"},
		}, nil
	case "tools/list":
		tools := []any{}
		for _, a := range Agents {
			tools = append(tools, map[string]any{
				"name":        ToolName(a),
				"description": "Send a message to the OpenFang agent " + a,
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}, "required": []string{"message"}},
			})
		}
		return map[string]any{"tools": tools}, nil
	case "tools/call":
		return call(req.Params)
	case "ping":
		return map[string]any{}, nil
	}
	return nil, &rpcError{Code: -32601, Message: "Method not found: " + req.Method}
}

func call(params json.RawMessage) (any, *rpcError) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Message string `json:"message"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: -32602, Message: "Invalid params"}
	}
	for _, a := range Agents {
		if ToolName(a) == p.Name {
			return map[string]any{"content": []any{map[string]any{"type": "text", "text": a + ": " + p.Arguments.Message}}}, nil
		}
	}
	return nil, &rpcError{Code: -32602, Message: "Unknown tool: " + p.Name}
}

// write writes one response.
func write(out io.Writer, framing Framing, id json.RawMessage, result any, rerr *rpcError) error {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if id == nil {
		msg["id"] = nil
	}
	if rerr != nil {
		msg["error"] = rerr
	} else {
		msg["result"] = result
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if framing == Newline {
		_, err = out.Write(append(body, '\n'))
		return err
	}
	_, err = fmt.Fprintf(out, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return err
}
