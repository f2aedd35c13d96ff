package tools

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// startJSAgent runs the @a2a-js/sdk agent (testdata/a2a-js) on loopback.
// CI installs its packages; elsewhere the test is skipped without them.
func startJSAgent(t *testing.T, legacy bool) string {
	t.Helper()
	if _, err := os.Stat("../testdata/a2a-js/node_modules/@a2a-js/sdk"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must install testdata/a2a-js (npm ci)")
		}
		t.Skip("testdata/a2a-js is not installed (npm ci --prefix testdata/a2a-js)")
	}
	args := []string{"agent.mjs", "--port=0"}
	if legacy {
		args = append(args, "--legacy-compat")
	}
	cmd := exec.Command("node", args...)
	cmd.Dir = "../testdata/a2a-js"
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "READY ")
	if err != nil || !ok {
		t.Fatalf("JS agent did not start: %q %v", line, err)
	}
	return url
}

// The same task flows against a non-Go agent, once speaking A2A v1.0 only
// (our v1.0 client) and once with the SDK's v0.3 compatibility (a2a-go):
// the tools behave the same.
func TestJSAgent(t *testing.T) {
	for _, mode := range []struct {
		name     string
		legacy   bool
		protocol string
	}{{"v1.0 only", false, "1.0"}, {"legacy compat", true, "0.3"}} {
		t.Run(mode.name, func(t *testing.T) {
			url := startJSAgent(t, mode.legacy)
			tg := agentGateway(t, true, agentEntry("urn:air:agents.test:agent:js", url+"/.well-known/agent-card.json"))
			s := tg.connect(t)
			var att struct {
				Protocol string `json:"a2a_protocol"`
			}
			res := s.call("attach_resource", map[string]any{"urn": "urn:air:agents.test:agent:js"})
			if res.IsError || json.Unmarshal(res.RawStructuredContent, &att) != nil || att.Protocol != mode.protocol {
				t.Fatalf("attach: %s", firstText(res))
			}

			v := s.task(s.call("spawn_agent", map[string]any{"message": "reply hi"}))
			if v.State != "completed" || !v.said("echo: hi") {
				t.Fatalf("reply: %+v", v)
			}
			v = s.task(s.call("spawn_agent", map[string]any{"message": "stream 3"}))
			v = s.task(s.callWithToken("wait_task", map[string]any{"task_id": v.TaskID, "timeout_seconds": 10}, "js"))
			if v.State != "completed" || !v.said("done after 3 steps") {
				t.Fatalf("stream: %+v", v)
			}
			if m := v.repeated(); m != "" {
				t.Errorf("stream: %q twice in %q", m, v.conversation())
			}
			v = s.task(s.call("spawn_agent", map[string]any{"message": "ask"}))
			v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID}))
			if v.State != "input-required" || !v.said("what is your name?") {
				t.Fatalf("ask: %+v", v)
			}
			v = s.task(s.call("message_task", map[string]any{"task_id": v.TaskID, "message": "Ada"}))
			if v.State != "completed" || !v.said("hello Ada") {
				t.Fatalf("answer: %+v", v)
			}
			if c := strings.Join(v.conversation(), " | "); !strings.HasPrefix(c, "user: ask | agent: what is your name? | user: Ada") || v.repeated() != "" {
				t.Errorf("answer: the conversation %s", c)
			}
			v = s.task(s.call("spawn_agent", map[string]any{"message": "wait"}))
			res = s.call("cancel_task", map[string]any{"task_id": v.TaskID})
			if res.IsError || !strings.Contains(string(res.RawStructuredContent), `"canceled"`) {
				t.Fatalf("cancel: %s", firstText(res))
			}
			v = s.task(s.call("spawn_agent", map[string]any{"message": "fail"}))
			v = s.task(s.call("wait_task", map[string]any{"task_id": v.TaskID}))
			if v.State != "failed" {
				t.Fatalf("fail: %+v", v)
			}
			if code := s.code(s.call("cancel_task", map[string]any{"task_id": v.TaskID})); code != "" {
				// a finished task: cancel_task reports its state, no error
				t.Fatalf("cancel of a finished task: %s", code)
			}
			// v1.0 data may be any JSON value: an array failed every look
			// at the task, which stayed "submitted".
			v = s.task(s.call("spawn_agent", map[string]any{"message": "data"}))
			res = s.call("wait_task", map[string]any{"task_id": v.TaskID})
			if v = s.task(res); v.State != "completed" || !strings.Contains(string(res.RawStructuredContent), `[data] {\"value\":[{\"id\":1},{\"id\":2}]}`) {
				t.Fatalf("data: %s", res.RawStructuredContent)
			}
		})
	}
}
