//go:build !linux

package guard

// Undumpable does nothing off Linux, which alone has the switch: there a
// process of the gateway's uid may read its environment, and only a
// separate uid for launched servers keeps ARDGATE_CREDENTIALS_KEY from
// them.
func Undumpable() error { return nil }
