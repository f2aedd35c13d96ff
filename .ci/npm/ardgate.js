#!/usr/bin/env node
// The npm launcher of ardgate: it runs the binary of the platform package
// npm installed beside it (an optional dependency per OS and CPU, chosen
// by their "os" and "cpu" fields), so no postinstall script is needed.
// stdin, stdout and stderr are the binary's own: over stdio, stdout
// carries only MCP frames.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');

const CPUS = { x64: 'x64', arm64: 'arm64' };
const OSES = { linux: 'linux', darwin: 'darwin', win32: 'windows' };

function binary() {
  const os = OSES[process.platform];
  const cpu = CPUS[process.arch];
  if (!os || !cpu) {
    throw new Error(`ardgate has no build for ${process.platform}/${process.arch}; build it with "go install github.com/ardgate/ardgate@latest"`);
  }
  const pkg = `@ardgate/${os}-${cpu}`;
  const exe = os === 'windows' ? 'ardgate.exe' : 'ardgate';
  try {
    return require.resolve(`${pkg}/bin/${exe}`);
  } catch {
    throw new Error(`${pkg} is not installed: npm skipped the optional dependency for this platform. Reinstall without --no-optional (or --omit=optional).`);
  }
}

function main() {
  let exe;
  try {
    exe = binary();
  } catch (err) {
    process.stderr.write(`ardgate: ${err.message}\n`);
    process.exit(1);
  }
  const child = spawn(exe, process.argv.slice(2), { stdio: 'inherit', windowsHide: true });
  // A desktop app stops a server with a signal to the process it started,
  // this one: pass it on, so the gateway ends its session cleanly.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => child.kill(sig));
  }
  child.on('error', (err) => {
    process.stderr.write(`ardgate: cannot run ${path.basename(exe)}: ${err.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    process.exit(code ?? (signal ? 128 + (require('node:os').constants.signals[signal] ?? 0) : 1));
  });
}

main();
