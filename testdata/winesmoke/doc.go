// Package winesmoke runs ardgate's Windows build under Wine, as a desktop
// client would run it: a stdio session that discovers in the builtin
// catalog and calls a pinned server, the Windows build of mcpfixture, whose
// processes must end with the session, and with the gateway killed hard.
// Pinned too: npx, which must run as node on npm's npx-cli.js with a
// registry's hostile arguments whole, and a batch file, which must be
// refused them, cmd.exe running nothing they spell.
//
// .ci/run runs it with Wine and a prepared WINEPREFIX (Wine 8.0 wants the
// bcryptprimitives shim of testdata/wine for Go programs to start). With
// CI=true a missing Wine fails the test; otherwise it skips. It runs on
// linux/amd64, where Wine's processes are Linux processes to look for.
package winesmoke
