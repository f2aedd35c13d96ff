// A streamable HTTP MCP server on the official TypeScript SDK, for
// e2e_tsclient_test.go: the non-Go upstream of the gateway's own HTTP
// client (attach/post.go).
//
//   node server.mjs <port>      serve on 127.0.0.1:<port>/mcp
//
// Its tool "poll" answers as a 2025-11-25 server answers a long call
// without holding a connection (SEP-1699): it closes the call's event
// stream after the priming event, sends its progress and answers later;
// the client polls with GETs carrying Last-Event-ID. The tool "echo"
// answers at once. The tool "ask" asks the client for a sampling and
// gives up on it after 500 ms, which the SDK tells the client with
// notifications/cancelled. The tool "grow" adds a tool "grown", which the SDK
// announces with tools/list_changed on the session's GET stream. It
// prints "listening on <port>" to stderr when ready.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { z } from 'zod';

const port = Number(process.argv[2]);
if (!port) {
  console.error('usage: node server.mjs <port>');
  process.exit(2);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function newServer() {
  const server = new McpServer({ name: 'ts-upstream', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echoes its message', inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: 'text', text: `echo: ${message}` }] }));
  server.registerTool('poll', { description: 'Answers after closing its stream, so that the client polls', inputSchema: {} },
    async (_args, extra) => {
      if (!extra.closeSSEStream) {
        throw new Error('no closeSSEStream: the transport has no event store');
      }
      extra.closeSSEStream();
      await sleep(100);
      const token = extra._meta?.progressToken;
      if (token !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } });
      }
      await sleep(100);
      return { content: [{ type: 'text', text: 'answered after polling' }] };
    });
  server.registerTool('ask', { description: 'Asks the client for a sampling and gives up after 500 ms, cancelling its request', inputSchema: {} },
    async () => {
      try {
        const res = await server.server.createMessage(
          { messages: [{ role: 'user', content: { type: 'text', text: 'say hi' } }], maxTokens: 5 }, { timeout: 500 });
        return { content: [{ type: 'text', text: `the client answered: ${JSON.stringify(res.content)}` }] };
      } catch (err) {
        return { content: [{ type: 'text', text: `gave up: ${err.message}` }] };
      }
    });
  let grown = false;
  server.registerTool('grow', { description: 'Adds the tool "grown", which the SDK announces with tools/list_changed on the GET stream', inputSchema: {} },
    async () => {
      if (!grown) {
        grown = true;
        server.registerTool('grown', { description: 'Added by grow', inputSchema: {} },
          async () => ({ content: [{ type: 'text', text: 'grown' }] }));
      }
      return { content: [{ type: 'text', text: 'grew' }] };
    });
  return server;
}

const transports = new Map(); // by session id

const http = createServer(async (req, res) => {
  const id = req.headers['mcp-session-id'];
  let transport = id ? transports.get(id) : undefined;
  if (!transport) {
    if (req.method !== 'POST' || id) {
      res.writeHead(id ? 404 : 400).end();
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new InMemoryEventStore(),
      retryInterval: 20,
      onsessioninitialized: (sid) => transports.set(sid, transport),
    });
    transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res);
});
http.listen(port, '127.0.0.1', () => console.error(`listening on ${port}`));
