package a2a

import (
	"context"
	"time"
)

// Tasks lists the session's newest tasks, oldest first, as summaries (the
// last message's text alone), and says how many it has in all.
//
// The unfinished ones are looked at first, at their agents, a few at a
// time, all within listLooks (and each within its agent's call timeout):
// the gateway's view of a task is fresh only while someone waits on it,
// and a listing of stale states never showed a task finish. One that does
// not answer is listed as last seen; 100 tasks of an agent that answered
// none took 13 minutes to list.
func (s *Store) Tasks(ctx context.Context, newest int) (views []TaskView, total int) {
	all := s.all()
	total = len(all)
	all = all[max(0, total-newest):]
	ctx, cancel := context.WithTimeout(ctx, listLooks)
	defer cancel()
	atAgents(ctx, all, func(t *task, conn *Conn) {
		lctx, cancel := context.WithTimeout(ctx, t.agent.Timeout())
		defer cancel()
		_, _ = t.look(lctx, conn) // one that does not answer stays as last seen
	})
	views = make([]TaskView, 0, len(all))
	for _, t := range all {
		views = append(views, t.summary())
	}
	return views, total
}

// listLooks bounds the looks of one listing of tasks.
const listLooks = 10 * time.Second
