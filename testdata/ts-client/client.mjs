// End-to-end check of ardgate with the official TypeScript MCP SDK client.
//
//   node client.mjs stdio <command> [args...]   spawn the gateway on stdio
//   node client.mjs http <url>                  connect over streamable HTTP
//
// Runs discover -> attach -> tools/list_changed -> a listing (over HTTP on
// the gateway's fast path) -> call -> a call with
// progress, as Claude Code calls -> call -> a call cancelled -> call ->
// a call over the cap -> call -> prompts, resources, a completion and a
// subscription -> a failure of a tool with an outputSchema -> detach and prints "OK", or "FAIL: <reason>" and exits 1. Run by
// e2e_tsclient_test.go.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const URN = 'urn:air:ardgate.test:mcp:fixture';
const TOOL = 'mcp_fixture__echo';
const SLOW = 'mcp_fixture__slow';
const MESSAGE = 'from typescript';

function fail(reason) {
  console.log(`FAIL: ${reason}`);
  process.exit(1);
}

function makeTransport([mode, ...rest]) {
  if (mode === 'stdio' && rest.length > 0) {
    // Without env the SDK passes the gateway only a few safe variables; pass
    // all of ours so it inherits exactly the environment the test set up
    // (PATH with the stand-in npx first, HOME, ...).
    return new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: { ...process.env } });
  }
  if (mode === 'http' && rest.length === 1) {
    return new StreamableHTTPClientTransport(new URL(rest[0]));
  }
  fail('usage: node client.mjs stdio <command> [args...] | node client.mjs http <url>');
}

// call calls a tool that must succeed and returns its result.
async function call(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  if (res.isError) fail(`${name}: ${text(res)}`);
  return res;
}

// downWithSchema crashes the fixture, then calls its tool that declares an
// outputSchema: the gateway's failure must reach the model. The SDK checks
// structuredContent against the schema even in an error result, and threw
// "Structured content does not match the tool's output schema" while the
// gateway's failure body was there; the body is in _meta instead. The
// next call after a crash starts the server again: it is crashed twice, so
// that the call comes within 5 s of that start, and finds it down.
async function downWithSchema(client) {
  await client.callTool({ name: 'mcp_fixture__crash', arguments: {} });
  const again = await client.callTool({ name: 'mcp_fixture__add', arguments: { a: 1, b: 2 } });
  if (again.isError || again.structuredContent?.sum !== 3) fail(`mcp_fixture__add, its server started again: ${JSON.stringify(again)}`);
  await client.callTool({ name: 'mcp_fixture__crash', arguments: {} });
  const res = await client.callTool({ name: 'mcp_fixture__add', arguments: { a: 1, b: 2 } });
  if (!res.isError || !text(res).includes('upstream is down')) fail(`mcp_fixture__add, its server down: ${JSON.stringify(res)}`);
  const body = res._meta?.['ardgate/failure'];
  if (body?.code !== 'upstream_down' || body?.error !== text(res)) fail(`the failure's body in _meta: ${JSON.stringify(res._meta)}`);
}

function text(res) {
  return (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
}

async function toolNames(client) {
  return (await client.listTools()).tools.map((t) => t.name);
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// cancelSlow stops a long call as Claude Code does when the user stops
// it: the SDK sends notifications/cancelled (over HTTP it leaves the
// call's POST open) and forgets the call's id. The gateway must end the
// call at once: over HTTP its /metrics shows one more failed proxied call
// (left running, it would end after 20 s). It must not answer the
// cancelled request, which the SDK would report as an error; over HTTP
// the POST ends as an event stream with no message. A call made after
// the cancellation is answered after any such answer.
async function cancelSlow(client, metrics, errors) {
  const failed = async () => {
    const body = await (await fetch(metrics)).text();
    const m = body.match(/^ardgate_tool_calls_total\{result="error",tool="proxied"\} (\d+)$/m);
    return m ? Number(m[1]) : 0;
  };
  const before = metrics ? await failed() : 0;
  const stop = new AbortController();
  setTimeout(() => stop.abort('stopped by the user'), 300);
  try {
    await client.callTool({ name: SLOW, arguments: { ms: 20000 } }, undefined, { signal: stop.signal });
    fail(`${SLOW} went on after it was cancelled`);
  } catch (err) {
    if (!stop.signal.aborted) throw err;
  }
  const deadline = Date.now() + 5000;
  while (metrics && (await failed()) <= before) {
    if (Date.now() > deadline) fail(`the gateway kept the cancelled ${SLOW} running`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const again = text(await call(client, TOOL, { message: 'after the cancelled call' }));
  if (again !== 'after the cancelled call') fail(`${TOOL} after the cancelled call returned ${JSON.stringify(again)}`);
  const answered = errors.filter((e) => /unknown message ID/.test(String(e?.message ?? e)));
  if (answered.length > 0) fail(`the cancelled call was answered: ${answered[0]}`);
}

// overCap sends a call over the gateway's 10 MiB cap on a message, as a
// user handing a large file to a tool would. The SDK writes the id last,
// after the arguments; the gateway must still refuse the call under its
// id, at once, not leave it to the SDK's own timeout of a minute.
async function overCap(client) {
  let err;
  try {
    await withTimeout(client.callTool({ name: TOOL, arguments: { message: 'x'.repeat(11 << 20) } }), 10_000, 'the answer to a call over the cap');
  } catch (e) {
    err = e;
  }
  if (!/larger than the gateway's 10 MiB cap/.test(String(err?.message))) fail(`a call over the cap: ${err ? err.message : 'it succeeded'}`);
  const after = text(await call(client, TOOL, { message: 'after the call over the cap' }));
  if (after !== 'after the call over the cap') fail(`${TOOL} after the call over the cap returned ${JSON.stringify(after)}`);
}

// promptsAndResources checks the attached server's prompts, resources,
// completions and a subscription through the gateway; the SDK checks each
// answer against its schemas.
async function promptsAndResources(client) {
  const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  if (!prompts.includes('mcp_fixture__greet')) fail(`prompts/list: ${prompts}`);
  const got = await client.getPrompt({ name: 'mcp_fixture__greet', arguments: { name: 'Ts' } });
  if (got.messages?.[0]?.content?.text !== 'Hello, Ts!') fail(`prompts/get: ${JSON.stringify(got)}`);
  const done = await client.complete({ ref: { type: 'ref/prompt', name: 'mcp_fixture__greet' }, argument: { name: 'name', value: 'B' } });
  if (JSON.stringify(done.completion.values) !== '["Bea","Bob"]') fail(`completion/complete: ${JSON.stringify(done)}`);
  const uris = (await client.listResources()).resources.map((r) => r.uri);
  if (!uris.includes('fixture://readme')) fail(`resources/list: ${uris}`);
  const read = await client.readResource({ uri: 'test://template/5/data' });
  if (!read.contents?.[0]?.text?.includes('Data for ID: 5')) fail(`resources/read: ${JSON.stringify(read)}`);

  let updated;
  const heard = new Promise((resolve) => { updated = resolve; });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated(n.params.uri));
  await client.subscribeResource({ uri: 'test://watched-resource' });
  const touched = text(await call(client, 'mcp_fixture__touch', { uri: 'test://watched-resource' }));
  if (touched !== 'updated') fail(`touch after subscribing: ${touched}`);
  const uri = await withTimeout(heard, 10_000, 'notifications/resources/updated');
  if (uri !== 'test://watched-resource') fail(`resources/updated of ${uri}`);
  await client.unsubscribeResource({ uri: 'test://watched-resource' });
}

async function main() {
  const transport = makeTransport(process.argv.slice(2));
  const client = new Client({ name: 'ardgate-ts-e2e', version: '1.0.0' });
  const errors = [];
  client.onerror = (err) => errors.push(err);

  let listChanged;
  const toolsChanged = new Promise((resolve) => { listChanged = resolve; });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => listChanged());

  await client.connect(transport);
  if (transport.protocolVersion) console.error(`negotiated protocol ${transport.protocolVersion}`);

  const before = await toolNames(client);
  if (!before.includes('discover_resources')) fail(`no discover_resources in ${before}`);
  if (before.includes(TOOL)) fail(`${TOOL} listed before attach`);

  const found = await call(client, 'discover_resources', { text: 'fixture echo' });
  const urns = (found.structuredContent?.results ?? []).map((r) => r.urn);
  if (!urns.includes(URN)) fail(`discover_resources did not find ${URN}: ${text(found)}`);

  await call(client, 'attach_resource', { urn: URN });
  await withTimeout(toolsChanged, 10_000, 'notifications/tools/list_changed');

  const http = transport instanceof StreamableHTTPClientTransport;
  const fastLists = async () => {
    const body = await (await fetch(new URL('/metrics', process.argv[3]))).text();
    const m = body.match(/^ardgate_tool_lists_total\{path="fast"\} (\d+)$/m);
    return m ? Number(m[1]) : 0;
  };
  const fastBefore = http ? await fastLists() : 0;
  const after = await toolNames(client);
  if (!after.includes(TOOL)) fail(`${TOOL} not listed after attach: ${after}`);
  // The SDK checks the listing against its schema; over HTTP the gateway
  // answered it on its fast path, from encoded definitions, unless the
  // fast path is off.
  const fastOn = process.env.ARDGATE_FAST_PATH !== 'off';
  const fastNow = http ? await fastLists() : 0;
  if (http && fastOn && fastNow <= fastBefore) fail('the listing after attach did not take the fast path');
  if (http && !fastOn && fastNow !== fastBefore) fail('the listing took the fast path, which is off');

  const echoed = text(await call(client, TOOL, { message: MESSAGE }));
  if (echoed !== MESSAGE) fail(`${TOOL} returned ${JSON.stringify(echoed)}, want ${JSON.stringify(MESSAGE)}`);

  // With onprogress the SDK sends a progress token, as Claude Code does;
  // the fixture reports progress every 50 ms, and the gateway relays one
  // every 250 ms. The one it holds to the end is written just before the
  // result, and the SDK may drop it: it hears progress a microtask late
  // (typescript-sdk#2580). So the call lasts long enough for two more.
  const heard = [];
  const slow = await client.callTool({ name: SLOW, arguments: { ms: 600 } }, undefined, { onprogress: (p) => heard.push(p) });
  if (slow.isError || text(slow) !== 'slept 600ms') fail(`${SLOW} with progress: ${JSON.stringify(slow)}`);
  if (heard.length < 2) fail(`${SLOW} reported ${heard.length} progress notifications, want 2 or more`);
  const again = text(await call(client, TOOL, { message: 'after progress' }));
  if (again !== 'after progress') fail(`${TOOL} after the call with progress returned ${JSON.stringify(again)}`);

  await cancelSlow(client, http ? new URL('/metrics', process.argv[3]) : null, errors);
  await overCap(client);
  await promptsAndResources(client);
  await downWithSchema(client);

  await call(client, 'detach_resource', { name: 'fixture' });

  if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession();
  await client.close();
  console.log('OK');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    fail(err?.cause ? `${err.message}: ${err.cause.message ?? err.cause}` : String(err?.message ?? err));
  },
);
