//go:build unix

package guard

import "os/exec"

// baseEnv is what every child gets of the gateway's environment besides
// the policy's variables: PATH, by which it finds its runtime.
var baseEnv = []string{"PATH"}

// envKey tells variables apart: by their exact names.
func envKey(name string) string { return name }

// launchPath is the program to run for program and the arguments to run
// it with: the program as PATH finds it.
func launchPath(program string, args []string) (string, []string, error) {
	path, err := exec.LookPath(program)
	return path, args, err
}
