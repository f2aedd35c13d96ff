package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ardgate/ardgate/testdata/mcpfixture"

	"github.com/ardgate/ardgate/testdata/proctest"
)

var gatewayTools = []string{"attach_resource", "call_attached_tool", "cancel_task", "detach_resource", "discover_resources",
	"gateway_health", "list_attached_resources", "list_tasks", "message_task", "spawn_agent", "tool_search", "wait_task"}

type discovered struct {
	Count     int
	Results   []discoveredEntry
	PageToken string `json:"page_token"`
	Note      string
}

type discoveredEntry struct {
	URN              string
	Score            int
	RegistryID       string `json:"registry_id"`
	Attachable       bool
	WhyNotAttachable string   `json:"why_not_attachable"`
	MayNeedEnv       []string `json:"may_need_env"`
}

type attached struct {
	Status, Kind, Name, URN, Endpoint, Note string
	Tools                                   []struct{ Name string }
}

// needNPX skips tests of npm servers where npx cannot run them; CI
// installs them, so there the test runs.
func needNPX(t *testing.T) {
	if _, err := exec.LookPath("npx"); err != nil && os.Getenv("CI") == "" {
		t.Skip("npx is not installed")
	}
}

// The whole path over stdio with the real npm reference server: discover
// ranks it first, attach announces the new tools, the proxied call reaches
// it, detach removes the tools and the server's processes.
func TestStdioEverythingEndToEnd(t *testing.T) {
	needNPX(t)
	g := startStdio(t, env(false))

	if got := g.toolNames(); !slices.Equal(got, gatewayTools) {
		t.Fatalf("tools/list = %v, want %v", got, gatewayTools)
	}
	var d discovered
	g.ok("discover_resources", map[string]any{"text": "echo test tools"}, &d)
	if len(d.Results) == 0 || d.Results[0].URN != "urn:air:modelcontextprotocol.io:mcp:everything" {
		t.Fatalf("first result = %+v, want server-everything", d.Results)
	}
	if !d.Results[0].Attachable || d.Results[0].RegistryID != "builtin" {
		t.Fatalf("everything not attachable from builtin: %+v", d.Results[0])
	}

	g.drainNotes()
	var a attached
	g.ok("attach_resource", map[string]any{"urn": d.Results[0].URN}, &a)
	if a.Status != "attached" || a.Name != "everything" || a.Kind != "mcp_server" {
		t.Fatalf("attach = %+v", a)
	}
	g.waitNote("notifications/tools/list_changed", 10*time.Second)
	if !slices.Contains(g.toolNames(), "mcp_everything__echo") {
		t.Fatalf("mcp_everything__echo not listed: %v", g.toolNames())
	}

	res := g.call("mcp_everything__echo", map[string]any{"message": "hello from ardgate"})
	if res.IsError || text(res) != "Echo: hello from ardgate" {
		t.Fatalf("echo = %q (isError %v)", text(res), res.IsError)
	}

	// Its log comes through, at the level the client set, named by the
	// attachment: the server sends a message at once when told to log.
	var level mcp.SetLevelRequest
	level.Params.Level = mcp.LoggingLevelDebug
	if err := g.c.SetLevel(context.Background(), level); err != nil {
		t.Fatal(err)
	}
	g.drainNotes()
	if res := g.call("mcp_everything__toggle-simulated-logging", map[string]any{}); res.IsError {
		t.Fatalf("toggle-simulated-logging: %s", text(res))
	}
	if n := g.waitNote("notifications/message", 10*time.Second); n.Params.AdditionalFields["logger"] != "everything" {
		t.Fatalf("log message relayed as %+v; want the logger everything", n.Params.AdditionalFields)
	}

	// Its prompts and resources: a prompt under the exposed name, a
	// resource read by the server's template.
	ctx := context.Background()
	var get mcp.GetPromptRequest
	get.Params.Name = "mcp_everything__simple-prompt"
	if p, err := g.c.GetPrompt(ctx, get); err != nil || len(p.Messages) != 1 || p.Messages[0].Content.(mcp.TextContent).Text != "This is a simple prompt without arguments." {
		t.Fatalf("prompts/get %s: %+v %v", get.Params.Name, p, err)
	}
	// Completion of a prompt's argument, its context passed on.
	var complete mcp.CompleteRequest
	complete.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: "mcp_everything__completable-prompt"}
	complete.Params.Argument.Name, complete.Params.Argument.Value = "name", "A"
	complete.Params.Context.Arguments = map[string]string{"department": "Engineering"}
	if c, err := g.c.Complete(ctx, complete); err != nil || !slices.Equal(c.Completion.Values, []string{"Alice"}) {
		t.Fatalf("completion/complete of completable-prompt's name in Engineering: %+v %v; want Alice", c, err)
	}
	var read mcp.ReadResourceRequest
	read.Params.URI = "demo://resource/dynamic/text/1"
	if r, err := g.c.ReadResource(ctx, read); err != nil || len(r.Contents) != 1 || !strings.HasPrefix(r.Contents[0].(mcp.TextResourceContents).Text, "Resource 1: ") {
		t.Fatalf("resources/read %s: %+v %v", read.Params.URI, r, err)
	}

	pid := g.pidOf("everything")
	g.drainNotes()
	var det struct{ Status string }
	g.ok("detach_resource", map[string]any{"urn": a.URN}, &det)
	if det.Status != "detached" {
		t.Fatalf("detach = %+v", det)
	}
	g.waitNote("notifications/tools/list_changed", 10*time.Second)
	if got := g.toolNames(); !slices.Equal(got, gatewayTools) {
		t.Fatalf("after detach tools/list = %v", got)
	}
	waitGroupGone(t, pid, 5*time.Second)
}

// The npm reference server over streamable HTTP, pinned. The TypeScript
// SDK answers every call as an event stream, which the fast path reads
// itself (attach/post.go): results, structured content and a rejection of
// bad arguments are the server's path's, byte for byte.
func TestStdioEverythingOverHTTP(t *testing.T) {
	needNPX(t)
	g := pinHTTP(t, "everything", startEverythingHTTP(t), "mcp_everything__get-sum")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"echo", map[string]any{"message": "over http"}},
		{"get-sum", map[string]any{"a": 2, "b": 40}},
		{"get-structured-content", map[string]any{"location": "New York"}},
		{"get-sum", map[string]any{"a": "two"}}, // the server rejects the arguments
	} {
		fast := g.call("mcp_everything__"+c.tool, c.args)
		slow := g.call("call_attached_tool", map[string]any{"name": "mcp_everything__" + c.tool, "arguments": c.args})
		fj, _ := json.Marshal(fast)
		sj, _ := json.Marshal(slow)
		if string(fj) != string(sj) {
			t.Errorf("%s(%v):\nfast   %s\nserver %s", c.tool, c.args, fj, sj)
		}
	}
	if res := g.call("mcp_everything__echo", map[string]any{"message": "over http"}); text(res) != "Echo: over http" {
		t.Errorf("echo = %q", text(res))
	}
}

// The core path without npm: the Go fixture, launched through the same npx
// plan (a stand-in npx is first on PATH).
func TestStdioFixtureEndToEnd(t *testing.T) {
	g := startStdio(t, env(true, "SECRET_TOKEN=x"), "--catalog", "testdata/catalogs/fixture.json")

	var d discovered
	g.ok("discover_resources", map[string]any{"text": "fixture echo add tools", "registry_id": "fixture"}, &d)
	if d.Results[0].URN != "urn:air:ardgate.test:mcp:fixture" || d.Note == "" {
		t.Fatalf("discover = %+v", d)
	}
	g.drainNotes()
	res := g.callMeta("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, &mcp.Meta{ProgressToken: "attach-1"})
	if res.IsError {
		t.Fatalf("attach: %s", text(res))
	}
	// The server's instructions come with it, cleaned, said to be its own.
	var told struct {
		Instructions string `json:"server_instructions"`
		Note         string
	}
	if err := json.Unmarshal(res.RawStructuredContent, &told); err != nil || told.Instructions != mcpfixture.Instructions+"[31m" || !strings.Contains(told.Note, "the server's own words") {
		t.Fatalf("attach's server_instructions %q, note %q (%v)", told.Instructions, told.Note, err)
	}
	g.waitNote("notifications/tools/list_changed", 10*time.Second)
	var stages []string
	for _, n := range g.notesSince("notifications/progress") {
		if n.Params.AdditionalFields["progressToken"] == "attach-1" {
			stages = append(stages, n.Params.AdditionalFields["message"].(string))
		}
	}
	if want := []string{"resolving", "fetching card", "starting", "initialising", "listing tools"}; !slices.Equal(stages, want) {
		t.Fatalf("attach progress stages %v, want %v", stages, want)
	}

	// The upstream's own progress reaches the caller under its token.
	g.drainNotes()
	res = g.callMeta("mcp_fixture__slow", map[string]any{"ms": 300}, &mcp.Meta{ProgressToken: 42})
	if res.IsError {
		t.Fatalf("slow: %s", text(res))
	}
	relayed := g.notesSince("notifications/progress")
	if len(relayed) == 0 || relayed[0].Params.AdditionalFields["progressToken"] != float64(42) {
		t.Fatalf("upstream progress not relayed: %+v", relayed)
	}

	// The upstream's whole schema and annotations pass through.
	raw := g.rawTools()["mcp_fixture__schema_probe"]
	var probe struct {
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations struct {
			ReadOnlyHint *bool  `json:"readOnlyHint"`
			Title        string `json:"title"`
		} `json:"annotations"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		t.Fatalf("schema_probe not listed: %v (%s)", err, raw)
	}
	assertJSONEqual(t, probe.InputSchema, json.RawMessage(mcpfixture.SchemaProbeInputSchema))
	if probe.Annotations.ReadOnlyHint == nil || !*probe.Annotations.ReadOnlyHint || probe.Annotations.Title != "Schema probe" {
		t.Fatalf("annotations lost: %s", raw)
	}

	// Results pass through whole: text, structuredContent, large integers.
	res = g.call("mcp_fixture__add", map[string]any{"a": 2, "b": 3.5})
	assertJSONEqual(t, res.RawStructuredContent, json.RawMessage(`{"sum":5.5}`))
	res = g.call("mcp_fixture__schema_probe", json.RawMessage(`{"mode":"fast","id":9007199254740993}`))
	if !strings.Contains(string(res.RawStructuredContent), "9007199254740993") {
		t.Fatalf("large integer mangled: %s", res.RawStructuredContent)
	}
	res = g.call("call_attached_tool", map[string]any{"name": "mcp_fixture__echo", "arguments": map[string]any{"message": "via call_attached_tool"}})
	if text(res) != "via call_attached_tool" {
		t.Fatalf("call_attached_tool echo = %q", text(res))
	}

	// The child sees PATH and nothing else of the gateway's environment.
	var envOut struct {
		Env   []string
		Pgid  int
		Cwd   string
		InCwd []string `json:"in_cwd"`
	}
	decode(t, g.call("mcp_fixture__env", map[string]any{}), &envOut)
	for _, kv := range envOut.Env {
		if !strings.HasPrefix(kv, "PATH=") {
			t.Errorf("child environment leaks %q", kv)
		}
	}
	// It runs in an empty directory of its own, not the gateway's (where
	// a project's .npmrc would choose what npx fetches), gone once it
	// has exited.
	if here, _ := os.Getwd(); envOut.Cwd == "" || envOut.Cwd == here || len(envOut.InCwd) > 0 || !strings.HasPrefix(filepath.Base(envOut.Cwd), "ardgate-run-") {
		t.Errorf("the child runs in %q, holding %v (the gateway in %s)", envOut.Cwd, envOut.InCwd, here)
	}
	pid := g.pidOf("fixture")
	if envOut.Pgid != pid {
		t.Errorf("child pgid %d, want its own group %d", envOut.Pgid, pid)
	}

	// A grandchild in the group goes too when the server is detached.
	var child struct {
		ChildPID int `json:"child_pid"`
	}
	decode(t, g.call("mcp_fixture__spawn_child", map[string]any{}), &child)
	if !slices.Contains(proctest.GroupMembers(pid), child.ChildPID) {
		t.Fatalf("grandchild %d not in group %d", child.ChildPID, pid)
	}
	// One that left the group (setsid, as browsers are started) goes too.
	var escaped struct {
		ChildPID int `json:"child_pid"`
	}
	decode(t, g.call("mcp_fixture__spawn_child", map[string]any{"own_session": true}), &escaped)
	if slices.Contains(proctest.GroupMembers(pid), escaped.ChildPID) || !proctest.Alive(escaped.ChildPID) {
		t.Fatalf("the grandchild %d that left the group: in it, or not running", escaped.ChildPID)
	}
	g.ok("detach_resource", map[string]any{"name": "fixture"}, nil)
	waitGroupGone(t, pid, 5*time.Second)
	for deadline := time.Now().Add(5 * time.Second); proctest.Alive(escaped.ChildPID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			killGroup(escaped.ChildPID) // it leads a group of its own
			t.Fatalf("the grandchild %d that left the group outlived the detach", escaped.ChildPID)
		}
	}
	if slices.ContainsFunc(g.toolNames(), func(n string) bool { return strings.HasPrefix(n, "mcp_fixture__") }) {
		t.Fatalf("fixture tools still listed after detach")
	}
	if _, err := os.Stat(envOut.Cwd); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the child's directory %s after detach: %v", envOut.Cwd, err)
	}
}

func assertJSONEqual(t *testing.T, got, want json.RawMessage) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("bad JSON %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		t.Fatalf("bad JSON %s: %v", want, err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("JSON differs:\n got %s\nwant %s", ja, jb)
	}
}

// Over stdio the gateway serves the protocol versions with sessions, as
// over HTTP: mcp-go's default client, which tries the stateless protocol
// (2026-07-28) first, learns so and negotiates down to 2025-11-25, and gets
// the pinned servers at once. Served statelessly, it never sent
// initialize, so the pinned servers never started; each tools/list took
// 10 s and listed none of their tools, and a call of one never came back.
// A request of the stateless protocol gets the error naming the versions
// served, under its id.
func TestStdioStatelessClientNegotiatesDown(t *testing.T) {
	cfg := writeConfig(t, map[string]any{"servers": []any{map[string]any{"name": "fx", "command": fixtureBin, "args": []string{"--transport=stdio"}}}})
	g := startStdioAs(t, env(false, "ARDGATE_CONFIG="+cfg), nil)
	if g.version != mcp.ProtocolVersion20251125 {
		t.Fatalf("negotiated %q", g.version)
	}
	start := time.Now()
	if !slices.Contains(g.toolNames(), "mcp_fx__echo") || time.Since(start) > 5*time.Second {
		t.Fatalf("the pinned server's tools in %s: %v", time.Since(start), g.toolNames())
	}
	if res := g.call("mcp_fx__echo", map[string]any{"message": "hi"}); text(res) != "hi" {
		t.Fatalf("echo: %q", text(res))
	}

	raw := startRaw(t, env(false))
	meta := map[string]any{"_meta": map[string]any{mcp.MetaKeyProtocolVersion: mcp.ProtocolVersion20260728, mcp.MetaKeyClientInfo: map[string]any{"name": "raw", "version": "1"}, mcp.MetaKeyClientCapabilities: map[string]any{}}}
	params, _ := json.Marshal(meta)
	for _, method := range []string{"server/discover", "tools/list"} {
		raw.send(`{"jsonrpc":"2.0","id":"s-1","method":"` + method + `","params":` + string(params) + `}`)
		m := raw.response()
		e, _ := m["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		supported, _ := data["supported"].([]any)
		if m["id"] != "s-1" || e["code"] != float64(mcp.UNSUPPORTED_PROTOCOL_VERSION) || len(supported) == 0 || slices.Contains(supported, any(mcp.ProtocolVersion20260728)) || !slices.Contains(supported, any(mcp.ProtocolVersion20251125)) {
			t.Errorf("%s in the stateless protocol: %v", method, m)
		}
	}
	raw.end()
}

// A launched server runs under the limits the operator set, each of its
// processes (read from /proc), and one that runs out of memory under them
// is said to have, naming the setting to raise.
func TestStdioServerLimits(t *testing.T) {
	cfg := writeConfig(t, map[string]any{
		"servers": []any{map[string]any{"name": "fx", "command": fixtureBin, "args": []string{"--transport=stdio"}}},
		"stdio":   map[string]any{"memory_mib": 256, "open_files": 64, "file_mib": 1, "cpu_seconds": 600},
	})
	g := startStdio(t, env(false), "--config", cfg)
	if got := text(g.call("mcp_fx__echo", map[string]any{"message": "hi"})); got != "hi" {
		t.Fatalf("echo under limits: %q", got)
	}
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", g.pidOf("fx")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`Max data size\s+268435456\s+268435456\s+bytes`,
		`Max core file size\s+0\s+0\s+bytes`,
		`Max open files\s+64\s+64\s+files`,
		`Max file size\s+1048576\s+1048576\s+bytes`,
		`Max cpu time\s+600\s+605\s+seconds`,
	} {
		if !regexp.MustCompile(want).Match(limits) {
			t.Errorf("the server's limits lack %s:\n%s", want, limits)
		}
	}
	// 60 MB of answer takes the fixture past 256 MiB.
	msg := g.fails("mcp_fx__big", map[string]any{"bytes": 60_000_000}, "upstream_down")
	// Go's runtime says "runtime: cannot allocate memory", or "out of
	// memory allocating heap arena metadata", as the allocation goes.
	if !regexp.MustCompile(`its stderr says: fatal error: [^;]*(out of memory|cannot allocate memory)[^;]*; its stderr ends with: …`).MatchString(msg) ||
		!strings.Contains(msg, "it looks out of memory, and the gateway holds each process of a server to 256 MiB (stdio.memory_mib)") {
		t.Fatalf("out of memory told as %q", msg)
	}
}

// Bad input of every kind gets a clear isError result, and the same
// session goes on working after each.
func TestStdioBadInput(t *testing.T) {
	g := startStdio(t, env(true), "--catalog", "testdata/catalogs/fixture.json")
	stillWorks := func(t *testing.T) {
		t.Helper()
		var d discovered
		// A different text each time: the loop guard refuses repeats.
		g.ok("discover_resources", map[string]any{"text": "fixture " + t.Name()}, &d)
		if d.Count == 0 {
			t.Fatal("session no longer discovers")
		}
	}
	cases := []struct {
		name, tool string
		args       any
		code       string
		says       string
	}{
		{"unknown URN", "attach_resource", map[string]any{"urn": "urn:air:nowhere.example:mcp:ghost"}, "unknown_urn", "discover_resources"},
		{"not a URN", "attach_resource", map[string]any{"urn": "ghost"}, "invalid_arguments", "urn:air:"},
		{"missing urn", "attach_resource", map[string]any{}, "invalid_arguments", `"urn" is required`},
		{"unknown argument", "discover_resources", map[string]any{"text": "x", "colour": "red"}, "invalid_arguments", `unknown argument "colour"`},
		{"wrong type", "discover_resources", map[string]any{"text": "x", "page_size": "ten"}, "invalid_arguments", `"page_size" must be an integer`},
		{"page size too big", "discover_resources", map[string]any{"text": "x", "page_size": 1000}, "invalid_arguments", "between 1 and 100"},
		{"page size zero", "discover_resources", map[string]any{"text": "x", "page_size": 0}, "invalid_arguments", "between 1 and 100"},
		{"tool_search limit zero", "tool_search", map[string]any{"query": "x", "limit": 0}, "invalid_arguments", `"limit" must be between 1 and 50`},
		{"tool_search limit over its schema's 50", "tool_search", map[string]any{"query": "x", "limit": 51}, "invalid_arguments", `"limit" must be between 1 and 50`},
		{"tool_search limit negative", "tool_search", map[string]any{"query": "x", "limit": -3}, "invalid_arguments", `"limit" must be between 1 and 50`},
		{"bad filter", "discover_resources", map[string]any{"text": "x", "filter": map[string]any{"tags": 3}}, "invalid_arguments", "string or an array"},
		// Said once, as the caller's mistake: each registry said it, as its own error.
		{"unknown filter field", "discover_resources", map[string]any{"text": "x", "filter": map[string]any{"nope": []string{"x"}}}, "invalid_arguments", `field "nope" does not exist`},
		{"bad page token", "discover_resources", map[string]any{"text": "x", "page_token": "!!"}, "invalid_arguments", "page_token"},
		{"unknown registry", "discover_resources", map[string]any{"text": "x", "registry_id": "nope"}, "unknown_registry", "configured registries"},
		{"no endpoint", "attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:tools-only"}, "not_attachable", "no endpoint"},
		{"A2A over gRPC only", "attach_resource", map[string]any{"urn": "urn:air:ardgate.test:agent:v1-only"}, "not_implemented", "GRPC 1.0"},
		{"exits at once", "attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture-exits"}, "start_failed", "exiting at start as asked"},
		{"exits at once, a variable it declares unset", "attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture-exits"}, "start_failed",
			"its package declares FIXTURE_TOKEN, which the operator has not passed: it may need them"},
		{"detach unknown", "detach_resource", map[string]any{"name": "ghost"}, "not_attached", "list_attached_resources"},
		{"call unknown tool", "call_attached_tool", map[string]any{"name": "mcp_ghost__x"}, "unknown_tool", "attach_resource"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := g.fails(c.tool, c.args, c.code)
			if !strings.Contains(msg, c.says) {
				t.Fatalf("message %q does not say %q", msg, c.says)
			}
			stillWorks(t)
		})
	}

	t.Run("discover names what a launch may need", func(t *testing.T) {
		var d discovered
		g.ok("discover_resources", map[string]any{"text": "fixture that exits at start", "registry_id": "fixture"}, &d)
		i := slices.IndexFunc(d.Results, func(r discoveredEntry) bool { return r.URN == "urn:air:ardgate.test:mcp:fixture-exits" })
		if i < 0 || !d.Results[i].Attachable || !slices.Equal(d.Results[i].MayNeedEnv, []string{"FIXTURE_TOKEN"}) {
			t.Fatalf("fixture-exits = %+v", d.Results)
		}
		if j := slices.IndexFunc(d.Results, func(r discoveredEntry) bool { return r.URN == "urn:air:ardgate.test:mcp:fixture" }); j >= 0 && d.Results[j].MayNeedEnv != nil {
			t.Fatalf("fixture, which declares no variable, may need %v", d.Results[j].MayNeedEnv)
		}
	})

	t.Run("discover explains why not attachable", func(t *testing.T) {
		var d discovered
		g.ok("discover_resources", map[string]any{"text": "tools only card", "registry_id": "fixture"}, &d)
		for _, r := range d.Results {
			if r.URN == "urn:air:ardgate.test:mcp:tools-only" {
				if r.Attachable || !strings.Contains(r.WhyNotAttachable, "no endpoint") {
					t.Fatalf("tools-only = %+v", r)
				}
				return
			}
		}
		t.Fatalf("tools-only not found in %+v", d.Results)
	})

	t.Run("upstream dies mid-call", func(t *testing.T) {
		g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, nil)
		first := g.pidOf("fixture")
		msg := g.fails("mcp_fixture__crash", map[string]any{}, "upstream_down")
		if !strings.Contains(msg, "exited with status 3") || !strings.Contains(msg, "the next call starts it again (at most every 5s)") {
			t.Fatalf("crash message %q", msg)
		}
		// What it last said on stderr says why (as for a failed start),
		// after 600 bytes of banner: the end is kept.
		l := g.list()
		if why := l.Attachments[0].WhyDown; l.Attachments[0].Status != "down" || !strings.Contains(why, "status 3; its stderr ends with: …") ||
			!strings.HasSuffix(why, "log mcpfixture: crashing as asked") {
			t.Fatalf("listing after crash: %+v", l.Attachments)
		}
		// The operator hears of it too, naming the session and server.
		if !regexp.MustCompile(`WRN upstream down session=stdio upstream=fixture why="the process exited with status 3;`).MatchString(g.stderr.String()) {
			t.Fatalf("the crash was not logged:\n%s", g.stderr.String())
		}
		// And of what it said, line by line, as it said it.
		for _, line := range []string{"banner line 0 of a chatty start-up log", "banner line 11 of a chatty start-up log", "crashing as asked"} {
			if !strings.Contains(g.stderr.String(), `INF upstream stderr session=stdio upstream=fixture line="mcpfixture: `+line+`"`) {
				t.Fatalf("its stderr line %q was not logged:\n%s", line, g.stderr.String())
			}
		}
		// The next call starts it again; a call within 5 s of that start
		// does not, should it have died again.
		if got := text(g.call("mcp_fixture__echo", map[string]any{"message": "again"})); got != "again" {
			t.Fatalf("the call after the crash: %q", got)
		}
		if l := g.list(); l.Attachments[0].Status != "up" || l.Attachments[0].PID == first {
			t.Fatalf("listing after the next call: %+v (pid %d before)", l.Attachments, first)
		}
		if !strings.Contains(g.stderr.String(), "a server that went down is up again session=stdio upstream=fixture") {
			t.Fatalf("the start again was not logged:\n%s", g.stderr.String())
		}
		g.fails("mcp_fixture__crash", map[string]any{}, "upstream_down")
		// Saying when, for a model that would try again at once.
		if msg := g.fails("mcp_fixture__echo", map[string]any{"message": "x"}, "upstream_down"); !regexp.MustCompile(`the next call starts it again, [0-9.]+s from now \(at most every 5s\)`).MatchString(msg) {
			t.Fatalf("a call within 5 s: %q", msg)
		}

		// Attach again: same name, fresh process, at once.
		var a attached
		g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, &a)
		if a.Status != "attached" || a.Name != "fixture" {
			t.Fatalf("re-attach = %+v", a)
		}
		pid := g.pidOf("fixture")

		// Killed from outside while a call is in flight.
		done := g.callRunning("mcp_fixture__slow", map[string]any{"ms": 10000})
		killGroup(pid)
		select {
		case res := <-done:
			if msg := text(res); !strings.Contains(msg, "killed") {
				t.Fatalf("slow call after kill: %q", msg)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("in-flight call did not fail after its upstream was killed")
		}
		stillWorks(t)
		g.ok("detach_resource", map[string]any{"name": "fixture"}, nil)
	})

	t.Run("idempotent attach", func(t *testing.T) {
		var a, b attached
		g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, &a)
		g.ok("attach_resource", map[string]any{"urn": "urn:ai:ARDGATE.test:mcp:fixture"}, &b)
		if a.Status != "attached" || b.Status != "already_attached" || b.Name != a.Name {
			t.Fatalf("attach twice: %+v then %+v", a, b)
		}
		if l := g.list(); l.Count != 1 {
			t.Fatalf("two attachments for one URN: %+v", l)
		}
		// The audit says what became of each, under the URN as kept.
		for _, line := range []string{
			`audit audit=attach session=stdio target=urn:air:ardgate.test:mcp:fixture status=attached name=fixture kind=mcp_server registry=fixture endpoint="stdio: npx -y -- @ardgate-test/fixture@1.0.0 --transport=stdio" pid=[1-9]`,
			`audit audit=attach session=stdio target=urn:air:ardgate.test:mcp:fixture status=already_attached name=fixture`,
		} {
			if !regexp.MustCompile(line).MatchString(g.stderr.String()) {
				t.Fatalf("no audit line %s in\n%s", line, g.stderr.String())
			}
		}
		g.fails("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:calendar", "name": "fixture"}, "name_taken")
		// Asked as it would not be kept, the name is said as it becomes.
		if msg := g.fails("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:calendar", "name": "Fixture!!"}, "name_taken"); !strings.Contains(msg, `"fixture" (the name "Fixture!!" becomes)`) {
			t.Fatalf("a name taken once cleaned: %s", msg)
		}
		g.ok("detach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, nil)
	})
}

// The same discover repeated in a short window is refused by the loop
// guard, also when only case and white space change (which search the
// same); a different request still goes through.
func TestStdioLoopGuard(t *testing.T) {
	g := startStdio(t, env(true), "--catalog", "testdata/catalogs/fixture.json")
	same := []string{"fixture", "Fixture", " fixture ", "FIXTURE"}
	for i := range 10 {
		if res := g.call("discover_resources", map[string]any{"text": same[i%len(same)]}); res.IsError {
			t.Fatalf("discover %d refused too early: %s", i, text(res))
		}
	}
	msg := g.fails("discover_resources", map[string]any{"text": "fixture  "}, "loop_guard")
	if !strings.Contains(msg, "10 times") {
		t.Fatalf("loop guard message %q", msg)
	}
	g.ok("discover_resources", map[string]any{"text": "fixture", "page_size": 3}, nil)
}

func TestStdioAttachmentCap(t *testing.T) {
	g := startStdio(t, env(true, "ARDGATE_MAX_ATTACHMENTS=1"), "--catalog", "testdata/catalogs/fixture.json")
	g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, nil)
	msg := g.fails("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:calendar"}, "cap_reached")
	if !strings.Contains(msg, "1 of 1") || !strings.Contains(msg, "detach_resource") {
		t.Fatalf("cap message %q", msg)
	}
	// Detaching frees the slot.
	g.ok("detach_resource", map[string]any{"name": "fixture"}, nil)
	g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, nil)
}

// A remote (streamable HTTP) server that dies mid-call: the call and the
// other call in flight to it end at once with a sentence, not at their
// timeout, and the session goes on with its other servers.
func TestStdioRemoteUpstreamDiesMidCall(t *testing.T) {
	remote := startFixtureHTTP(t)
	g := startStdio(t, env(true, "ARDGATE_ALLOW_LOCAL_URLS=true"), "--catalog", catalogWithRemote(t, remote))
	for _, urn := range []string{"urn:air:ardgate.test:mcp:remote-fixture", "urn:air:ardgate.test:mcp:fixture"} {
		g.ok("attach_resource", map[string]any{"urn": urn}, nil)
	}
	if got := text(g.call("mcp_remote_fixture__echo", map[string]any{"message": "before"})); got != "before" {
		t.Fatalf("remote echo = %q", got)
	}
	start := time.Now()
	slow := g.callRunning("mcp_remote_fixture__slow", map[string]any{"ms": 20000})
	msg := g.fails("mcp_remote_fixture__crash", map[string]any{}, "upstream_down")
	if !strings.Contains(msg, "closed the connection without answering") {
		t.Errorf("crash message %q", msg)
	}
	t.Logf("the crashing call: %s", msg)
	select {
	case res := <-slow:
		got := fmt.Sprint(res.IsError, " ", text(res))
		t.Logf("the call in flight: %s", got)
		if !strings.HasPrefix(got, "true ") || !strings.Contains(got, "upstream is down") {
			t.Errorf("the call in flight when the server died: %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight when the server died still waits after 10 s")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the calls took %s to end", took)
	}
	g.fails("mcp_remote_fixture__echo", map[string]any{"message": "after"}, "upstream_down")
	if got := text(g.call("mcp_fixture__echo", map[string]any{"message": "local"})); got != "local" {
		t.Fatalf("the local server after the remote died: %q", got)
	}
	if res := g.call("gateway_health", map[string]any{}); res.IsError {
		t.Fatalf("gateway_health: %s", text(res))
	}
}

// A malformed frame gets a JSON-RPC parse error, and the next request on
// the same stdin is served: nothing but frames on stdout throughout.
func TestStdioMalformedFrame(t *testing.T) {
	g := startRaw(t, env(false))
	send, read := g.send, g.read
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"`) // cut short
	m := read()
	if e, _ := m["error"].(map[string]any); e == nil || e["code"].(float64) != -32700 {
		t.Fatalf("malformed frame answered %v, want parse error -32700", m)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if m := read(); m["id"].(float64) != 3 || m["result"] == nil {
		t.Fatalf("after a bad frame, tools/list = %v", m)
	}
	// A frame over the 10 MiB cap is read through and refused, saying so,
	// under its id wherever it lies (the TypeScript SDK writes it last);
	// a notification over the cap is dropped unanswered. The gateway
	// neither dies nor buffers the frame whole.
	big := `"params":{"name":"discover_resources","arguments":{"text":"` + strings.Repeat("a", 11<<20) + `"}}`
	for _, tc := range []struct {
		frame string
		id    any
	}{
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call",` + big + `}`, float64(4)},
		{`{"jsonrpc":"2.0","method":"tools/call",` + big + `,"id":"six"}`, "six"},
		{`{"jsonrpc":"2.0","method":"notifications/message",` + big + `}`, nil},
	} {
		send(tc.frame)
		if tc.id == nil {
			continue // the next answer read is the listing's
		}
		m := read()
		if e, _ := m["error"].(map[string]any); e == nil || m["id"] != tc.id || !strings.Contains(fmt.Sprint(e["message"]), "larger than the gateway's 10 MiB cap") {
			t.Fatalf("over-size frame answered %.200v, want the cap said, under id %v", m, tc.id)
		}
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	if m := read(); m["id"].(float64) != 5 || m["result"] == nil {
		t.Fatalf("after an over-size frame, tools/list = %v", m)
	}
	g.end()
}

// When the client goes away (stdin closes) or the gateway gets SIGTERM,
// every attached server's process group goes with the session.
//
// The client may also stop reading: closing its end of stdout ends the
// session (the gateway ignores SIGPIPE, which ended it before it ended its
// upstreams), and a SIGTERM ends the gateway even while its writes to a
// stdout nobody reads are stuck.
func TestStdioSessionEndKillsChildren(t *testing.T) {
	for _, how := range []string{"stdin closed", "SIGTERM", "stdout closed", "SIGTERM, stdout unread"} {
		t.Run(how, func(t *testing.T) {
			g := startRaw(t, env(true), "--catalog", "testdata/catalogs/fixture.json")
			rpc := g.rpc
			rpc("tools/call", map[string]any{"name": "attach_resource", "arguments": map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}})
			res := rpc("tools/call", map[string]any{"name": "list_attached_resources", "arguments": map[string]any{}})
			var l listing
			raw, _ := json.Marshal(res["result"].(map[string]any)["structuredContent"])
			_ = json.Unmarshal(raw, &l)
			if len(l.Attachments) != 1 || l.Attachments[0].PID == 0 {
				t.Fatalf("listing: %s", raw)
			}
			pid := l.Attachments[0].PID
			res = rpc("tools/call", map[string]any{"name": "mcp_fixture__spawn_child", "arguments": map[string]any{}})
			if res["result"].(map[string]any)["isError"] == true {
				t.Fatalf("spawn_child: %v", res)
			}
			exited := func(within time.Duration) {
				t.Helper()
				done := make(chan error, 1)
				go func() { done <- g.cmd.Wait() }()
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("gateway exit: %v (stderr: %s)", err, g.stderr.String())
					}
				case <-time.After(within):
					t.Fatalf("the gateway still runs %s on (stderr: %s)", within, g.stderr.String())
				}
			}
			switch how {
			case "SIGTERM":
				_ = g.cmd.Process.Signal(syscall.SIGTERM)
				exited(15 * time.Second)
			case "stdout closed":
				_ = g.outEnd.Close()
				g.send(request(99, "ping", nil)) // its answer meets the closed pipe
				exited(5 * time.Second)
			case "SIGTERM, stdout unread":
				// Listings of 20 tools each, unread, until the pipe is full
				// and the gateway's writes wait: 100 of them are twice what
				// a pipe of 64 KiB takes.
				for i := range 100 {
					g.send(request(100+i, "tools/list", map[string]any{}))
				}
				g.waitWriteWaits()
				_ = g.cmd.Process.Signal(syscall.SIGTERM)
				exited(15 * time.Second)
			default:
				g.end()
			}
			waitGroupGone(t, pid, 5*time.Second)
		})
	}
}

// An answer over the 10 MiB frame cap from a stdio upstream fails that
// call alone: it is read through and dropped, and the server stays up. A
// server that floods its stdout without end is cut off and reported
// down; attaching it again brings a fresh one.
func TestStdioUpstreamFlood(t *testing.T) {
	g := startStdio(t, env(true), "--catalog", "testdata/catalogs/fixture.json")
	g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, nil)
	for _, call := range []struct{ name, args string }{
		{"mcp_fixture__big", `{"bytes":11534336}`},
		{"call_attached_tool", `{"name":"mcp_fixture__big","arguments":{"bytes":11534336}}`},
	} {
		msg := g.fails(call.name, json.RawMessage(call.args), "upstream_error")
		if !strings.Contains(msg, "fixture: its answer to big: the answer is larger than the 10 MiB cap; ask it for less") {
			t.Fatalf("an 11 MiB answer through %s: %q", call.name, msg)
		}
		if got := text(g.call("mcp_fixture__echo", map[string]any{"message": "after"})); got != "after" {
			t.Fatalf("the call after an 11 MiB answer: %q", got)
		}
	}
	pid := g.list().Attachments[0].PID
	msg := g.fails("mcp_fixture__flood", map[string]any{}, "upstream_down")
	if !strings.Contains(msg, "ended as a flood") {
		t.Fatalf("flood message %q", msg)
	}
	waitGroupGone(t, pid, 5*time.Second)
	g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, nil)
	if got := text(g.call("mcp_fixture__echo", map[string]any{"message": "after the flood"})); got != "after the flood" {
		t.Fatalf("after re-attach: %q", got)
	}
}

// An upstream that writes malformed frames (non-JSON, a reply to no
// request) does not confuse the gateway: the call's own reply arrives and
// the upstream stays up.
func TestStdioUpstreamMalformedFrames(t *testing.T) {
	g := startStdio(t, env(true), "--catalog", "testdata/catalogs/fixture.json")
	g.ok("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, nil)
	if got := text(g.call("mcp_fixture__garbage", map[string]any{})); got != "wrote garbage" {
		t.Fatalf("garbage call: %q", got)
	}
	if got := text(g.call("mcp_fixture__echo", map[string]any{"message": "fine"})); got != "fine" {
		t.Fatalf("after garbage: %q", got)
	}
	if l := g.list(); l.Attachments[0].Status != "up" {
		t.Fatalf("listing after garbage: %+v", l.Attachments[0])
	}
}

// An upstream that stops reading its input, as a server does that reads
// one request at a time while it works on a call, holds up only the calls
// to it. The session's other calls are answered meanwhile; the requests
// sent to it, far more than its stdin pipe holds, reach it whole once it
// reads again; past 10 MiB waiting, a call to it is refused with a
// sentence, and it stays up.
func TestStdioUpstreamNotReading(t *testing.T) {
	path := writeJSON(t, filepath.Join(t.TempDir(), "ardgate.json"), map[string]any{"servers": []any{
		map[string]any{"name": "busy", "command": fixtureBin, "args": []string{"--transport=stdio"}},
		map[string]any{"name": "free", "command": fixtureBin, "args": []string{"--transport=stdio"}},
	}})
	g := startRaw(t, env(false), "--config", path)
	g.rpc("tools/list", nil) // waits for the pinned servers
	call := func(id int, tool string, args any) string {
		return request(id, "tools/call", map[string]any{"name": tool, "arguments": args})
	}
	// One write: the held server's calls first, so that a reader that
	// waited on its pipe would read nothing after them.
	const hold = 4 * time.Second
	frames := []string{call(9, "mcp_busy__slow", map[string]any{"ms": hold.Milliseconds(), "hold_input": true})}
	sent := map[int]int{} // id: message length
	for id := 10; id < 22; id++ {
		n := 1 << 20
		frames = append(frames, call(id, "mcp_busy__echo", map[string]any{"message": strings.Repeat("m", n)}))
		sent[id] = n
	}
	frames = append(frames,
		call(2, "mcp_free__echo", map[string]any{"message": "meanwhile"}),
		call(3, "gateway_health", map[string]any{}))
	held := time.Now()
	g.send(frames...)

	answered, refused := 0, 0
	for answered+refused < len(frames) {
		m := g.response()
		id := int(m["id"].(float64))
		res, _ := m["result"].(map[string]any)
		content, _ := res["content"].([]any)
		if res == nil || len(content) == 0 {
			t.Fatalf("id %d: %v", id, m)
		}
		text, _ := content[0].(map[string]any)["text"].(string)
		switch {
		case id == 9:
			if text != "slept 4000ms" {
				t.Fatalf("slow: %q", text)
			}
			answered++
		case id == 2 || id == 3:
			if since := time.Since(held); since >= hold {
				t.Fatalf("id %d answered %s after the hold began: it waited on the held server", id, since)
			}
			if id == 2 && text != "meanwhile" {
				t.Fatalf("free echo: %q", text)
			}
			answered++
		case res["isError"] == true:
			if !strings.Contains(text, "busy has stopped reading its input, so echo was not sent") {
				t.Fatalf("refusal %d: %q", id, text)
			}
			refused++
		default:
			if len(text) != sent[id] || strings.Trim(text, "m") != "" {
				t.Fatalf("echo %d came back with %d bytes, sent %d", id, len(text), sent[id])
			}
			answered++
		}
	}
	if refused == 0 || refused > 3 {
		t.Fatalf("%d of 12 MiB-sized calls refused, want those past 10 MiB waiting", refused)
	}
	var l listing
	raw, _ := json.Marshal(g.rpc("tools/call", map[string]any{"name": "list_attached_resources", "arguments": map[string]any{}})["result"].(map[string]any)["structuredContent"])
	_ = json.Unmarshal(raw, &l)
	for _, a := range l.Attachments {
		if a.Status != "up" {
			t.Fatalf("after the hold: %s", raw)
		}
	}
	if m := g.rpc("tools/call", map[string]any{"name": "mcp_busy__echo", "arguments": map[string]any{"message": "after"}}); !strings.Contains(fmt.Sprint(m), "after") {
		t.Fatalf("after the hold: %v", m)
	}
	g.end()
}

// Gateway tools that wait do not hold up the session's other calls: with
// eight slow calls through call_attached_tool in flight (mcp-go's stdio
// server runs five at a time by default), gateway_health is answered
// before any of them.
func TestStdioGatewayCallsInFlight(t *testing.T) {
	path := writeJSON(t, filepath.Join(t.TempDir(), "ardgate.json"), map[string]any{"servers": []any{
		map[string]any{"name": "fx", "command": fixtureBin, "args": []string{"--transport=stdio"}},
	}})
	g := startRaw(t, env(false), "--config", path)
	g.rpc("tools/list", nil) // waits for the pinned server
	var frames []string
	for id := 10; id < 18; id++ {
		frames = append(frames, request(id, "tools/call", map[string]any{
			"name": "call_attached_tool", "arguments": map[string]any{"name": "mcp_fx__slow", "arguments": map[string]any{"ms": 2000}}}))
	}
	g.send(append(frames, request(3, "tools/call", map[string]any{"name": "gateway_health", "arguments": map[string]any{}}))...)
	for n := range 9 {
		m := g.response()
		if n == 0 && m["id"] != float64(3) {
			t.Fatalf("first answer %.200v, want gateway_health's: it waited on the slow calls", m)
		}
		if res, _ := m["result"].(map[string]any); res == nil || res["isError"] == true {
			t.Fatalf("answer %v", m)
		}
	}
	g.end()
}

// A signal to stop lets running calls finish for up to 10 s; a second
// one ends that wait at once, and the upstreams are still ended. The exit
// status is 1, and the log says a call was cut: a supervisor can tell
// this exit from a clean one.
func TestStdioSecondSignalStopsAtOnce(t *testing.T) {
	g := startRaw(t, env(true), "--catalog", "testdata/catalogs/fixture.json")
	g.rpc("tools/call", map[string]any{"name": "attach_resource", "arguments": map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}})
	res := g.rpc("tools/call", map[string]any{"name": "list_attached_resources", "arguments": map[string]any{}})
	var l listing
	raw, _ := json.Marshal(res["result"].(map[string]any)["structuredContent"])
	if err := json.Unmarshal(raw, &l); err != nil || len(l.Attachments) != 1 {
		t.Fatalf("listing: %s", raw)
	}
	g.sendRunning(50, "mcp_fixture__slow", map[string]any{"ms": 20000})
	start := time.Now()
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	waitLog(t, g.stderr, "shutting down: letting running calls finish", 5*time.Second) // the drain began
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	// The cut call is answered, saying the shutdown cut it (it said
	// "cancelled: context canceled", as if the client had).
	if m := g.response(); m["id"] != float64(50) || !strings.Contains(fmt.Sprint(m["result"]), "code:shutting_down") {
		t.Fatalf("the call cut by the shutdown: %v", m)
	}
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("gateway exit: %v, want status 1", err)
		}
		if !strings.Contains(g.stderr.String(), "calls still running when the drain ended were cut (1 of them)") {
			t.Fatalf("the log does not say a call was cut: %s", g.stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the gateway still ran 5 s after the second signal (stderr: %s)", g.stderr.String())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("exit took %s", took)
	}
	waitGroupGone(t, l.Attachments[0].PID, 5*time.Second)
}

// A launcher not on the gateway's PATH (an IDE started from a desktop, or
// nvm's, gives it none with npx) fails the start saying so, and what to do.
func TestLauncherNotOnPath(t *testing.T) {
	g := startStdio(t, []string{"PATH=" + t.TempDir(), "HOME=" + os.Getenv("HOME")}, "--catalog", "testdata/catalogs/fixture.json")
	msg := g.fails("attach_resource", map[string]any{"urn": "urn:air:ardgate.test:mcp:fixture"}, "start_failed")
	if !strings.Contains(msg, "npx is not on the gateway's PATH: give ardgate a PATH that has it") {
		t.Fatalf("a launcher not on PATH: %q", msg)
	}
}
