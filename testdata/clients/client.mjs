// End-to-end check of ardgate with the MCP clients of agent frameworks,
// driven without a model: the library's own MCP client and the tool
// objects it hands an agent.
//
//   node client.mjs <library> stdio <command> [args...]   spawn the gateway on stdio
//   node client.mjs <library> http <url>                  connect over streamable HTTP
//
// <library> is ai-sdk (@ai-sdk/mcp), langchain (@langchain/mcp-adapters),
// openai-agents (@openai/agents) or mastra (@mastra/mcp). Each run lists
// the tools, discovers and attaches npm server-everything (its result
// gives the schemas and a call_example), calls its echo through
// call_attached_tool with a tool object listed at the start (what an
// agent whose tools are fixed for the run has), then lists again and
// calls the echo by name. Prints "OK", or "FAIL: <reason>" and exits 1.
// Run by e2e_clients_test.go.
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { MultiServerMCPClient, loadMcpTools } from '@langchain/mcp-adapters';
import { MCPClient } from '@mastra/mcp';
import { MCPServerStdio, MCPServerStreamableHttp, RunContext, getAllMcpTools } from '@openai/agents';

const URN = 'urn:air:modelcontextprotocol.io:mcp:everything';
const ECHO = 'mcp_everything__echo';

function fail(reason) {
  console.log(`FAIL: ${reason}`);
  process.exit(1);
}

// text is what a tool's result says, whatever shape the library gives it
// in: a string, a CallToolResult, LangChain's [content, artifact], or
// structured content.
function text(res) {
  if (typeof res === 'string') return res;
  if (Array.isArray(res)) return res.map(text).join('');
  if (res?.type === 'text') return res.text;
  if (Array.isArray(res?.content)) return res.content.map(text).join('');
  return JSON.stringify(res);
}

// Each library's connect gives { tools, close }: tools() lists the tools
// as the library's tool objects, { name: call(args) }.
const libraries = {
  async 'ai-sdk'(mode, rest) {
    const transport = mode === 'stdio'
      ? new Experimental_StdioMCPTransport({ command: rest[0], args: rest.slice(1), env: { ...process.env } })
      : { type: 'http', url: rest[0] };
    // The SDK takes no notification (tools/list_changed, progress, a
    // log): it reports each as "Unsupported message type", and goes on.
    const uncaught = (err) => {
      if (!/Unsupported message type/.test(err?.message)) fail(`uncaught: ${err?.message ?? err}`);
      console.error(`ai-sdk: ${err.message}`);
    };
    const client = await createMCPClient({ transport, onUncaughtError: uncaught });
    const tools = async () => {
      const set = await client.tools();
      return Object.fromEntries(Object.entries(set).map(([name, t]) => [name, (args) => t.execute(args, { toolCallId: name, messages: [] })]));
    };
    return { tools, close: () => client.close() };
  },

  async langchain(mode, rest) {
    const server = mode === 'stdio'
      ? { transport: 'stdio', command: rest[0], args: rest.slice(1), env: { ...process.env } }
      : { transport: 'http', url: rest[0] };
    const client = new MultiServerMCPClient({ mcpServers: { ardgate: server }, prefixToolNameWithServerName: false, throwOnLoadError: true });
    // getTools() gives the tools listed when the connection opened, each
    // time; loadMcpTools lists them anew on the same connection.
    let listed = false;
    const tools = async () => {
      const list = listed ? await loadMcpTools('ardgate', await client.getClient('ardgate')) : await client.getTools();
      listed = true;
      return Object.fromEntries(list.map((t) => [t.name, (args) => t.invoke(args)]));
    };
    return { tools, close: () => client.close() };
  },

  async 'openai-agents'(mode, rest) {
    const server = mode === 'stdio'
      ? new MCPServerStdio({ name: 'ardgate', command: rest[0], args: rest.slice(1), env: { ...process.env } })
      : new MCPServerStreamableHttp({ name: 'ardgate', url: rest[0] });
    await server.connect();
    const runContext = new RunContext({});
    // What the agent's runner does at each turn: list the servers' tools
    // anew (no cache), as function tools.
    const tools = async () => {
      const list = await getAllMcpTools({ mcpServers: [server], runContext, convertSchemasToStrict: false });
      return Object.fromEntries(list.map((t) => [t.name, (args) => t.invoke(runContext, JSON.stringify(args))]));
    };
    return { tools, close: () => server.close() };
  },

  async mastra(mode, rest) {
    const server = mode === 'stdio'
      ? { command: rest[0], args: rest.slice(1), env: { ...process.env } }
      : { url: new URL(rest[0]) };
    const client = new MCPClient({ id: `ardgate-e2e-${process.pid}`, servers: { ardgate: server } });
    const tools = async () => {
      const set = await client.getTools(); // named <server>_<tool>
      return Object.fromEntries(Object.entries(set).map(([name, t]) => [name.replace(/^ardgate_/, ''), (args) => t.execute({ context: args })]));
    };
    return { tools, close: () => client.disconnect() };
  },
};

async function call(tools, name, args) {
  if (!tools[name]) fail(`no ${name} among ${Object.keys(tools)}`);
  return text(await tools[name](args));
}

async function main() {
  const [library, mode, ...rest] = process.argv.slice(2);
  const connect = libraries[library];
  if (!connect || !(mode === 'stdio' && rest.length > 0 || mode === 'http' && rest.length === 1)) {
    fail(`usage: node client.mjs ${Object.keys(libraries).join('|')} stdio <command> [args...] | http <url>`);
  }
  const conn = await connect(mode, rest);
  const atStart = await conn.tools();
  for (const name of ['discover_resources', 'attach_resource', 'call_attached_tool']) {
    if (!atStart[name]) fail(`${name} not listed: ${Object.keys(atStart)}`);
  }

  const found = await call(atStart, 'discover_resources', { text: 'echo test tools' });
  if (!found.includes(URN)) fail(`discover_resources did not find ${URN}: ${found.slice(0, 500)}`);
  const attached = await call(atStart, 'attach_resource', { urn: URN });
  if (!attached.includes('"attached"') || !attached.includes(ECHO)) fail(`attach_resource: ${attached.slice(0, 500)}`);
  // What a model needs to call the tools in this run: their schemas, and
  // a call of call_attached_tool to copy.
  const result = JSON.parse(attached);
  const echo = result.tools.find((t) => t.name === ECHO);
  if (!echo?.inputSchema?.properties?.message || result.call_example?.tool !== 'call_attached_tool' || !/call_attached_tool/.test(result.how_to_call)) {
    fail(`attach_resource gave no schemas or call_example: ${attached.slice(0, 500)}`);
  }

  // An agent whose tools were fixed at the run's start calls the new tool
  // through call_attached_tool, one of those it has.
  const through = await call(atStart, 'call_attached_tool', { name: ECHO, arguments: { message: `${library} through call_attached_tool` } });
  if (!through.includes(`Echo: ${library} through call_attached_tool`)) fail(`call_attached_tool: ${through.slice(0, 500)}`);

  // Listed anew (the next run, or OpenAI Agents' next turn), the tool is
  // there, and called by name.
  const after = await conn.tools();
  const direct = await call(after, ECHO, { message: `${library} by name` });
  if (!direct.includes(`Echo: ${library} by name`)) fail(`${ECHO}: ${direct.slice(0, 500)}`);

  await conn.close();
  console.log('OK');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    fail(err?.cause ? `${err.message}: ${err.cause.message ?? err.cause}` : String(err?.message ?? err));
  },
);
