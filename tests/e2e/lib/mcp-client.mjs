// The one MCP client of the end-to-end scripts: the official SDK client
// (Client + StreamableHTTPClientTransport), result helpers, and raw JSON-RPC
// over HTTP for the bad-input checks that an SDK client would refuse to send.
// (Their TAP lines and arguments: ./tap.mjs.)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// Through cloche-proxy every request carries the sandbox token: set
// CLOCHE_MCP_BEARER and every test here sends it.
export function authHeaders() {
  const t = process.env.CLOCHE_MCP_BEARER;
  return t ? { authorization: `Bearer ${t}` } : {};
}

// Connects the SDK client.  token: sent as `Authorization: Bearer TOKEN`
// (a sandbox token, a portal key); headers: extra HTTP headers on every
// request (e.g. an Origin, as a browser-based client sends).  Returns the
// Client (close it with close()).
export async function connect(url, name = 'cloche-e2e', { token, headers } = {}) {
  const client = new Client({ name, version: '1.0.0' });
  const all = { ...authHeaders(), ...(token ? { Authorization: `Bearer ${token}` } : {}), ...(headers || {}) };
  const requestInit = Object.keys(all).length ? { headers: all } : undefined;
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
  await client.connect(transport);
  return client;
}

// Concatenated text of a CallToolResult's text items.
export function textOf(result) {
  return (result.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

// Calls a tool; opts are the SDK's RequestOptions (signal, onprogress,
// timeout, resetTimeoutOnProgress).
export function call(client, name, args, opts) {
  return client.callTool({ name, arguments: args }, undefined, opts);
}

// One raw POST to the MCP endpoint.  body is a string (sent as is) or an
// object (JSON-encoded).  Returns {status, headers, text, json}.
export async function rawPost(url, body, { session, headers = {}, accept = 'application/json, text/event-stream',
  contentType = 'application/json' } = {}) {
  const h = { 'content-type': contentType, accept, ...authHeaders(), ...headers };
  if (session) h['mcp-session-id'] = session;
  const res = await fetch(url, { method: 'POST', headers: h, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, text, json };
}

// One POST through node:http, which (unlike fetch) sends the Host header it
// is given.  Returns {status, text}.
export async function rawHostPost(url, body, headers) {
  const { request } = await import('node:http');
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } },
    (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
}

// initialize + notifications/initialized over raw HTTP; returns the session id.
export async function rawSession(url, version = '2025-06-18') {
  const r = await rawPost(url, {
    jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  const sid = r.headers.get('mcp-session-id');
  if (r.status !== 200 || !sid) throw new Error(`initialize: HTTP ${r.status} ${r.text}`);
  await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { session: sid });
  return sid;
}

// Percentile of sorted numbers.
export function pct(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
