package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
)

// members is what ScanObject reports, the last of duplicates winning as
// in encoding/json.
func members(b []byte) (map[string]string, error) {
	m := map[string]string{}
	err := ScanObject(b, func(name, value []byte) { m[string(name)] = string(value) })
	return m, err
}

func TestScanObject(t *testing.T) {
	cases := []struct {
		name, in string
		want     map[string]string // nil: rejected
	}{
		{"response", `{"jsonrpc":"2.0","id":"ardgate-7","result":{"content":[{"type":"text","text":"hi"}]}}`,
			map[string]string{"jsonrpc": `"2.0"`, "id": `"ardgate-7"`, "result": `{"content":[{"type":"text","text":"hi"}]}`}},
		{"spaced", " { \"id\" : 3 ,\t\"result\" : [ 1 , -2.5e+3 , true , null ] } \r",
			map[string]string{"id": "3", "result": "[ 1 , -2.5e+3 , true , null ]"}},
		{"escapes", `{"error":{"message":"no \"such\" method \u00e9 \\ \/ \b\f\n\r\t"}}`,
			map[string]string{"error": `{"message":"no \"such\" method \u00e9 \\ \/ \b\f\n\r\t"}`}},
		{"escaped name", `{"\u0069d":5}`, map[string]string{"id": "5"}},
		{"last duplicate wins", `{"id":1,"id":2}`, map[string]string{"id": "2"}},
		{"names are exact", `{"ID":1}`, map[string]string{"ID": "1"}},
		{"empty", `{}`, map[string]string{}},
		{"numbers", `{"a":0,"b":-0.5,"c":1E9,"d":12e-3}`, map[string]string{"a": "0", "b": "-0.5", "c": "1E9", "d": "12e-3"}},

		{"not json", `this is not json`, nil},
		{"array", `[1,2]`, nil},
		{"string", `"s"`, nil},
		{"nothing", ``, nil},
		{"cut short", `{"id":1,"result":{"content":[`, nil},
		{"two objects", `{"id":1} {"id":2}`, nil},
		{"control character", "{\"id\":\"a\nb\"}", nil},
		{"bad escape", `{"id":"\x"}`, nil},
		{"short unicode", `{"id":"\u12"}`, nil},
		{"leading zero", `{"id":01}`, nil},
		{"bare minus", `{"id":-}`, nil},
		{"dot without digits", `{"id":1.}`, nil},
		{"exponent without digits", `{"id":1e+}`, nil},
		{"trailing comma", `{"id":1,}`, nil},
		{"single quotes", `{'id':1}`, nil},
		{"bad literal", `{"id":nul}`, nil},
		{"unquoted name", `{id:1}`, nil},
		{"too deep", `{"r":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := members([]byte(c.in))
			if c.want == nil {
				if err == nil {
					t.Fatalf("ScanObject(%q) accepted it: %v", c.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ScanObject(%q): %v", c.in, err)
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("members %v, want %v", got, c.want)
			}
		})
	}
	// As deep as encoding/json allows, maxDepth levels with the object,
	// is still an object; one more is not, and says why.
	deep := []byte(`{"r":` + strings.Repeat("[", maxDepth-1) + "1" + strings.Repeat("]", maxDepth-1) + `}`)
	if _, err := members(deep); err != nil || !json.Valid(deep) {
		t.Errorf("nesting of %d: ScanObject %v, json.Valid %v", maxDepth, err, json.Valid(deep))
	}
	deeper := []byte(`{"r":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`)
	if _, err := members(deeper); !errors.Is(err, ErrTooDeep) || !errors.Is(err, ErrNotJSON) || json.Valid(deeper) {
		t.Errorf("nesting of %d: ScanObject %v, json.Valid %v; want ErrTooDeep, and not valid", maxDepth+1, err, json.Valid(deeper))
	}
}

// FuzzScanObject holds ScanObject to encoding/json: it accepts exactly
// when json.Valid does and the input is an object, and then its members
// are the ones encoding/json finds, byte for byte, and the ones
// ScanCheckedObject finds. On any input, ScanCheckedObject must not panic.
//
//	go test -run '^$' -fuzz FuzzScanObject ./guard
func FuzzScanObject(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":"ardgate-1","result":{"content":[{"type":"text","text":"x"}],"isError":false}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_a__b","arguments":{"k":[1,2]}}}`,
		`{"id":1,"error":{"code":-1,"message":"\ud83d\ude00 \"q\" \\ \/"}}`,
		`{"a":[1,-0.5,2E9,true,false,null,{},[]],"\u0069d":"x"}`,
		` {"id" : 1e-7 } `, `[]`, `"s"`, `{"id":01}`, `{"id":"\u00"}`, "{\"id\":\"\x01\"}", `{"id":1,}`, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAsEncodingJSON(t, b) })
}

// sameAsEncodingJSON fails t unless ScanObject and ScanCheckedObject read
// b as encoding/json does.
func sameAsEncodingJSON(t *testing.T, b []byte) {
	t.Helper()
	_ = ScanCheckedObject(b, func(_, _ []byte) {}) // malformed input: no panic, no read past b
	got, err := members(b)
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	want := json.Valid(b) && len(trimmed) > 0 && trimmed[0] == '{'
	if (err == nil) != want {
		t.Fatalf("ScanObject(%q) error %v; json.Valid says %v", b, err, json.Valid(b))
	}
	// ScanFrame refuses what ScanObject does, and more only for a member
	// named twice.
	if ferr := ScanFrame(b, func(_, _ []byte) {}); err != nil && ferr == nil || err == nil && ferr != nil && !errors.Is(ferr, ErrMemberRepeated) {
		t.Fatalf("ScanFrame(%q): %v; ScanObject: %v", b, ferr, err)
	}
	if err != nil {
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("json.Unmarshal(%q): %v", b, err)
	}
	if len(m) != len(got) {
		t.Fatalf("%q: ScanObject finds %v, encoding/json %v", b, got, m)
	}
	for k, v := range m {
		if got[k] != string(v) {
			t.Fatalf("%q: member %q is %q, encoding/json finds %q", b, k, got[k], v)
		}
	}
	// What is known to be JSON reads the same without the checks.
	checked := map[string]string{}
	if err := ScanCheckedObject(b, func(name, value []byte) { checked[string(name)] = string(value) }); err != nil || !maps.Equal(checked, got) {
		t.Fatalf("%q: ScanCheckedObject finds %v, %v; ScanObject %v", b, checked, err, got)
	}
}

// Strings are crossed sixteen and eight bytes at a time while no byte in
// them needs a look: a byte that does, at any place in strings of every
// length around those steps, is still found and judged as encoding/json
// judges it.
func TestScanObjectLongStrings(t *testing.T) {
	for n := 0; n <= 40; n++ {
		for at := 0; at < n; at++ {
			for _, c := range []byte{0x00, 0x1f, 0x20, '"', '\\', 'a', 0x7f, 0x80, 0xff} {
				text := bytes.Repeat([]byte("x"), n)
				text[at] = c
				sameAsEncodingJSON(t, []byte(`{"k":"`+string(text)+`","n":1}`))
				if c == '\\' && at+1 < n {
					text[at+1] = 'n' // a good escape
					sameAsEncodingJSON(t, []byte(`{"k":"`+string(text)+`","n":1}`))
				}
			}
		}
	}
}

// BenchmarkScanObject reads a frame with a 1 MiB result, and a small
// answer such as most tool calls get, against encoding/json decoding each
// to its members.
//
//	go test -run '^$' -bench ScanObject ./guard
func BenchmarkScanObject(b *testing.B) {
	frames := []struct{ name, line string }{
		{"1MiB", `{"jsonrpc":"2.0","id":"ardgate-1","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}}`},
		{"small", `{"jsonrpc":"2.0","id":"ardgate-1","result":{"content":[{"type":"text","text":"ping"}],"isError":false}}`},
	}
	for _, f := range frames {
		line := []byte(f.line)
		b.Run(f.name+"/ScanObject", func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if err := ScanObject(line, func(_, _ []byte) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(f.name+"/ScanFrame", func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				if err := ScanFrame(line, func(_, _ []byte) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(f.name+"/ScanCheckedObject", func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if err := ScanCheckedObject(line, func(_, _ []byte) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(f.name+"/encoding-json", func(b *testing.B) {
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
}

// ScanCheckedArray reads a JSON array's elements as encoding/json does,
// and reads anything else without a panic or a read past its input.
func FuzzScanCheckedArray(f *testing.F) {
	for _, seed := range []string{
		`[]`, ` [ ] `, `[1]`, `[{"name":"t","inputSchema":{"type":"object"}},{"name":"u"}]`,
		`["a,b",["]"],{"k":"[,]"},-0.5e3,true,null]`, `[1,]`, `[`, `{}`, `[1] x`, `["\u00"]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []string
		err := ScanCheckedArray(b, func(v []byte) { got = append(got, string(v)) })
		var want []json.RawMessage
		if json.Unmarshal(b, &want) != nil || want == nil {
			return // not an array: anything but a panic will do
		}
		if err != nil || len(got) != len(want) {
			t.Fatalf("%q: ScanCheckedArray finds %q, %v; encoding/json %q", b, got, err, want)
		}
		for i := range want {
			if got[i] != string(want[i]) {
				t.Fatalf("%q: element %d is %q, encoding/json finds %q", b, i, got[i], want[i])
			}
		}
	})
}

// IsObject and ObjectOrAbsent tell a value by its first byte, past white
// space; absent and null are an optional object's absence.
func TestObjectOrAbsent(t *testing.T) {
	for _, c := range []struct {
		raw              string
		object, optional bool
	}{
		{`{}`, true, true},
		{" \n\t{\"a\":1}", true, true},
		{``, false, true},
		{`null`, false, true},
		{` null `, false, true},
		{`[{}]`, false, false},
		{`"{"`, false, false},
		{`5`, false, false},
		{`nul`, false, false},
	} {
		if got := IsObject([]byte(c.raw)); got != c.object {
			t.Errorf("IsObject(%q) = %v", c.raw, got)
		}
		if got := ObjectOrAbsent([]byte(c.raw)); got != c.optional {
			t.Errorf("ObjectOrAbsent(%q) = %v", c.raw, got)
		}
	}
}

// ScanFrame refuses an object that names a member twice, at any depth and
// however the names are escaped, and names the member by its path;
// ReadFrame also refuses a JSON-RPC member in another case. Distinct
// names, and names of other cases deeper down, are read as they are.
func TestReadFrame(t *testing.T) {
	many := func(repeat bool) string {
		var b strings.Builder
		b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{`)
		for i := range 1000 {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		if repeat {
			b.WriteString(`"k500":0,`)
		}
		b.WriteString(`"end":true}}}`)
		return b.String()
	}
	cases := []struct {
		name, in string
		path     string // "": read
		of       string // the known member, for a case variant
	}{
		{"plain", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"Name":1,"name":2}}}`, "", ""},
		{"a thousand members", many(false), "", ""},
		{"the same name in sibling objects", `{"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":2}]}`, "", ""},
		{"id twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, "id", ""},
		{"method twice, escaped", `{"jsonrpc":"2.0","id":1,"method":"ping","m\u0065thod":"tools/call"}`, "method", ""},
		{"params.name twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`, "params.name", ""},
		{"params._meta.progressToken twice", `{"id":1,"params":{"_meta":{"progressToken":1,"progressToken":2}},"method":"tools/call"}`, "params._meta.progressToken", ""},
		{"in an array", `{"params":{"arguments":{"items":[{"a":1,"a":2}]}}}`, "params.arguments.items.a", ""},
		{"one of a thousand", many(true), "params.arguments.k500", ""},
		{"Id beside id", `{"jsonrpc":"2.0","id":1,"Id":2,"method":"ping"}`, "Id", "id"},
		{"METHOD", `{"jsonrpc":"2.0","id":1,"METHOD":"ping","method":"tools/call"}`, "METHOD", "method"},
		{"Params alone", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"x"}}`, "Params", "params"},
		{"folded by Unicode", `{"jsonrpc":"2.0","id":1,"method":"tools/list","paramſ":{}}`, "paramſ", "params"},
		{"JSONRPC", `{"JSONRPC":"1.0","jsonrpc":"2.0","id":1,"method":"ping"}`, "JSONRPC", "jsonrpc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadFrame([]byte(c.in))
			if c.path == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *MemberError
			if !errors.As(err, &e) || strings.Join(e.Path, ".") != c.path || e.Of != c.of {
				t.Fatalf("error %v, want member %s (of %q)", err, c.path, c.of)
			}
			want := ErrMemberRepeated
			if c.of != "" {
				want = ErrMemberCase
			}
			if !errors.Is(err, want) || errors.Is(err, ErrNotJSON) {
				t.Fatalf("%v is not %v alone", err, want)
			}
		})
	}
	// What ScanObject refuses as no JSON, ScanFrame refuses the same way.
	if _, err := ReadFrame([]byte(`{"id":1,"id":`)); !errors.Is(err, ErrNotJSON) {
		t.Fatalf("a frame cut short: %v", err)
	}
}
