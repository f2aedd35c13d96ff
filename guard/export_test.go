package guard

// BaseEnv is baseEnv, for the tests of package guard_test.
var BaseEnv = baseEnv
