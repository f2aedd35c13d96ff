package guard

import (
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostile are arguments a registry may send, each with characters cmd.exe
// reads as more than text: they must reach no batch file.
var hostile = []string{`a&calc.exe`, `a|calc`, `%PATH%`, `^&calc`, `"&calc`, `x"`, `!x!`, `a(b)`, `<in`, `>out`,
	"line\nbreak", "caf\u00e9", "\uff02&calc"} // the last a fullwidth quote, which a code page may map to '"'

// A Windows launch: npx as node on npx-cli.js, whatever its arguments; a
// batch file with only arguments cmd.exe takes as text; an .exe as found.
func TestWindowsLaunch(t *testing.T) {
	node := filepath.FromSlash("/nodejs/node.exe")
	cli := filepath.Join(filepath.Dir(node), "node_modules", "npm", "bin", "npx-cli.js")
	installs := map[string]struct {
		programs map[string]string // name → where PATH finds it
		files    []string
	}{
		"node.js":             {map[string]string{"node": node, "npx": filepath.FromSlash("/nodejs/npx.cmd"), "uvx": filepath.FromSlash("/uv/uvx.exe")}, []string{cli}},
		"npx.cmd without cli": {map[string]string{"node": node, "npx": filepath.FromSlash("/shims/npx.cmd"), "tool": filepath.FromSlash("/bin/tool.BAT")}, nil},
		"nothing":             {map[string]string{}, nil},
	}
	type launch struct {
		install  string
		program  string
		args     []string
		wantPath string
		wantArgs []string // nil: args as given
		refused  bool
		notFound bool
	}
	tests := []launch{
		{install: "node.js", program: "npx", args: []string{"-y", "--", "@scope/pkg@1.0.0"}, wantPath: node, wantArgs: []string{cli, "-y", "--", "@scope/pkg@1.0.0"}},
		{install: "node.js", program: "npx", args: slices.Concat([]string{"-y", "--", "pkg"}, hostile), wantPath: node,
			wantArgs: slices.Concat([]string{cli, "-y", "--", "pkg"}, hostile)},
		{install: "node.js", program: "uvx", args: hostile, wantPath: filepath.FromSlash("/uv/uvx.exe")},
		{install: "npx.cmd without cli", program: "npx", args: []string{"-y", "--", "@scope/pkg@1.0.0", "--dir", `C:\My Files\x`, "--k=v,w", "a+b~c"},
			wantPath: filepath.FromSlash("/shims/npx.cmd")},
		{install: "npx.cmd without cli", program: "npx", args: []string{"-y", "--", "pkg", ""}, wantPath: filepath.FromSlash("/shims/npx.cmd")},
		{install: "npx.cmd without cli", program: "tool", args: []string{"ok"}, wantPath: filepath.FromSlash("/bin/tool.BAT")},
		{install: "nothing", program: "npx", args: []string{"-y"}, notFound: true},
	}
	for _, a := range hostile {
		tests = append(tests,
			launch{install: "npx.cmd without cli", program: "npx", args: []string{"-y", "--", "pkg", a}, refused: true},
			launch{install: "npx.cmd without cli", program: "tool", args: []string{a}, refused: true})
	}
	for _, tt := range tests {
		t.Run(tt.install+"/"+tt.program+"/"+strings.Join(tt.args, " "), func(t *testing.T) {
			in := installs[tt.install]
			f := finder{
				lookPath: func(name string) (string, error) {
					if p, ok := in.programs[name]; ok {
						return p, nil
					}
					return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
				},
				isFile: func(p string) bool { return slices.Contains(in.files, p) },
			}
			path, args, err := f.windowsLaunch(tt.program, tt.args)
			switch {
			case tt.notFound:
				if !errors.Is(err, exec.ErrNotFound) {
					t.Fatalf("err = %v, want exec.ErrNotFound", err)
				}
			case tt.refused:
				var r *Refusal
				if !errors.As(err, &r) || r.Rule != "stdio.batch" || path != "" || args != nil {
					t.Fatalf("= %q %q %v, want a refusal by stdio.batch", path, args, err)
				}
			case err != nil:
				t.Fatal(err)
			default:
				want := tt.wantArgs
				if want == nil {
					want = tt.args
				}
				if path != tt.wantPath || !slices.Equal(args, want) {
					t.Errorf("= %q %q, want %q %q", path, args, tt.wantPath, want)
				}
			}
		})
	}
}

// On Windows a variable is one whatever the case of its name: named twice
// so, it is passed once, as first named.
func TestEnvFromFolded(t *testing.T) {
	gateway := map[string]string{"PATH": `C:\Windows`, "SYSTEMROOT": `C:\Windows`, "TEMP": `C:\Temp`}
	lookup := func(name string) (string, bool) { v, ok := gateway[strings.ToUpper(name)]; return v, ok }
	got := envFrom(lookup, strings.ToUpper, []string{"PATH", "SystemRoot"}, []string{"Path", "temp", "SYSTEMROOT"}, []string{"TEMP", "path"})
	want := []string{`PATH=C:\Windows`, `SystemRoot=C:\Windows`, `temp=C:\Temp`}
	if !slices.Equal(got, want) {
		t.Errorf("envFrom = %q, want %q", got, want)
	}
	// Elsewhere, names that differ in case are two variables.
	exact := func(name string) (string, bool) { v, ok := map[string]string{"a": "1", "A": "2"}[name]; return v, ok }
	if got := envFrom(exact, func(s string) string { return s }, []string{"a", "A", "a"}); !slices.Equal(got, []string{"a=1", "A=2"}) {
		t.Errorf("envFrom = %q, want a=1 and A=2", got)
	}
}
