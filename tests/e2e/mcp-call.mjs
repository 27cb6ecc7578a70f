// One MCP tool call through the SDK client, for shell tests and benchmarks:
//   node mcp-call.mjs --url http://10.0.2.15:8889/mcp --tool run_command \
//        --args '{"command":"id"}' [--timeout-ms 60000] [--token st1....]
// Prints the result's text to stdout.  Exit 0 for a result, 1 for a result
// with isError, 2 when the call itself failed (message on stderr).
import { parseArgs } from './lib/tap.mjs';
import { connect, call, textOf } from './lib/mcp-client.mjs';

const args = parseArgs();
if (!args.url || !args.tool) {
  console.error('usage: mcp-call.mjs --url URL --tool NAME [--args JSON] [--timeout-ms N] [--token TOKEN]');
  process.exit(2);
}
let client;
try {
  client = await connect(args.url, 'cloche-mcp-call', { token: args.token });
  const res = await call(client, args.tool, JSON.parse(args.args || '{}'),
    { timeout: Number(args['timeout-ms'] || 60000) });
  process.stdout.write(textOf(res) + '\n');
  process.exitCode = res.isError ? 1 : 0;
} catch (e) {
  console.error(`mcp-call: ${e && e.message ? e.message : e}`);
  process.exitCode = 2;
} finally {
  if (client) await client.close().catch(() => {});
}
