package guard

import (
	"errors"
	"fmt"
)

// ErrRefused is wrapped by every refusal, so callers can tell a rule that
// said no from a failure.
var ErrRefused = errors.New("refused")

// Refusal is a rule saying no, with the rule's name for the message.
type Refusal struct {
	// Rule names the rule, as the config or DESIGN.md calls it.
	Rule string
	// Reason says what was refused and why, in a sentence.
	Reason string
}

func (r *Refusal) Error() string { return fmt.Sprintf("refused by %s: %s", r.Rule, r.Reason) }

// Unwrap lets errors.Is(err, ErrRefused) work.
func (r *Refusal) Unwrap() error { return ErrRefused }

func refuse(rule, format string, args ...any) error {
	return &Refusal{Rule: rule, Reason: fmt.Sprintf(format, args...)}
}
