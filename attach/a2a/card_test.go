package a2a

import (
	"slices"
	"strings"
	"testing"
)

// The dialect a card is spoken to in, and its endpoint: OpenFang's card
// and kagent's are tasks/send, kagent's from endpoints[type=a2a] with its
// string capabilities set aside; a v0.3 card stays v0.3.
func TestReadCardDialect(t *testing.T) {
	tests := []struct {
		name, card, endpoint string
		tasks                bool
		methods              []string
	}{
		{"openfang", `{"name":"code-reviewer","url":"http://127.0.0.1:50051/a2a","version":"0.1.0","capabilities":{"streaming":true}}`,
			"http://127.0.0.1:50051/a2a", true, nil},
		{"kagent", `{"name":"k8s-agent","version":"1.0.0","capabilities":["kubernetes-management"],
			"endpoints":[{"type":"streaming","url":"http://h/s","methods":["tasks/sendSubscribe"]},{"type":"a2a","url":"http://h/k8s-agent","methods":["tasks/send","tasks/status"]}]}`,
			"http://h/k8s-agent", true, []string{"tasks/send", "tasks/status"}},
		{"v0.3", `{"name":"helper","url":"http://h/a2a","protocolVersion":"0.3.0","preferredTransport":"JSONRPC"}`, "http://h/a2a", false, nil},
	}
	for _, tc := range tests {
		info, err := readCard([]byte(tc.card))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if info.endpoint() != tc.endpoint || info.tasks != tc.tasks || !slices.Equal(info.methods, tc.methods) {
			t.Errorf("%s: endpoint %q tasks %v methods %v", tc.name, info.endpoint(), info.tasks, info.methods)
		}
	}
}

// String capabilities are cleaned and bounded; a card whose capabilities
// are an object has none.
func TestStringCapabilities(t *testing.T) {
	long := strings.Repeat("x", 500)
	got := StringCapabilities([]byte(`{"capabilities":["kubernetes-\u202emanagement","` + long + `"," "]}`))
	if len(got) != 2 || got[0] != "kubernetes-management" || !strings.HasSuffix(got[1], "…") || len([]rune(got[1])) > 101 {
		t.Fatalf("capabilities %q", got)
	}
	if got := StringCapabilities([]byte(`{"capabilities":{"streaming":true}}`)); got != nil {
		t.Fatalf("object capabilities: %q", got)
	}
}

// The dialect's states map onto A2A's, and its messages are numbered by
// place, the status message that of the question asked.
func TestFromTasksTask(t *testing.T) {
	for in, want := range map[string]string{"inputRequired": "input-required", "input-required": "input-required",
		"cancelled": "canceled", "canceled": "canceled", "completed": "completed", "working": "working", "odd": "unknown"} {
		if got := string(fromTasksState(in)); got != want {
			t.Errorf("state %s: %s, want %s", in, got, want)
		}
	}
	task := fromTasksTask(&tsTask{ID: "t1", SessionID: "s1", Status: tsStatus{State: "inputRequired"}, Messages: []tsMessage{
		{Role: "user", Parts: []tsPart{{Type: "text", Text: "ask"}}},
		{Role: "agent", Parts: []tsPart{{Type: "text", Text: "what is your name?"}}},
	}})
	if task.ContextID != "s1" || len(task.History) != 2 || task.Status.Message == nil || task.Status.Message.ID != task.History[1].ID {
		t.Fatalf("task %+v", task)
	}
}
