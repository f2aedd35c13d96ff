package a2a

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/ardgate/ardgate/guard"
)

// Store keeps a session's tasks, up to max; when full, the oldest
// finished task goes; unfinished tasks are never dropped.
type Store struct {
	mu    sync.Mutex
	max   int
	order []string
	byID  map[string]*task
}

// DefaultMaxTasks bounds each session's task store.
const DefaultMaxTasks = 1000

// NewStore is a store of up to max tasks.
func NewStore(max int) *Store { return &Store{max: max} }

// add keeps t, under an id of its own in the store: t.id, or, when that
// is taken or not fit to show, one made of it (sessionTaskID).
func (s *Store) add(t *task) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]*task{}
	}
	if len(s.order) >= s.max {
		i := s.evictable()
		if i < 0 {
			return s.full()
		}
		delete(s.byID, s.order[i])
		s.order = slices.Delete(s.order, i, i+1)
	}
	t.id = s.sessionTaskID(t.id, t.agent.Name())
	s.byID[t.id] = t
	s.order = append(s.order, t.id)
	return nil
}

// maxTaskID bounds an id the session shows for a task; an agent picks its
// tasks' ids, and one of 200,000 characters went into every listing.
const maxTaskID = 100

// sessionTaskID is the id the session gives a task whose agent, named
// agent, calls it remote: remote itself when it is free and fit to show,
// else "<agent>:<remote>", cleaned and bounded, then with "#2", "#3", …
// until free. s.mu is held.
func (s *Store) sessionTaskID(remote, agent string) string {
	id := guard.Text(remote, maxTaskID)
	if id == "" {
		id = "task"
	}
	if _, taken := s.byID[id]; !taken && id == remote {
		return id
	}
	base := agent + ":" + id
	id = base
	for n := 2; ; n++ {
		if _, taken := s.byID[id]; !taken {
			return id
		}
		id = base + "#" + strconv.Itoa(n)
	}
}

// room says whether a task could be added now, so that a spawn is refused
// before its message goes to the agent: refused after, the agent would
// run a task nobody can see or cancel.
func (s *Store) room() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) >= s.max && s.evictable() < 0 {
		return s.full()
	}
	return nil
}

// evictable is the index of the oldest finished (or lost) task, or -1.
// s.mu is held.
func (s *Store) evictable() int {
	return slices.IndexFunc(s.order, func(id string) bool { return s.byID[id].final() })
}

func (s *Store) full() error {
	return fmt.Errorf("%w: %d tasks are unfinished; cancel some with cancel_task", ErrStoreFull, len(s.order))
}

// contextOf names the agent whose conversation contextID is, when that is
// not a: an agent knows only its own contexts, and another's would begin a
// new conversation, not go on with the one the caller means. It returns ""
// for a context a has tasks in, or none of the session's tasks has.
func (s *Store) contextOf(contextID string, a Agent) string {
	if contextID == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	other := ""
	for _, t := range s.byID {
		switch {
		case t.contextID != contextID:
		case t.agent.URN() == a.URN():
			return ""
		default:
			other = t.agent.Name()
		}
	}
	return other
}

// agentContext is the context id, as its agent gave it, that the
// session's tasks show as shown (cleaned and bounded, as task views show
// ids); shown itself when none does.
func (s *Store) agentContext(shown string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.byID {
		if t.contextID == shown {
			return shown
		}
	}
	for _, t := range s.byID {
		if guard.Text(t.contextID, maxTaskID) == shown {
			return t.contextID
		}
	}
	return shown
}

func (s *Store) get(id string) (*task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q (unknown, or evicted as one of the oldest finished tasks); list_tasks shows the session's tasks", ErrTaskNotFound, id)
	}
	return t, nil
}

func (s *Store) all() []*task {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*task, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.byID[id])
	}
	return out
}
