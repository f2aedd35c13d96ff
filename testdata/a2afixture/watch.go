package a2afixture

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
)

// requests tells an execution which JSON-RPC requests the agent has had
// for its task, so that "between" can act at a given point of its
// client's conversation with the agent.
type requests struct {
	mu   sync.Mutex
	seen map[string]chan struct{} // method+" "+task id, closed once seen
}

// chLocked is the channel of method and taskID, made at its first use;
// r.mu is held.
func (r *requests) chLocked(method, taskID string) chan struct{} {
	if r.seen == nil {
		r.seen = map[string]chan struct{}{}
	}
	key := method + " " + taskID
	c, ok := r.seen[key]
	if !ok {
		c = make(chan struct{})
		r.seen[key] = c
	}
	return c
}

func (r *requests) saw(method, taskID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.chLocked(method, taskID)
	select {
	case <-c:
	default:
		close(c)
	}
}

// await waits until a request of method for taskID has been seen, or ctx
// ends.
func (r *requests) await(ctx context.Context, method, taskID string) error {
	r.mu.Lock()
	c := r.chLocked(method, taskID)
	r.mu.Unlock()
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// watch serves next, telling r of each tasks/get once it has been
// answered and of each tasks/resubscribe as it comes in (its answer is a
// stream that lasts).
func (r *requests) watch(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
			Params struct {
				ID string `json:"id"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m) // the handler answers what does not decode
		if m.Method == "tasks/resubscribe" {
			r.saw(m.Method, m.Params.ID)
		}
		next.ServeHTTP(w, req)
		if m.Method == "tasks/get" {
			r.saw(m.Method, m.Params.ID)
		}
	})
}
