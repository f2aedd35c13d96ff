package serve

import (
	"errors"
	"sync"

	"github.com/google/uuid"
)

// SessionIDs issues the ids of HTTP sessions and tells mcp-go's server
// which are live. mcp-go's own stateful manager keeps every ended id for
// good, about 0.3 KiB each, so a gateway whose clients open and end
// sessions all day grew without bound (bench soak: 0.4 KiB a session).
// This one forgets an ended id, but for the last maxEnded, so that a
// client still using one of those hears that its session was terminated;
// mcp-go answers an id it does not know with 404 too, which tells a client
// to start a new session either way.
type SessionIDs struct {
	live sync.Map // id → struct{}: read on every request mcp-go serves

	mu    sync.Mutex
	ended map[string]struct{}
	ring  [maxEnded]string // the ended ids, the oldest at next once full
	next  int
}

// maxEnded is how many ended ids are remembered.
const maxEnded = 1024

// errUnknownSession is Validate's answer for an id that is not live and
// not remembered as ended.
var errUnknownSession = errors.New("no such session")

// Generate issues a new session id, as mcp-go's manager spells them.
func (s *SessionIDs) Generate() string {
	id := "mcp-session-" + uuid.NewString()
	s.live.Store(id, struct{}{})
	return id
}

// Validate reports whether id is live (nil), ended (isTerminated), or
// unknown (an error).
func (s *SessionIDs) Validate(id string) (isTerminated bool, err error) {
	if _, ok := s.live.Load(id); ok {
		return false, nil
	}
	s.mu.Lock()
	_, ended := s.ended[id]
	s.mu.Unlock()
	if ended {
		return true, nil
	}
	return false, errUnknownSession
}

// Terminate ends id's session, remembering id among the last ended.
func (s *SessionIDs) Terminate(id string) (isNotAllowed bool, err error) {
	if _, live := s.live.LoadAndDelete(id); !live {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		s.ended = make(map[string]struct{}, maxEnded)
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.ended, old)
	}
	s.ring[s.next] = id
	s.ended[id] = struct{}{}
	s.next = (s.next + 1) % maxEnded
	return false, nil
}
