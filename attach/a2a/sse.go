package a2a

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// sseResults reads the results of a JSON-RPC event stream answering
// request id of method: each "data:" line is one response. Both dialects
// that stream (v1.go's SubscribeToTask, tasks/sendSubscribe) read them so.
func sseResults[T any](body io.Reader, method string, id int64) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 64<<10), jsonrpc.MaxMessage+len("data: \r\n"))
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			var msg v1Response[T]
			if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &msg); err != nil {
				yield(zero, fmt.Errorf("%s: malformed event: %w", method, err))
				return
			}
			if err := msg.check(method, id); err != nil {
				yield(zero, err)
				return
			}
			if !yield(msg.Result, nil) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			yield(zero, err)
		}
	}
}
