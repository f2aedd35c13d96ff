package attach

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
)

// The store keeps at most max tasks; the oldest finished one goes first,
// and unfinished tasks are never dropped.
func TestTaskStoreEviction(t *testing.T) {
	s := taskStore{max: 3}
	agent := &Attachment{Name: "a"}
	add := func(id string, state a2a.TaskState) error {
		tk := &task{id: id, agent: agent}
		tk.apply(&a2a.Task{ID: a2a.TaskID(id), Status: a2a.TaskStatus{State: state}})
		return s.add(tk)
	}
	for i, st := range []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateCompleted, a2a.TaskStateWorking} {
		if err := add(fmt.Sprint("t", i), st); err != nil {
			t.Fatal(err)
		}
	}
	if err := add("t3", a2a.TaskStateWorking); err != nil {
		t.Fatalf("a finished task could have made room: %v", err)
	}
	if _, err := s.get("t1"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatal("the finished task was not the one evicted")
	}
	for _, id := range []string{"t0", "t2", "t3"} {
		if _, err := s.get(id); err != nil {
			t.Fatalf("unfinished %s dropped", id)
		}
	}
	if err := add("t4", a2a.TaskStateWorking); !errors.Is(err, ErrStoreFull) {
		t.Fatalf("full of unfinished tasks: %v", err)
	}
}

// A task keeps what its view can show, however many status updates and
// artifact chunks its agent streams, with a marker for what it left out.
// Text streamed in small chunks is joined, and kept whole.
func TestTaskBounds(t *testing.T) {
	tk := &task{id: "t", agent: &Attachment{Name: "a"}}
	tk.apply(&a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}})
	var streamed strings.Builder
	big := strings.Repeat("x", 3000) // two do not fit in one part
	for i := range 5000 {
		msg := a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: fmt.Sprint("step ", i)})
		tk.applyEvent(&a2a.TaskStatusUpdateEvent{TaskID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: msg}})
		chunk := fmt.Sprint("chunk ", i, "; ")
		streamed.WriteString(chunk)
		tk.applyEvent(&a2a.TaskArtifactUpdateEvent{TaskID: "t", Append: i > 0,
			Artifact: &a2a.Artifact{ID: "answer", Parts: a2a.ContentParts{a2a.TextPart{Text: chunk}}}})
		tk.applyEvent(&a2a.TaskArtifactUpdateEvent{TaskID: "t", Append: i > 0,
			Artifact: &a2a.Artifact{ID: "big", Parts: a2a.ContentParts{a2a.TextPart{Text: big}}}})
		if i < 100 {
			tk.applyEvent(&a2a.TaskArtifactUpdateEvent{TaskID: "t", Artifact: &a2a.Artifact{ID: a2a.ArtifactID(fmt.Sprint("a", i))}})
		}
	}
	tk.mu.Lock()
	last := tk.last
	tk.mu.Unlock()
	if n := len(last.History); n > maxMessages {
		t.Errorf("%d messages kept, want at most %d", n, maxMessages)
	}
	if n := len(last.Artifacts); n != maxArtifacts+1 || last.Artifacts[maxArtifacts] != moreArtifacts {
		t.Errorf("%d artifacts kept, want %d and the marker", n, maxArtifacts)
	}
	var answer strings.Builder
	for _, p := range last.Artifacts[0].Parts {
		answer.WriteString(p.(a2a.TextPart).Text)
	}
	if answer.String() != streamed.String() || len(last.Artifacts[0].Parts) > streamed.Len()/maxPartText+1 {
		t.Errorf("the streamed answer kept in %d parts, %d of its %d bytes", len(last.Artifacts[0].Parts), answer.Len(), streamed.Len())
	}
	parts := last.Artifacts[1].Parts
	if len(parts) != maxParts+1 || partText(parts[0]) != big || partText(parts[maxParts]) != moreParts.Text {
		t.Errorf("the artifact of large chunks kept %d parts; want its first %d and the marker", len(parts), maxParts)
	}
	v := tk.view()
	if got := v.Messages[len(v.Messages)-1].Text; got != "step 4999" {
		t.Errorf("the view's newest message %q", got)
	}
	if got := v.Artifacts[1].Parts[maxParts]; got != moreParts.Text {
		t.Errorf("the view's marker %q", got)
	}
}
