package jsonrpc_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ardgate/ardgate/guard/jsonrpc"
)

// What a Content-Length peer writes reads as one line a message, its line
// breaks (white space between tokens) made spaces.
func TestContentLengthLines(t *testing.T) {
	t.Parallel()
	pretty := "{\r\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1\n}"
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"one", "Content-Length: 11\r\n\r\n{\"id\":1234}", []string{`{"id":1234}`}},
		{"two", "Content-Length: 2\r\n\r\n{}Content-Length: 2\r\n\r\n[]", []string{"{}", "[]"}},
		{"pretty", "Content-Length: " + strconv.Itoa(len(pretty)) + "\r\n\r\n" + pretty, []string{`{    "jsonrpc": "2.0",   "id": 1 }`}},
		{"LF only, Content-Type, any case", "content-length: 2\nContent-Type: application/vscode-jsonrpc; charset=utf-8\n\n{}", []string{"{}"}},
		{"blank lines between", "\r\n\r\nContent-Length: 2\r\n\r\n{}\r\nContent-Length: 2\r\n\r\n{}", []string{"{}", "{}"}},
		{"empty body", "Content-Length: 0\r\n\r\nContent-Length: 2\r\n\r\n{}", []string{"", "{}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := io.ReadAll(jsonrpc.ContentLengthLines(strings.NewReader(tc.in)))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); !slices.Equal(got, tc.want) {
				t.Fatalf("lines %q, want %q", got, tc.want)
			}
		})
	}
}

// A stream that is not Content-Length framed fails with a sentence that
// quotes what came, and one that ends mid-body says so.
func TestContentLengthLinesRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		is       error
		says     string
	}{
		{"newline framing", `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n", jsonrpc.ErrNotContentLength, `the peer wrote "{`},
		{"no length", "Content-Type: x\r\n\r\n{}", jsonrpc.ErrNotContentLength, "no Content-Length"},
		{"bad length", "Content-Length: -3\r\n\r\n{}", jsonrpc.ErrNotContentLength, `"-3" is not a length`},
		{"endless headers", "X: " + strings.Repeat("a", 5000) + "\r\n", jsonrpc.ErrNotContentLength, "over 4096 bytes"},
		{"cut body", "Content-Length: 10\r\n\r\n{}", io.ErrUnexpectedEOF, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := io.ReadAll(jsonrpc.ContentLengthLines(strings.NewReader(tc.in)))
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want %v saying %q", err, tc.is, tc.says)
			}
		})
	}
}

// A body far over any buffer streams through as one line of its length.
func TestContentLengthLinesLarge(t *testing.T) {
	t.Parallel()
	body := `{"big":"` + strings.Repeat("x", 3<<20) + `"}`
	r := bufio.NewReaderSize(jsonrpc.ContentLengthLines(strings.NewReader("Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)), 64<<10)
	n := 0
	for {
		chunk, err := r.ReadSlice('\n')
		n += len(chunk)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			t.Fatal(err)
		}
	}
	if n != len(body)+1 {
		t.Fatalf("a line of %d bytes, want %d", n, len(body)+1)
	}
}

// Lines written in any pieces go out as one framed message each, which
// the reader gives back.
func TestContentLengthWriter(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := jsonrpc.ContentLengthWriter(&out)
	for _, piece := range []string{`{"id":1,`, `"method":"a"}` + "\n" + `{"id":2}` + "\r\n\n", `{"id":3}`, "\n"} {
		if n, err := w.Write([]byte(piece)); err != nil || n != len(piece) {
			t.Fatalf("write %q: %d %v", piece, n, err)
		}
	}
	var want string
	for _, body := range []string{`{"id":1,"method":"a"}`, `{"id":2}`, `{"id":3}`} {
		want += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	if out.String() != want {
		t.Fatalf("wrote %q, want %q", out.String(), want)
	}
	back, err := io.ReadAll(jsonrpc.ContentLengthLines(&out))
	if err != nil || string(back) != "{\"id\":1,\"method\":\"a\"}\n{\"id\":2}\n{\"id\":3}\n" {
		t.Fatalf("read back %q, %v", back, err)
	}
}

// Whatever a peer writes, the reader gives lines with no carriage return,
// or an error: never a panic, never a CR for a line reader to keep.
func FuzzContentLengthLines(f *testing.F) {
	f.Add("Content-Length: 2\r\n\r\n{}")
	f.Add("Content-Length: 5\r\nContent-Type: x\r\n\r\n{\r\n}\n")
	f.Add("Content-Length: 99999999999999999999\r\n\r\n")
	f.Add(`{"id":1}` + "\n")
	f.Fuzz(func(t *testing.T, in string) {
		out, _ := io.ReadAll(jsonrpc.ContentLengthLines(strings.NewReader(in)))
		if bytes.IndexByte(out, '\r') >= 0 {
			t.Fatalf("a CR in %q", out)
		}
	})
}
