package attach

import (
	"errors"
	"fmt"
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
