#!/usr/bin/env node
// A2A agent fixture built on @a2a-js/sdk (A2A protocol v1.0, JSON-RPC binding),
// used by ardgate's tests as a non-Go peer.
//
//   node agent.mjs --port=0                  # v1.0 only
//   node agent.mjs --port=0 --legacy-compat  # v1.0 + v0.3 (SDK legacyCompat layer)
//
// Prints exactly one line to stdout once listening:
//   READY http://127.0.0.1:<port>
// Everything else (SDK and fixture logs) goes to stderr. SIGTERM/SIGINT exit 0.
//
// Behaviour is chosen by the first word of the user's text (first text part):
//   reply <text>  -> immediate Message "echo: <text>" (no task)
//   stream <n>    -> task; n WORKING status updates ~30ms apart; artifact
//                    "done after n steps"; COMPLETED
//   ask           -> INPUT_REQUIRED with "what is your name?"; a follow-up
//                    message carrying the same taskId completes the task with
//                    artifact "hello <name>"
//   wait          -> WORKING until CancelTask, then CANCELED
//   fail          -> FAILED with status message "the fixture failed as asked"
//   data          -> artifact "rows" whose one part is data that is an array
//                    (v1.0 lets data be any JSON value); COMPLETED
//   anything else -> Message "unknown command: <word> (use reply|stream|ask|wait|fail)"

import http from 'node:http';
import crypto from 'node:crypto';
import express from 'express';
import { AGENT_CARD_PATH, A2A_PROTOCOL_VERSION, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';

// Keep stdout for the READY line only: route every console channel to stderr.
for (const level of ['log', 'info', 'debug']) {
  console[level] = (...args) => console.error(...args);
}
const log = (...args) => console.error('[a2a-js-fixture]', ...args);

// ---- flags ----------------------------------------------------------------
function parseArgs(argv) {
  const opts = { port: 0, legacyCompat: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--legacy-compat') opts.legacyCompat = true;
    else if (a.startsWith('--port=')) opts.port = Number(a.slice('--port='.length));
    else if (a === '--port' && i + 1 < argv.length) opts.port = Number(argv[++i]);
    else {
      console.error(`usage: node agent.mjs [--port=N] [--legacy-compat] (unknown argument ${a})`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) {
    console.error('invalid --port');
    process.exit(2);
  }
  return opts;
}
const opts = parseArgs(process.argv.slice(2));

const JSONRPC_PATH = '/a2a/jsonrpc';

// ---- helpers ----------------------------------------------------------------
const now = () => new Date().toISOString();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function textPart(text) {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function agentMessage(text, taskId, contextId) {
  return {
    role: Role.ROLE_AGENT,
    messageId: crypto.randomUUID(),
    parts: [textPart(text)],
    taskId: taskId ?? '',
    contextId: contextId ?? '',
    extensions: [],
    metadata: undefined,
    referenceTaskIds: [],
  };
}

function userText(message) {
  for (const p of message?.parts ?? []) {
    if (p.content?.$case === 'text') return p.content.value;
  }
  return '';
}

// ---- executor -----------------------------------------------------------------
class FixtureExecutor {
  // taskId -> { cancel: () => void } for executions currently running.
  running = new Map();
  // taskId -> contextId, for cancelling tasks whose execution has returned
  // (an INPUT_REQUIRED task keeps its event bus alive but has no running loop).
  contexts = new Map();

  cancelTask = async (taskId, eventBus) => {
    log(`cancel requested for task ${taskId}`);
    const r = this.running.get(taskId);
    if (r) {
      r.cancel();
      return;
    }
    // Not running (e.g. waiting for input): publish the terminal state here.
    eventBus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: this.contexts.get(taskId) ?? '',
        status: { state: TaskState.TASK_STATE_CANCELED, timestamp: now(), message: undefined },
        metadata: undefined,
      })
    );
  };

  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const text = userText(ctx.userMessage).trim();
    const existing = ctx.task;

    const status = (state, msgText) =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state, timestamp: now(), message: msgText === undefined ? undefined : agentMessage(msgText, taskId, contextId) },
          metadata: undefined,
        })
      );
    // artifact publishes an artifact of one part: text, or the part given.
    const artifact = (name, txtOrPart) =>
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: crypto.randomUUID(),
            name,
            description: '',
            parts: [typeof txtOrPart === 'string' ? textPart(txtOrPart) : txtOrPart],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        })
      );
    const startTask = (state) => {
      this.contexts.set(taskId, contextId);
      const snapshot = existing
        ? { ...existing, status: { state, timestamp: now(), message: undefined } }
        : {
            id: taskId,
            contextId,
            status: { state, timestamp: now(), message: undefined },
            artifacts: [],
            history: [ctx.userMessage],
            metadata: undefined,
          };
      bus.publish(AgentEvent.task(snapshot));
    };

    // Follow-up to an `ask` task.
    if (existing && existing.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      log(`task ${taskId}: answer received: ${JSON.stringify(text)}`);
      startTask(TaskState.TASK_STATE_WORKING);
      artifact('greeting', `hello ${text}`);
      status(TaskState.TASK_STATE_COMPLETED);
      return;
    }

    const word = text.split(/\s+/, 1)[0] ?? '';
    const rest = text.slice(word.length).trim();
    log(`task ${taskId}: command ${JSON.stringify(word)} ${JSON.stringify(rest)}`);

    switch (word.toLowerCase()) {
      case 'reply': {
        bus.publish(AgentEvent.message(agentMessage(`echo: ${rest}`, undefined, contextId)));
        return;
      }
      case 'stream': {
        const n = Math.max(0, Math.min(1000, Number.parseInt(rest, 10) || 0));
        startTask(TaskState.TASK_STATE_SUBMITTED);
        let cancelled = false;
        this.running.set(taskId, { cancel: () => (cancelled = true) });
        try {
          for (let i = 1; i <= n; i++) {
            if (cancelled) break;
            status(TaskState.TASK_STATE_WORKING, `step ${i} of ${n}`);
            await sleep(30);
          }
          if (cancelled) {
            status(TaskState.TASK_STATE_CANCELED);
            return;
          }
          artifact('result', `done after ${n} steps`);
          status(TaskState.TASK_STATE_COMPLETED);
        } finally {
          this.running.delete(taskId);
        }
        return;
      }
      case 'ask': {
        startTask(TaskState.TASK_STATE_SUBMITTED);
        status(TaskState.TASK_STATE_INPUT_REQUIRED, 'what is your name?');
        return;
      }
      case 'wait': {
        startTask(TaskState.TASK_STATE_SUBMITTED);
        let release;
        const cancelled = new Promise((r) => (release = r));
        this.running.set(taskId, { cancel: () => release() });
        try {
          status(TaskState.TASK_STATE_WORKING, 'waiting to be cancelled');
          await cancelled;
          status(TaskState.TASK_STATE_CANCELED);
        } finally {
          this.running.delete(taskId);
        }
        return;
      }
      case 'data': {
        startTask(TaskState.TASK_STATE_SUBMITTED);
        artifact('rows', { content: { $case: 'data', value: [{ id: 1 }, { id: 2 }] }, metadata: undefined, filename: '', mediaType: 'application/json' });
        status(TaskState.TASK_STATE_COMPLETED);
        return;
      }
      case 'fail': {
        startTask(TaskState.TASK_STATE_SUBMITTED);
        status(TaskState.TASK_STATE_FAILED, 'the fixture failed as asked');
        return;
      }
      default: {
        bus.publish(
          AgentEvent.message(
            agentMessage(`unknown command: ${word} (use reply|stream|ask|wait|fail)`, undefined, contextId)
          )
        );
      }
    }
  }
}

// ---- agent card -----------------------------------------------------------------
// The interface URLs are filled in once the port is known (before READY).
const card = {
  name: 'ardgate a2a-js fixture',
  description: 'Test agent built on @a2a-js/sdk. First word of the text picks the behaviour: reply, stream, ask, wait, fail.',
  supportedInterfaces: [],
  provider: { organization: 'ardgate tests', url: 'http://127.0.0.1/' },
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [
    {
      id: 'fixture',
      name: 'Fixture behaviours',
      description: 'reply <text> | stream <n> | ask | wait | fail',
      tags: ['test'],
      examples: ['reply hi', 'stream 3', 'ask', 'wait', 'fail'],
      inputModes: ['text/plain'],
      outputModes: ['text/plain'],
      securityRequirements: [],
    },
  ],
  signatures: [],
};

function fillInterfaces(baseUrl) {
  const v1 = [{ url: `${baseUrl}${JSONRPC_PATH}`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }];
  card.supportedInterfaces = opts.legacyCompat ? duplicateInterfacesForLegacy(v1, ['JSONRPC']) : v1;
}

// ---- server ---------------------------------------------------------------------
const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new FixtureExecutor());
const legacyCompat = opts.legacyCompat ? { enabled: true } : undefined;

const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler, legacyCompat }));
app.use(JSONRPC_PATH, jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));

const server = http.createServer(app);
server.on('error', (err) => {
  log('server error:', err);
  process.exit(1);
});
server.listen(opts.port, '127.0.0.1', () => {
  const { port } = server.address();
  const base = `http://127.0.0.1:${port}`;
  fillInterfaces(base);
  log(`listening on ${base} (JSON-RPC ${base}${JSONRPC_PATH}, legacyCompat=${opts.legacyCompat})`);
  process.stdout.write(`READY ${base}\n`);
});

let stopping = false;
function shutdown(sig) {
  if (stopping) return;
  stopping = true;
  log(`${sig} received, shutting down`);
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
