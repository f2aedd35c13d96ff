package config

import (
	"fmt"
	"strings"
)

// Switch is a setting that is on or off. In the environment it reads
// on, off, true, false, yes, no, 1 or 0, in any case.
type Switch bool

// UnmarshalText reads s as on or off.
func (s *Switch) UnmarshalText(text []byte) error {
	switch strings.ToLower(strings.TrimSpace(string(text))) {
	case "on", "true", "yes", "1":
		*s = true
	case "off", "false", "no", "0":
		*s = false
	default:
		return fmt.Errorf("%q is not on or off", text)
	}
	return nil
}
