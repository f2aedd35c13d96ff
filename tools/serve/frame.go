package serve

import (
	"encoding/json"
	"io"

	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// Frame is a response to the client: the result as the upstream sent it,
// under the client's id (its JSON).
type Frame struct {
	ID     string
	Result json.RawMessage
}

// AppendHead appends what comes before the result.
func (f Frame) AppendHead(b []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, f.ID...)
	return append(b, `,"result":`...)
}

// Size is the frame's length in bytes.
func (f Frame) Size() int {
	return len(`{"jsonrpc":"2.0","id":,"result":}`) + len(f.ID) + len(f.Result)
}

// AppendTo appends the frame.
func (f Frame) AppendTo(b []byte) []byte {
	return append(append(f.AppendHead(b), f.Result...), '}')
}

// WriteBody writes the frame as an HTTP response body: in one write when
// the result is small, else in three, the result from where it lies
// (jsonrpc.InPlace, as FrameWriter does on stdio).
func (f Frame) WriteBody(w io.Writer) error {
	if len(f.Result) < jsonrpc.InPlace {
		_, err := w.Write(f.AppendTo(make([]byte, 0, f.Size())))
		return err
	}
	for _, piece := range [][]byte{f.AppendHead(nil), f.Result, []byte("}")} {
		if _, err := w.Write(piece); err != nil {
			return err
		}
	}
	return nil
}

// WriteLine writes the frame and the newline that ends it on stdio, or
// holds it in b (jsonrpc.FrameWriter, which writes a large result where it
// lies).
func (f Frame) WriteLine(w *jsonrpc.FrameWriter, b *jsonrpc.Batch) error {
	return w.Frame(b, f.AppendHead, f.Result, "}\n")
}
