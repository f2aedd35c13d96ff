package attach

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestParseFrame(t *testing.T) {
	cases := []struct {
		name, line                      string
		id, method, result, err, params string
		bad                             bool
	}{
		{name: "response", line: `{"jsonrpc":"2.0","id":"ardgate-7","result":{"content":[{"type":"text","text":"hi"}]}}`,
			id: `"ardgate-7"`, result: `{"content":[{"type":"text","text":"hi"}]}`},
		{name: "spaced", line: " { \"id\" : 3 ,\t\"result\" : [ 1 , -2.5e+3 , true , null ] } \r",
			id: `3`, result: `[ 1 , -2.5e+3 , true , null ]`},
		{name: "error", line: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no \"such\" method \u00e9"}}`,
			id: `1`, err: `{"code":-32601,"message":"no \"such\" method \u00e9"}`},
		{name: "notification", line: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
			method: `"notifications/progress"`, params: `{"progressToken":"t","progress":1}`},
		{name: "escaped key", line: `{"\u0069d":5,"result":{}}`, id: `5`, result: `{}`},
		{name: "last duplicate wins", line: `{"id":1,"id":2,"result":{}}`, id: `2`, result: `{}`},
		{name: "case matters", line: `{"ID":1,"Result":{}}`},
		{name: "empty object", line: `{}`},

		{name: "not json", line: `this is not json`, bad: true},
		{name: "array", line: `[1,2]`, bad: true},
		{name: "cut short", line: `{"id":1,"result":{"content":[`, bad: true},
		{name: "trailing", line: `{"id":1} {"id":2}`, bad: true},
		{name: "control char", line: "{\"id\":\"a\nb\"}", bad: true},
		{name: "bad escape", line: `{"id":"\x"}`, bad: true},
		{name: "short unicode", line: `{"id":"\u12"}`, bad: true},
		{name: "leading zero", line: `{"id":01}`, bad: true},
		{name: "bare minus", line: `{"id":-}`, bad: true},
		{name: "dot no digits", line: `{"id":1.}`, bad: true},
		{name: "exponent no digits", line: `{"id":1e+}`, bad: true},
		{name: "trailing comma", line: `{"id":1,}`, bad: true},
		{name: "single quotes", line: `{'id':1}`, bad: true},
		{name: "bad literal", line: `{"id":nul}`, bad: true},
		{name: "unquoted key", line: `{id:1}`, bad: true},
		{name: "too deep", line: `{"result":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + `}`, bad: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := parseFrame([]byte(c.line))
			if c.bad {
				if err == nil {
					t.Fatalf("parseFrame(%q) accepted it", c.line)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFrame(%q): %v", c.line, err)
			}
			for _, m := range []struct{ name, got, want string }{
				{"id", string(f.id), c.id}, {"method", string(f.method), c.method}, {"result", string(f.result), c.result},
				{"error", string(f.err), c.err}, {"params", string(f.params), c.params},
			} {
				if m.got != m.want {
					t.Errorf("%s = %q, want %q", m.name, m.got, m.want)
				}
			}
		})
	}
	// As deep as encoding/json allows is still a frame.
	deep := `{"result":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`
	if _, err := parseFrame([]byte(deep)); err != nil || !json.Valid([]byte(deep)) {
		t.Errorf("nesting of %d: parseFrame %v, json.Valid %v", maxDepth-1, err, json.Valid([]byte(deep)))
	}
}

// FuzzParseFrame holds parseFrame to encoding/json: it accepts a line
// exactly when json.Valid does and the line is an object, and then its
// members are the bytes encoding/json finds for those keys.
//
//	go test -run '^$' -fuzz FuzzParseFrame ./attach
func FuzzParseFrame(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":"ardgate-1","result":{"content":[{"type":"text","text":"x"}],"isError":false}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","id":2,"method":"roots/list","params":{}}`,
		`{"id":1,"error":{"code":-1,"message":"\ud83d\ude00 \"q\" \\ \/"}}`,
		`{"a":[1,-0.5,2E9,true,false,null,{},[]],"\u0069d":"x"}`,
		` {"id" : 1e-7 } `, `[]`, `"s"`, `{"id":01}`, `{"id":"\u00"}`, "{\"id\":\"\x01\"}", `{"id":1,}`, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := parseFrame(line)
		trimmed := bytes.TrimLeft(line, " \t\r\n")
		want := json.Valid(line) && len(trimmed) > 0 && trimmed[0] == '{'
		if (err == nil) != want {
			t.Fatalf("parseFrame(%q) error %v; json.Valid says %v", line, err, json.Valid(line))
		}
		if err != nil {
			return
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(line, &members); err != nil {
			t.Fatalf("json.Unmarshal(%q): %v", line, err)
		}
		for _, m := range []struct {
			key string
			got []byte
		}{{"id", got.id}, {"method", got.method}, {"result", got.result}, {"error", got.err}, {"params", got.params}} {
			if !bytes.Equal(m.got, members[m.key]) {
				t.Fatalf("%q: %s = %q, encoding/json finds %q", line, m.key, m.got, members[m.key])
			}
		}
	})
}

// BenchmarkParseFrame reads a 1 MiB result as the stdio transport does
// (parseFrame), against encoding/json decoding it to its members.
//
//	go test -run '^$' -bench ParseFrame ./attach
func BenchmarkParseFrame(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":"ardgate-1","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}}`)
	b.Run("parseFrame", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if _, err := parseFrame(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
