package guard

import (
	"path/filepath"
	"slices"
	"strings"
)

// finder looks up programs and files as Windows would. Its lookups are
// given, so that these rules are tested on every OS (stdio_windows.go
// gives the real ones).
type finder struct {
	lookPath func(string) (string, error)
	isFile   func(string) bool
}

// windowsLaunch is the program Windows runs for program and args, and its
// arguments. A batch file (.cmd, .bat) runs under cmd.exe, which reads its
// command line by rules of its own (%VAR% expands even within quotes; & |
// < > ^ end or bend it): a registry's argument handed to one would run
// what it spells, the class of CVE-2024-24576. So npx, which npm installs
// as npx.cmd, runs as node on npm's npx-cli.js, as npx.cmd would run it,
// with no cmd.exe; another batch file runs only with arguments cmd.exe
// takes as plain text, and is refused otherwise.
func (f finder) windowsLaunch(program string, args []string) (string, []string, error) {
	if program == "npx" {
		if node, script, ok := f.npxCLI(); ok {
			return node, slices.Concat([]string{script}, args), nil
		}
	}
	path, err := f.lookPath(program)
	if err != nil {
		return "", nil, err
	}
	if !isBatch(path) {
		return path, args, nil
	}
	for _, a := range args {
		if i := strings.IndexFunc(a, notBatchSafe); i >= 0 {
			return "", nil, refuse("stdio.batch", "%s is a batch file, which cmd.exe runs, and its argument %q holds %q, which cmd.exe would not take as text; "+
				"arguments of a batch file may hold letters, digits, spaces and %s only (install the program as an .exe, or npx as Node.js installs it, beside node.exe)",
				path, a, a[i:i+1], batchSafePunct)
		}
	}
	return path, args, nil
}

// npxCLI finds node and npm's npx-cli.js beside it, where Node.js's
// installer and nvm-windows put them (node_modules\npm\bin\npx-cli.js).
func (f finder) npxCLI() (node, script string, ok bool) {
	node, err := f.lookPath("node")
	if err != nil {
		return "", "", false
	}
	script = filepath.Join(filepath.Dir(node), "node_modules", "npm", "bin", "npx-cli.js")
	return node, script, f.isFile(script)
}

// isBatch tells whether Windows runs path under cmd.exe.
func isBatch(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".cmd" || ext == ".bat"
}

// batchSafePunct is the punctuation, besides ASCII letters, digits and
// space, that cmd.exe reads as text in a batch file's arguments; Go quotes
// an argument that holds a space, and cmd.exe keeps a quoted space.
const batchSafePunct = `-_.,:/\@=+~`

// notBatchSafe tells a character cmd.exe may read as more than text (%, !,
// ^, &, |, <, >, quotes, parentheses), or that may turn into one on the
// way (anything outside ASCII, which a code page maps).
func notBatchSafe(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == ' ':
		return false
	}
	return !strings.ContainsRune(batchSafePunct, r)
}
