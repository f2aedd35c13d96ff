package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The reference in README.md names every field the file may hold, in
// the table of its section, so that it cannot fall behind the code.
func TestReadmeNamesEveryField(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{} // heading: its text
	heading := ""
	for line := range strings.Lines(string(b)) {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			heading = strings.TrimSpace(h)
			continue
		}
		sections[heading] += line
	}
	for _, tc := range []struct {
		section string
		typ     reflect.Type
	}{
		{"Top level", reflect.TypeFor[file]()},
		{"`registries[]`", reflect.TypeFor[Registry]()},
		{"`limits`", reflect.TypeFor[fileLimits]()},
		{"`stdio`", reflect.TypeFor[Stdio]()},
		{"`servers[]`", reflect.TypeFor[Server]()},
		{"`agents[]`", reflect.TypeFor[Agent]()},
		{"`credentials`", reflect.TypeFor[Credentials]()},
		{"`mcpServers`", reflect.TypeFor[desktopServer]()},
	} {
		text, ok := sections[tc.section]
		if !ok {
			t.Errorf("README.md has no section %q", tc.section)
			continue
		}
		for _, name := range jsonNames(tc.typ) {
			if !regexp.MustCompile("`" + regexp.QuoteMeta(name) + "`").MatchString(text) {
				t.Errorf("README.md, %s: field %q is not described", tc.section, name)
			}
		}
	}
}

// jsonNames returns the JSON names of t's fields, those of embedded
// structs included, leaving out those JSON never reads.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous:
			names = append(names, jsonNames(f.Type)...)
		case tag == "-" || tag == "" || !f.IsExported():
		case strings.Contains(tag, " "):
			// "servers (VS Code)": an object read where servers stands.
		default:
			names = append(names, tag)
		}
	}
	return names
}
