package serve

import (
	"io"
	"net/http"
)

// ReadBody reads a request's body for the fast path: into a buffer of
// its Content-Length when that is small, else as it comes, so that a
// length claimed and not sent takes no memory. On an error, body is what
// was read.
func ReadBody(r *http.Request) ([]byte, error) {
	if r.ContentLength < 0 || r.ContentLength > 64<<10 {
		return io.ReadAll(r.Body)
	}
	body := make([]byte, r.ContentLength)
	n, err := io.ReadFull(r.Body, body)
	return body[:n], err
}

// ErrReader returns err, or io.EOF when err is nil.
type ErrReader struct{ Err error }

func (e ErrReader) Read([]byte) (int, error) {
	if e.Err != nil {
		return 0, e.Err
	}
	return 0, io.EOF
}
