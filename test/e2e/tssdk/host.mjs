// A host on the official TypeScript MCP client SDK (@modelcontextprotocol/client), as an
// agent application runs it: no scope configured, OAuth discovered from the server's 401,
// dynamic registration, PKCE and the resource indicator by the SDK itself. The user's part
// (login and consent in a browser) is played by the Go test that runs this script
// (test/e2e/mcp_tssdk_test.go): each authorization URL is printed as a JSON line, and the
// test delivers the redirect to this script's loopback callback.
//
// Environment: MCP_URL (the server's /mcp), BOT_ID (a paper bot of the user).
// Output: one JSON object per line: {"event": "authorize", "url"}, {"event": "tokens",
// "scope"}, {"event": "check_auth", "scope"}, {"event": "send_signal", "result"},
// {"event": "done"}, or {"event": "error", "message"} before exiting 1.
import http from 'node:http';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const mcpUrl = new URL(process.env.MCP_URL);
const botId = process.env.BOT_ID;

// The loopback callback (RFC 8252): each redirect resolves the next waiting promise.
const callbacks = [];
let waiting = null;
const server = http.createServer((req, res) => {
  const u = new URL(req.url, 'http://127.0.0.1');
  if (u.pathname !== '/callback') {
    res.statusCode = 404;
    res.end();
    return;
  }
  res.end('You may close this window.');
  if (waiting) {
    const w = waiting;
    waiting = null;
    w(u.searchParams);
  } else {
    callbacks.push(u.searchParams);
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = server.address().port;
const nextCallback = () => (callbacks.length ? Promise.resolve(callbacks.shift()) : new Promise((resolve) => { waiting = resolve; }));

// An in-memory provider, as a desktop host keeps its registration and tokens.
const store = {};
const provider = {
  get redirectUrl() { return `http://127.0.0.1:${port}/callback`; },
  get clientMetadata() {
    return { client_name: 'TypeScript SDK host', redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  clientInformation() { return store.client; },
  saveClientInformation(c) { store.client = c; },
  tokens() { return store.tokens; },
  saveTokens(t) { store.tokens = t; out({ event: 'tokens', scope: t.scope }); },
  redirectToAuthorization(url) { out({ event: 'authorize', url: url.toString() }); },
  saveCodeVerifier(v) { store.verifier = v; },
  codeVerifier() { return store.verifier; },
};

// authorized runs fn; when the SDK needs the user's authorization (UnauthorizedError after
// printing the URL), it waits for the redirect, lets the SDK redeem the code, and runs fn
// once more.
async function authorized(transport, fn) {
  try {
    return await fn();
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    const params = await nextCallback();
    if (params.get('error')) throw new Error(`authorization refused: ${params.get('error')} ${params.get('error_description') ?? ''}`);
    await transport.finishAuth(params);
    return await fn();
  }
}

try {
  // The first connection: the 401 starts the authorization. A transport that started is
  // not started again: a new one connects with the tokens the SDK saved.
  let transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  let client = new Client({ name: 'tssdk-host', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    const params = await nextCallback();
    if (params.get('error')) throw new Error(`authorization refused: ${params.get('error')}`);
    await transport.finishAuth(params);
    transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    client = new Client({ name: 'tssdk-host', version: '1.0.0' });
    await client.connect(transport);
  }
  const auth = await client.callTool({ name: 'check_auth', arguments: {} });
  out({ event: 'check_auth', scope: auth.structuredContent?.token?.scope });
  // The first paper call: the server answers 403 insufficient_scope naming mcp:paper, and
  // the SDK steps up through a second authorization.
  const sent = await authorized(transport, () => client.callTool({ name: 'send_signal',
    arguments: { botId, action: 'buy', symbol: 'BTCUSDT', size: '0.001' } }));
  out({ event: 'send_signal', result: sent.structuredContent ?? sent.content });
  const after = await client.callTool({ name: 'check_auth', arguments: {} });
  out({ event: 'check_auth', scope: after.structuredContent?.token?.scope });
  await client.close();
  out({ event: 'done' });
  server.close();
  process.exit(0);
} catch (e) {
  out({ event: 'error', message: String(e?.stack ?? e) });
  server.close();
  process.exit(1);
}
