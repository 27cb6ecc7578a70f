// One MCP session held across many calls, driven line by line: the client a
// test keeps while the sandbox under it hibernates and wakes.
//   node mcp-session.mjs --url URL [--token T] [--timeout-ms N]
// Reads one JSON object per stdin line, {"tool": NAME, "args": {...}}, and
// prints one JSON line per call: {"ok", "text", "session", "error"?}.  The
// same Client (and so the same Mcp-Session-Id) serves every line; it ends
// when stdin closes.
import readline from 'node:readline';
import { parseArgs } from './lib/tap.mjs';
import { connect, call, textOf } from './lib/mcp-client.mjs';

const args = parseArgs();
if (!args.url) {
  console.error('usage: mcp-session.mjs --url URL [--token TOKEN] [--timeout-ms N]');
  process.exit(2);
}
const client = await connect(args.url, 'cloche-mcp-session', { token: args.token });
const session = client.transport && client.transport.sessionId;
const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  let out;
  try {
    const { tool, args: a } = JSON.parse(line);
    const res = await call(client, tool, a || {}, { timeout: Number(args['timeout-ms'] || 120000) });
    out = { ok: !res.isError, text: textOf(res), session: client.transport.sessionId };
  } catch (e) {
    out = { ok: false, error: String(e && e.message ? e.message : e), session: client.transport.sessionId };
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}
console.error(`session ${session} done`);
await client.close().catch(() => {});
