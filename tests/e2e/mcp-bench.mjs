// Round-trip latency of MCP tools/call through the official SDK client:
// N sequential calls of one tool, after a few warm-up calls.  Prints one
// JSON object: {calls, p50_ms, p90_ms, p99_ms, mean_ms, max_ms}.
//
//   node mcp-bench.mjs --url URL [--tool run_command] [--args '{"command":"true"}'] [--calls 200] [--warmup 5]
import { parseArgs } from './lib/tap.mjs';
import { connect, call, pct } from './lib/mcp-client.mjs';

const a = parseArgs();
const url = a.url || 'http://127.0.0.1:8889/mcp';
const tool = a.tool || 'run_command';
const args = JSON.parse(a.args || '{"command":"true"}');
const n = Number(a.calls || 200);
const client = await connect(url, 'mcp-bench');
for (let i = 0; i < Number(a.warmup || 5); i++) await call(client, tool, args);
const ms = [];
for (let i = 0; i < n; i++) {
  const t0 = process.hrtime.bigint();
  const r = await call(client, tool, args);
  ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  if (r.isError) throw new Error(`${tool} failed: ${JSON.stringify(r.content)}`);
}
await client.close();
ms.sort((x, y) => x - y);
const round = (x) => Math.round(x * 100) / 100;
console.log(JSON.stringify({
  calls: n, p50_ms: round(pct(ms, 50)), p90_ms: round(pct(ms, 90)), p99_ms: round(pct(ms, 99)),
  mean_ms: round(ms.reduce((s, x) => s + x, 0) / n), max_ms: round(ms[n - 1]),
  samples_ms: ms.map(round),
}));
