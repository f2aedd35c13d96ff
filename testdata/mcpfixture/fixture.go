// Package mcpfixture is a small, real MCP server used as an upstream in
// ardgate's tests. It is built on mcp-go and can be served in-process (for
// example behind httptest) or as a separate process through
// cmd/mcpfixture, over stdio or streamable HTTP.
//
// Tools:
//
//   - echo {message: string}: returns message verbatim as text.
//   - add {a: number, b: number}: returns the sum as text and as
//     structuredContent {"sum": a+b}; declares an outputSchema.
//   - schema_probe {any}: advertises [SchemaProbeInputSchema] and returns
//     the arguments it received, as structuredContent and as JSON text.
//   - slow {ms: integer, hold_input: boolean}: sleeps ms milliseconds,
//     sending notifications/progress about every 50ms when the call
//     carries a progress token; returns the error result "cancelled" if
//     the call is cancelled first. With hold_input it also stops reading
//     its input meanwhile, as a server does that reads one request at a
//     time, where the input is read through [HoldableInput]
//     (cmd/mcpfixture over stdio).
//   - crash {}: exits the process with status 3 without replying.
//   - env {}: returns the environment, pid, process group (0 on Windows,
//     which has none) and argv.
//   - env_digest {name}: returns whether the variable name is set and the
//     SHA-256 of its value, so that a test sees a key arrived without the
//     key itself in any result.
//   - spawn_child {}: starts "sleep 300" in the fixture's process group and
//     returns {"child_pid": N}. On Windows, which has no sleep, it starts
//     its own executable with --sleep=300s (cmd/mcpfixture), and
//     own_session asks to break away from the job it runs in.
//   - big {bytes: integer}: returns one text content of that many 'x' bytes.
//   - garbage {}: on stdio, writes a line that is not JSON and a reply to
//     a request nobody sent, then answers normally.
//   - progress {count, pad, inline}: sends count notifications/progress
//     as fast as it can, then answers.
//   - nested {depth}: answers with structured content nested depth
//     arrays deep, over stdio (DeepAnswers, deep.go).
//   - offer {name}: adds a prompt and a resource (offers.go).
//
// Handlers never panic on missing or mistyped arguments: they return an
// error result (isError: true) with a sentence saying what was wrong.
package mcpfixture

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Version is the server version the fixture reports in serverInfo.
const Version = "1.0.0"

// MaxBigBytes caps the size the big tool will produce (64 MiB).
const MaxBigBytes = 64 << 20

// ProgressInterval is roughly how often slow sends notifications/progress.
const ProgressInterval = 50 * time.Millisecond

// SchemaProbeInputSchema is the input schema advertised by schema_probe.
// mcp-go sends it compacted, with key order kept. It deliberately uses JSON Schema
// features that a lossy schema struct drops (a top-level description,
// $schema, $defs with a $ref, anyOf, oneOf, a nested object, an enum and
// defaults) so tests can tell whether a proxy forwarded the schema intact.
const SchemaProbeInputSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "description": "Probe for schema fidelity: every keyword here must survive proxying.",
  "$defs": {
    "point": {
      "type": "object",
      "properties": {
        "x": {"type": "number"},
        "y": {"type": "number"}
      },
      "required": ["x", "y"]
    }
  },
  "properties": {
    "id": {
      "description": "A numeric or a lowercase string identifier.",
      "anyOf": [
        {"type": "integer", "minimum": 0},
        {"type": "string", "pattern": "^[a-z]+$"}
      ]
    },
    "shape": {
      "oneOf": [
        {
          "type": "object",
          "properties": {"kind": {"const": "circle"}, "radius": {"type": "number"}},
          "required": ["kind", "radius"]
        },
        {
          "type": "object",
          "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
          "required": ["kind", "side"]
        }
      ]
    },
    "origin": {"$ref": "#/$defs/point"},
    "options": {
      "type": "object",
      "properties": {
        "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
        "limits": {
          "type": "object",
          "properties": {"max": {"type": "integer", "default": 10}}
        }
      },
      "additionalProperties": false
    }
  }
}`

// New returns an MCP server named name (version [Version]) that advertises
// tool, prompt and resource capabilities with listChanged and logging, and
// serves the fixture's tools, prompts and resources (offers.go).
func New(name string) *server.MCPServer {
	subs := &subscriptions{by: map[string]map[string]bool{}}
	s := server.NewMCPServer(name, Version, server.WithToolCapabilities(true), server.WithLogging(),
		server.WithPromptCapabilities(true), server.WithResourceCapabilities(true, true),
		server.WithCompletions(), server.WithPromptCompletionProvider(completions{}), server.WithHooks(subs.hooks()),
		// With an escape sequence and a bidi override, which the gateway
		// must not pass on to a model.
		server.WithInstructions(Instructions+"\x1b[31m\u202e"))
	addOffers(s, subs)

	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Returns message unchanged."),
		mcp.WithString("message", mcp.Required(), mcp.Description("Text to echo back.")),
	), echo)

	s.AddTool(mcp.NewTool("add",
		mcp.WithToolTitle("Add two numbers"), // a title of its own, not its annotations'
		mcp.WithDescription("Adds two numbers."),
		mcp.WithNumber("a", mcp.Required()),
		mcp.WithNumber("b", mcp.Required()),
		mcp.WithRawOutputSchema(json.RawMessage(
			`{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`)),
	), add)

	// A raw-schema tool starts with zero-valued annotations (NewTool's
	// defaults are not applied), so set them in full here.
	probe := mcp.NewToolWithRawSchema("schema_probe",
		"Returns the arguments it received.", json.RawMessage(SchemaProbeInputSchema))
	probe.Annotations = mcp.ToolAnnotation{
		Title:          "Schema probe",
		ReadOnlyHint:   mcp.ToBoolPtr(true),
		IdempotentHint: mcp.ToBoolPtr(true),
	}
	s.AddTool(probe, schemaProbe)

	s.AddTool(mcp.NewTool("slow",
		mcp.WithDescription("Sleeps ms milliseconds, reporting progress when asked to."),
		mcp.WithInteger("ms", mcp.Required(), mcp.Min(0)),
		mcp.WithBoolean("hold_input", mcp.Description("Stop reading input meanwhile.")),
	), slow(s))

	s.AddTool(mcp.NewTool("crash",
		mcp.WithDescription("Exits the server process with status 3 without replying. "+
			"Only meaningful when the fixture runs as a separate process: "+
			"in-process it kills the test binary."),
	), crash)

	s.AddTool(mcp.NewTool("meta",
		mcp.WithDescription("Returns the _meta the call came with, its progress token included."),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		meta := map[string]any{}
		if m := req.Params.Meta; m != nil {
			maps.Copy(meta, m.AdditionalFields)
			if m.ProgressToken != nil {
				meta["progressToken"] = m.ProgressToken
			}
		}
		return mcp.NewToolResultStructuredOnly(map[string]any{"meta": meta}), nil
	})

	s.AddTool(mcp.NewTool("env",
		mcp.WithDescription("Returns the process environment, pid, process group, argv, working directory and the names in it."),
	), env)

	s.AddTool(mcp.NewTool("env_digest",
		mcp.WithDescription("Returns whether an environment variable is set and the SHA-256 of its value, in hex."),
		mcp.WithString("name", mcp.Required()),
	), envDigest)

	s.AddTool(mcp.NewTool("spawn_child",
		mcp.WithDescription("Starts `sleep 300` in the server's process group, or with own_session in a session (and group) of its own, as browsers are started, and returns its pid."),
		mcp.WithBoolean("own_session"),
	), spawnChild)

	s.AddTool(mcp.NewTool("big",
		mcp.WithDescription("Returns one text content of exactly `bytes` 'x' characters."),
		mcp.WithInteger("bytes", mcp.Required(), mcp.Min(0), mcp.Max(MaxBigBytes)),
	), big)

	s.AddTool(mcp.NewTool("flood",
		mcp.WithDescription("Writes a message to stdout that never ends (stdio only), until the write fails."),
	), flood)

	s.AddTool(mcp.NewTool("log",
		mcp.WithDescription("Sends count log messages (notifications/message) of level, as far as the client's log level lets it, "+
			"or whatever that level with force; answers with how many it sent and the client's level."),
		mcp.WithString("level", mcp.Required(), mcp.Enum(LogLevels...)),
		mcp.WithInteger("count", mcp.Min(1), mcp.Max(100000)),
		mcp.WithBoolean("force"),
		mcp.WithBoolean("inline", mcp.Description("Write them straight to stdout (stdio only), so that they come before the answer.")),
	), logMessages(s))

	s.AddTool(mcp.NewTool("progress",
		mcp.WithDescription("Sends count progress notifications under the call's progress token as fast as it can, "+
			"each with a message of pad bytes when pad is set, then answers."),
		mcp.WithInteger("count", mcp.Min(1), mcp.Max(1000000)),
		mcp.WithInteger("pad", mcp.Min(0), mcp.Max(1<<20)),
		mcp.WithBoolean("inline", mcp.Description("Write them straight to stdout (stdio only), so that they come before the answer.")),
	), progressNotes(s))

	s.AddTool(mcp.NewTool("nested",
		mcp.WithDescription("Answers with structured content nested depth arrays deep, deeper than a JSON reader may read (stdio only: DeepAnswers)."),
		mcp.WithInteger("depth", mcp.Required(), mcp.Min(0), mcp.Max(MaxNesting)),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("nested answers over stdio only, where DeepAnswers writes its answer."), nil
	})

	s.AddTool(mcp.NewTool("cancellations",
		mcp.WithDescription("Returns the reason of each notifications/cancelled the server read, one a line (stdio only)."),
	), cancellations)

	s.AddTool(mcp.NewTool("garbage",
		mcp.WithDescription("Writes malformed frames to stdout (stdio only), then answers."),
	), garbage)

	return s
}

// garbage writes frames a client must survive: one line of non-JSON and
// a response with an id no request had. Meaningful only on stdio.
func garbage(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	_, _ = os.Stdout.WriteString("this is not json\n{\"jsonrpc\":\"2.0\",\"id\":\"nobody-asked\",\"result\":{}}\n")
	return mcp.NewToolResultText("wrote garbage"), nil
}

// flood writes the start of a notification, then its text without end.
// Meaningful only on stdio; it returns when stdout breaks.
func flood(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if _, err := os.Stdout.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`); err != nil {
		return nil, err
	}
	chunk := []byte(strings.Repeat("x", 64<<10))
	for {
		if _, err := os.Stdout.Write(chunk); err != nil {
			return nil, err
		}
	}
}

// heldUntil is when reading input may go on again, in Unix nanoseconds.
var heldUntil atomic.Int64

// HoldableInput reads r, except while a slow call holds the input, and
// keeps the reason of each notifications/cancelled it reads, for the
// cancellations tool (mcp-go's server keeps it to itself).
func HoldableInput(r io.Reader) io.Reader { return &holdable{r: r} }

type holdable struct {
	r    io.Reader
	line []byte // the line read so far
	long bool   // the line is longer than a notice: not kept
}

func (h *holdable) Read(p []byte) (int, error) {
	time.Sleep(time.Until(time.Unix(0, heldUntil.Load())))
	n, err := h.r.Read(p)
	h.note(p[:n])
	return n, err
}

// note gathers b into lines and keeps the reason of each cancellation.
func (h *holdable) note(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			h.gather(b)
			return
		}
		h.gather(b[:i])
		var n struct {
			Method string
			Params struct{ Reason string }
		}
		if !h.long && json.Unmarshal(h.line, &n) == nil && n.Method == string(mcp.MethodNotificationCancelled) {
			cancelled.mu.Lock()
			cancelled.reasons = append(cancelled.reasons, n.Params.Reason)
			cancelled.mu.Unlock()
		}
		h.line, h.long, b = h.line[:0], false, b[i+1:]
	}
}

func (h *holdable) gather(b []byte) {
	if h.long = h.long || len(h.line)+len(b) > 64<<10; !h.long {
		h.line = append(h.line, b...)
	}
}

// cancelled are the reasons of the cancellations read from stdin.
var cancelled struct {
	mu      sync.Mutex
	reasons []string
}

func cancellations(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	cancelled.mu.Lock()
	defer cancelled.mu.Unlock()
	return mcp.NewToolResultText(strings.Join(cancelled.reasons, "\n")), nil
}

// Instructions are what the fixture's initialize says of how to use it.
const Instructions = "Call echo to check the path through the gateway; slow reports progress."

func echo(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	msg, ok := req.GetArguments()["message"].(string)
	if !ok {
		return mcp.NewToolResultError("echo needs a string argument \"message\"."), nil
	}
	return mcp.NewToolResultText(msg), nil
}

func add(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, okA := number(req, "a")
	b, okB := number(req, "b")
	if !okA || !okB {
		return mcp.NewToolResultError("add needs two number arguments \"a\" and \"b\"."), nil
	}
	sum := a + b
	return mcp.NewToolResultStructured(map[string]any{"sum": sum},
		strconv.FormatFloat(sum, 'g', -1, 64)), nil
}

// number is stricter than req.RequireFloat, which also accepts numeric
// strings: a fixture should notice a proxy that re-types arguments.
func number(req mcp.CallToolRequest, key string) (float64, bool) {
	v, ok := req.GetArguments()[key].(float64)
	return v, ok
}

// integer accepts only JSON numbers with no fractional part.
func integer(req mcp.CallToolRequest, key string) (int64, bool) {
	f, ok := number(req, key)
	if !ok || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

func schemaProbe(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// Prefer the raw bytes from the wire so large integers and key order
	// come back exactly as the proxy sent them.
	raw := json.RawMessage(strings.TrimSpace(string(req.Params.RawArguments)))
	if len(raw) == 0 || raw[0] != '{' {
		args := req.GetArguments()
		if args == nil {
			args = map[string]any{}
		}
		var err error
		if raw, err = json.Marshal(args); err != nil {
			return mcp.NewToolResultError("schema_probe could not encode its arguments: " + err.Error() + "."), nil
		}
	}
	res := mcp.NewToolResultText(string(raw))
	res.RawStructuredContent = raw
	return res, nil
}

// LogLevels are MCP's log levels, least first.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logMessages sends log messages, "log 1" to "log <count>" under the logger
// "fixture" (sendNote).
func logMessages(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		level := mcp.LoggingLevel(req.GetString("level", ""))
		count := req.GetInt("count", 1)
		force := req.GetBool("force", false)
		inline := req.GetBool("inline", false)
		var clientLevel mcp.LoggingLevel
		if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithLogging); ok {
			clientLevel = cs.GetLogLevel()
		}
		sent := 0
		for i := 1; i <= count; i++ {
			if !force && !level.ShouldSendTo(clientLevel) {
				break
			}
			params := map[string]any{"level": level, "logger": "fixture", "data": fmt.Sprintf("log %d", i)}
			if err := sendNote(ctx, s, string(mcp.MethodNotificationMessage), params, inline); err != nil {
				return mcp.NewToolResultError(fmt.Sprintf("log %d not sent: %v", i, err)), nil
			}
			sent++
		}
		notesSent(ctx, sent, inline)
		return mcp.NewToolResultText(fmt.Sprintf("sent %d at %s; the client's level is %s", sent, level, clientLevel)), nil
	}
}

// progressNotes sends count notifications/progress under the call's
// token, 1 to count of count, with a message of pad bytes when pad is
// set, as fast as it can (sendNote), then answers with how many it sent.
func progressNotes(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var token mcp.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		if token == nil {
			return mcp.NewToolResultError("progress needs a progress token in _meta."), nil
		}
		count, inline := req.GetInt("count", 1), req.GetBool("inline", false)
		pad := strings.Repeat("p", req.GetInt("pad", 0))
		for i := 1; i <= count; i++ {
			params := map[string]any{"progressToken": token, "progress": i, "total": count}
			if pad != "" {
				params["message"] = pad
			}
			if err := sendNote(ctx, s, string(mcp.MethodNotificationProgress), params, inline); err != nil {
				return mcp.NewToolResultError(fmt.Sprintf("progress %d not sent: %v", i, err)), nil
			}
		}
		notesSent(ctx, count, inline)
		return mcp.NewToolResultText(fmt.Sprintf("sent %d progress notifications", count)), nil
	}
}

// sendNote sends one notification of the server's. Inline, it is written
// straight to stdout (stdio only): mcp-go's server writes notices from a
// goroutine of its own, which may come after the answer. Otherwise a full
// queue of notices is waited out, not a notice lost.
func sendNote(ctx context.Context, s *server.MCPServer, method string, params map[string]any, inline bool) error {
	if inline {
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
		_, err := os.Stdout.Write(append(line, '\n'))
		return err
	}
	for {
		err := s.SendNotificationToClient(ctx, method, params)
		if !errors.Is(err, server.ErrNotificationChannelBlocked) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// notesSent waits, once a call has sent notices not inline, for them to
// be written before its answer: mcp-go's streamable HTTP server drops a
// notice that the forwarder of the call's stream takes from the session's
// queue after the answer went. The answer waits until the queue is empty,
// and a moment more for the last notice to be written.
func notesSent(ctx context.Context, sent int, inline bool) {
	if cs := server.ClientSessionFromContext(ctx); cs != nil && sent > 0 && !inline {
		for ch := cs.NotificationChannel(); len(ch) > 0 && ctx.Err() == nil; {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func slow(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ms, ok := integer(req, "ms")
		if !ok || ms < 0 {
			return mcp.NewToolResultError("slow needs a non-negative integer argument \"ms\"."), nil
		}
		var token mcp.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}

		start := time.Now()
		total := time.Duration(ms) * time.Millisecond
		if hold, _ := req.GetArguments()["hold_input"].(bool); hold {
			heldUntil.Store(start.Add(total).UnixNano())
		}
		done := time.NewTimer(total)
		defer done.Stop()
		tick := time.NewTicker(ProgressInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return mcp.NewToolResultError("cancelled"), nil
			case <-done.C:
				return mcp.NewToolResultText(fmt.Sprintf("slept %dms", ms)), nil
			case <-tick.C:
				if token == nil {
					continue
				}
				elapsed := min(time.Since(start), total)
				// Best effort: a full notification channel must not fail the call.
				_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
					"progressToken": token,
					"progress":      float64(elapsed.Milliseconds()),
					"total":         float64(ms),
				})
			}
		}
	}
}

func crash(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// A start-up log before the reason, as many servers write: the
	// reason, at the end, is what the gateway must keep.
	for i := range 12 {
		fmt.Fprintf(os.Stderr, "mcpfixture: banner line %d of a chatty start-up log\n", i)
	}
	fmt.Fprintln(os.Stderr, "mcpfixture: crashing as asked")
	os.Exit(3)
	return nil, nil // unreachable
}

func env(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	pgid, err := processGroup()
	if err != nil {
		return mcp.NewToolResultError("env could not read the process group: " + err.Error() + "."), nil
	}
	vars := os.Environ()
	slices.Sort(vars)
	cwd, _ := os.Getwd()
	var inCwd []string
	if entries, err := os.ReadDir("."); err == nil {
		for _, e := range entries {
			inCwd = append(inCwd, e.Name())
		}
	}
	return mcp.NewToolResultStructuredOnly(map[string]any{
		"env":    vars,
		"pid":    os.Getpid(),
		"pgid":   pgid,
		"args":   os.Args,
		"cwd":    cwd,
		"in_cwd": inCwd,
	}), nil
}

func envDigest(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, err := req.RequireString("name")
	if err != nil {
		return mcp.NewToolResultError("env_digest needs name, a string."), nil
	}
	v, set := os.LookupEnv(name)
	sum := sha256.Sum256([]byte(v))
	return mcp.NewToolResultStructuredOnly(map[string]any{"name": name, "set": set, "sha256": hex.EncodeToString(sum[:])}), nil
}

func spawnChild(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// No Setpgid: the grandchild must share the fixture's process group so
	// tests can check that the gateway kills the whole group, unless asked
	// to leave it. Its stdio is /dev/null, so it does not hold the
	// fixture's pipes open.
	cmd, err := sleeper()
	if err != nil {
		return mcp.NewToolResultError("spawn_child could not find its sleeper: " + err.Error() + "."), nil
	}
	if own, _ := req.GetArguments()["own_session"].(bool); own {
		cmd.SysProcAttr = ownSession()
	}
	if err := cmd.Start(); err != nil {
		return mcp.NewToolResultError("spawn_child could not start `sleep 300`: " + err.Error() + "."), nil
	}
	go cmd.Wait() // reap it so it never lingers as a zombie
	return mcp.NewToolResultStructuredOnly(map[string]any{"child_pid": cmd.Process.Pid}), nil
}

func big(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n, ok := integer(req, "bytes")
	if !ok || n < 0 || n > MaxBigBytes {
		return mcp.NewToolResultError(fmt.Sprintf(
			"big needs an integer argument \"bytes\" between 0 and %d.", MaxBigBytes)), nil
	}
	return mcp.NewToolResultText(strings.Repeat("x", int(n))), nil
}

// AddManyTools adds n tools named tool_000, tool_001, ... to s, each with
// a description and an input schema of about 2 KiB, as a large real
// server lists (GitHub's lists about 90 tools of 1-3 KiB each): for
// measuring what a large listing costs each session that attaches it.
// Each answers as echo does.
func AddManyTools(s *server.MCPServer, n int) {
	for i := range n {
		opts := []mcp.ToolOption{mcp.WithDescription(fmt.Sprintf("Tool %d of a large listing. %s", i, strings.Repeat("It does one thing and says so at length. ", 6)))}
		for p := range 12 {
			opts = append(opts, mcp.WithString(fmt.Sprintf("param_%02d", p),
				mcp.Description(fmt.Sprintf("Parameter %d of tool %d: %s", p, i, strings.Repeat("what it means, ", 6)))))
		}
		opts = append(opts, mcp.WithString("message", mcp.Description("Text to echo back.")))
		s.AddTool(mcp.NewTool(fmt.Sprintf("tool_%03d", i), opts...), echo)
	}
}
