package attach

// UserStep is the failure of an attach that the user resolves in a
// browser: an authorization at the server's authorization server, or
// ardgate's page that asks for a package's keys. The attach succeeds once
// the step is done.
type UserStep interface {
	error
	// StepURL is where the user goes.
	StepURL() string
	// StepDone is closed when the step ended: done, declined or expired.
	StepDone() <-chan struct{}
}
