// The official TypeScript SDK client, declaring roots, sampling and
// elicitation, answers what npm server-everything asks of it through the
// gateway, as Claude Code answers servers; run by
// e2e_client_requests_test.go.
//
//   node relay.mjs stdio <command> [args...]   spawn the gateway on stdio
//   node relay.mjs http <url>                  connect over streamable HTTP
//
// Attaches server-everything, calls its get-roots-list,
// trigger-sampling-request and trigger-elicitation-request (answered with
// a form's content), changes its roots and waits for the server to ask
// again, then prints "OK", or "FAIL: <reason>" and exits 1.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

function fail(reason) {
  console.log(`FAIL: ${reason}`);
  process.exit(1);
}

function text(res) {
  return (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
}

const [mode, ...rest] = process.argv.slice(2);
const transport = mode === 'stdio'
  ? new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: { ...process.env } })
  : new StreamableHTTPClientTransport(new URL(rest[0]));

const client = new Client({ name: 'ardgate-relay-e2e', version: '1.0.0' },
  { capabilities: { roots: { listChanged: true }, sampling: {}, elicitation: { form: {} } } });
let roots = [{ uri: 'file:///work/ts-project', name: 'ts-project' }];
let rootsAsked = 0;
const asked = [];
client.setRequestHandler(ListRootsRequestSchema, async () => {
  rootsAsked++;
  return { roots };
});
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  asked.push('sampling');
  return { role: 'assistant', content: { type: 'text', text: `the SDK's model read: ${req.params.messages.length} message(s)` }, model: 'ts-model', stopReason: 'endTurn' };
});
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push('elicitation');
  // The form's fields in the server's order, as the client shows them.
  const fields = Object.keys(req.params.requestedSchema?.properties ?? {});
  if (fields.length === 0) fail(`an elicitation with no form: ${JSON.stringify(req.params)}`);
  return { action: 'decline' };
});

async function main() {
  await client.connect(transport);
  const attached = await client.callTool({ name: 'attach_resource', arguments: { urn: 'urn:air:modelcontextprotocol.io:mcp:everything' } });
  if (attached.isError) fail(`attach: ${text(attached)}`);
  const names = (await client.listTools()).tools.map((t) => t.name);
  for (const tool of ['get-roots-list', 'trigger-sampling-request', 'trigger-elicitation-request']) {
    if (!names.includes(`mcp_everything__${tool}`)) fail(`mcp_everything__${tool} not listed: the server was not told the client's capabilities`);
  }
  const rootsRes = await client.callTool({ name: 'mcp_everything__get-roots-list', arguments: {} });
  if (!text(rootsRes).includes('file:///work/ts-project')) fail(`get-roots-list: ${text(rootsRes)}`);
  const sampled = await client.callTool({ name: 'mcp_everything__trigger-sampling-request', arguments: { prompt: 'say hi', maxTokens: 20 } });
  if (!text(sampled).includes("the SDK's model read: 1 message(s)")) fail(`trigger-sampling-request: ${text(sampled)}`);
  const elicited = await client.callTool({ name: 'mcp_everything__trigger-elicitation-request', arguments: {} });
  if (!text(elicited).includes('declined')) fail(`trigger-elicitation-request: ${text(elicited)}`);
  if (asked.join(',') !== 'sampling,elicitation') fail(`the client was asked ${asked}`);

  const before = rootsAsked;
  roots = [{ uri: 'file:///work/other', name: 'other' }];
  await client.sendRootsListChanged();
  const deadline = Date.now() + 10_000;
  while (rootsAsked === before) {
    if (Date.now() > deadline) fail('the server never asked for the roots again after they changed');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const again = await client.callTool({ name: 'mcp_everything__get-roots-list', arguments: {} });
  if (!text(again).includes('file:///work/other')) fail(`get-roots-list after the change: ${text(again)}`);

  if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession();
  await client.close();
  console.log('OK');
}

main().then(() => process.exit(0), (err) => fail(String(err?.message ?? err)));
