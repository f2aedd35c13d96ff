package registry

import (
	"encoding/json"
	"math"
)

// WholeNumber is an integer read from JSON however a whole number is
// written: 2, 2.0 or 2e0, as JSON Schema's "integer" takes them (a Python
// client sends 2.0). A page size of 2.0 was refused, "must be an integer,
// not number 2.0", by the gateway's tools and by `registry serve` alike.
// Anything else is refused with the error an int gives, naming what came.
type WholeNumber int

// UnmarshalJSON implements json.Unmarshaler.
func (n *WholeNumber) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil || f != math.Trunc(f) {
		return json.Unmarshal(b, new(int))
	}
	*n = WholeNumber(max(min(f, math.MaxInt32), math.MinInt32)) // out of every range checked
	return nil
}
