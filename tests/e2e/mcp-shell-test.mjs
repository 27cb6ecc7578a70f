// mcp-shell end to end with the official MCP SDK client, then bad input
// over raw HTTP.  Prints "ok - ..." / "not ok - ..." lines; exits non-zero
// when anything failed.
//
//   node mcp-shell-test.mjs --url http://10.0.2.15:8889/mcp [--user agent] [--via-proxy 1]
//   (through cloche-proxy: CLOCHE_MCP_BEARER=<sandbox token> in the environment)
import { tap, parseArgs } from './lib/tap.mjs';
import { connect, call, textOf, rawPost, rawHostPost, rawSession, authHeaders } from './lib/mcp-client.mjs';

const args = parseArgs();
const url = args.url || 'http://127.0.0.1:8889/mcp';
const stamp = `${process.pid}${Date.now() % 100000}`;
const dir = args.dir || '/tmp';
// Through cloche-proxy (--via-proxy) a foreign Host never reaches the
// server: the proxy routes by Host and answers 404 itself.
const hostStatus = args['via-proxy'] ? 404 : 403;

const client = await connect(url, 'mcp-shell-test');
const sc = (r) => r.structuredContent || {};

await tap.step('tools/list', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  const want = ['run_command', 'start_process', 'list_processes', 'read_process_output', 'kill_process',
    'read_file', 'write_file', 'edit_file', 'list_directory', 'stat_path', 'delete_path', 'glob', 'grep'];
  const missing = want.filter((n) => !names.includes(n));
  tap.check(!missing.length, `tools/list has the ${want.length} shell tools`, `missing ${missing}`);
  tap.check(tools.every((t) => t.description && t.description.length > 40 && t.inputSchema.type === 'object'),
    'every tool has a description and an object input schema');
});

await tap.step('run_command echo', async () => {
  const r = await call(client, 'run_command', { command: 'echo hello; echo oops >&2; exit 3' });
  tap.check(sc(r).stdout === 'hello\n' && sc(r).stderr === 'oops\n' && sc(r).exit_code === 3 && !r.isError,
    'run_command returns stdout, stderr and the exit code', JSON.stringify(sc(r)));
  tap.check(textOf(r).includes('hello') && textOf(r).includes('[exit code: 3]'), 'the text content shows output and exit code');
});

if (args.user) {
  await tap.step('user', async () => {
    const r = await call(client, 'run_command', { command: 'id -un; echo "$HOME"' });
    tap.check(sc(r).stdout.split('\n')[0] === args.user, `commands run as ${args.user}`, sc(r).stdout);
  });
}

await tap.step('env, cwd and stdin', async () => {
  const r = await call(client, 'run_command', { command: 'echo "$FOO $(pwd)"; cat', env: { FOO: 'bar' }, cwd: '/tmp', stdin: 'from-stdin' });
  tap.check(sc(r).stdout === 'bar /tmp\nfrom-stdin', 'env, cwd and stdin reach the command', sc(r).stdout);
});

// A timeout kills the whole tree, including a grandchild in its own session.
const sleeps = `sleep 100.${stamp} & setsid sleep 101.${stamp} & sleep 102.${stamp}; wait`;
const countSleeps = `grep -alE 'sl[e]ep 10[0-2]\\.${stamp}' /proc/[0-9]*/cmdline 2>/dev/null | wc -l`;
await tap.step('timeout', async () => {
  const t0 = Date.now();
  const r = await call(client, 'run_command', { command: sleeps, timeout_ms: 1500 });
  const ms = Date.now() - t0;
  tap.check(r.isError && sc(r).timed_out === true, 'a command past timeout_ms is reported as timed out', JSON.stringify(r).slice(0, 300));
  tap.check(ms < 8000, `the timed-out call returns promptly (${ms} ms)`);
  const left = await call(client, 'run_command', { command: countSleeps });
  tap.check(sc(left).stdout.trim() === '0', 'no process of the timed-out tree survives (children, setsid grandchild)', sc(left).stdout);
});

await tap.step('output cap', async () => {
  const r = await call(client, 'run_command', { command: "head -c 200000 /dev/zero | tr '\\0' a" });
  const out = sc(r).stdout;
  tap.check(out.length < 70000 && /\[\.\.\. truncated: \d+ more bytes \.\.\.\]$/.test(out),
    `output beyond the cap is truncated with a marker (${out.length} chars kept)`, out.slice(-80));
});

await tap.step('progress', async () => {
  let n = 0;
  const r = await call(client, 'run_command', { command: 'sleep 4.5; echo done' }, { onprogress: () => { n++; } });
  tap.check(sc(r).stdout === 'done\n' && n >= 1, `a long command streams progress notifications (${n}) before its result`);
});

await tap.step('cancellation', async () => {
  const ac = new AbortController();
  const p = call(client, 'run_command', { command: `sleep 103.${stamp}` }, { signal: ac.signal, timeout: 60000 });
  setTimeout(() => ac.abort('test'), 1500);
  const rejected = await p.then(() => false, () => true);
  tap.check(rejected, 'an aborted call is cancelled on the client');
  await new Promise((res) => setTimeout(res, 1500));
  const left = await call(client, 'run_command', { command: `grep -alE 'sl[e]ep 103\\.${stamp}' /proc/[0-9]*/cmdline 2>/dev/null | wc -l` });
  tap.check(sc(left).stdout.trim() === '0', 'notifications/cancelled kills the command', sc(left).stdout);
});

await tap.step('files', async () => {
  const f = `${dir}/mcp-e2e-${stamp}/sub/file.txt`;
  let r = await call(client, 'write_file', { path: f, content: 'alpha\nbeta\ngamma\n', create_dirs: true });
  tap.check(!r.isError, 'write_file creates a file and its directories', textOf(r));
  r = await call(client, 'edit_file', { path: f, old_str: 'beta', new_str: 'BETA' });
  tap.check(!r.isError && sc(r).line === 2, 'edit_file replaces a unique string', textOf(r));
  r = await call(client, 'edit_file', { path: f, old_str: 'a\n', new_str: 'x' });
  tap.check(r.isError && /occurs 2 times/.test(textOf(r)), 'edit_file refuses an ambiguous old_str', textOf(r));
  r = await call(client, 'edit_file', { path: f, old_str: 'nope', new_str: 'x' });
  tap.check(r.isError && /not found/.test(textOf(r)), 'edit_file reports a missing old_str', textOf(r));
  r = await call(client, 'read_file', { path: f });
  tap.check(sc(r).content === 'alpha\nBETA\ngamma\n' && sc(r).encoding === 'utf8', 'read_file reads the edited text back', JSON.stringify(sc(r)));
  r = await call(client, 'write_file', { path: `${f}.bin`, content: Buffer.from([0, 1, 2, 255]).toString('base64'), encoding: 'base64' });
  r = await call(client, 'read_file', { path: `${f}.bin` });
  tap.check(sc(r).encoding === 'base64' && sc(r).content === 'AAEC/w==', 'binary files round-trip as base64', JSON.stringify(sc(r)));
  r = await call(client, 'read_file', { path: `${dir}/does-not-exist-${stamp}` });
  tap.check(r.isError && /No such file or directory/.test(textOf(r)), 'read_file of a missing file is a tool error', textOf(r));
  r = await call(client, 'list_directory', { path: `${dir}/mcp-e2e-${stamp}`, recursive: true });
  tap.check((sc(r).entries || []).some((e) => e.name === 'sub/file.txt'), 'list_directory recurses', textOf(r));
  r = await call(client, 'grep', { pattern: 'BE+TA', path: `${dir}/mcp-e2e-${stamp}` });
  tap.check(sc(r).count === 1 && textOf(r).includes('file.txt:2:BETA'), 'grep finds the line', textOf(r));
  r = await call(client, 'glob', { pattern: '**/*.txt', cwd: `${dir}/mcp-e2e-${stamp}` });
  tap.check((sc(r).matches || []).includes('sub/file.txt'), 'glob matches across directories', textOf(r));
  r = await call(client, 'stat_path', { path: f });
  tap.check(sc(r).type === 'file' && sc(r).size === 17, 'stat_path describes the file', textOf(r));
  r = await call(client, 'delete_path', { path: `${dir}/mcp-e2e-${stamp}`, recursive: true });
  r = await call(client, 'stat_path', { path: f });
  tap.check(sc(r).exists === false, 'delete_path removes the tree', textOf(r));
});

await tap.step('background processes', async () => {
  let r = await call(client, 'start_process', { command: 'for i in 1 2 3; do echo line$i; sleep 0.3; done; exit 7' });
  const id = sc(r).id;
  tap.check(/^p\d+$/.test(id || ''), `start_process returns an id (${id})`, textOf(r));
  let out = '';
  for (let i = 0; i < 20 && !/line3/.test(out); i++) {
    r = await call(client, 'read_process_output', { id, wait_ms: 2000 });
    out += sc(r).output || '';
  }
  tap.check(/line1\nline2\nline3/.test(out), 'read_process_output returns the output in order', out);
  for (let i = 0; i < 20 && sc(r).running; i++) r = await call(client, 'read_process_output', { id, wait_ms: 1000 });
  tap.check(sc(r).running === false && sc(r).exit_code === 7, 'the exit code is reported', JSON.stringify(sc(r)));
  r = await call(client, 'start_process', { command: `sleep 104.${stamp}` });
  const id2 = sc(r).id;
  r = await call(client, 'list_processes', {});
  tap.check((sc(r).processes || []).some((p) => p.id === id2 && p.running), 'list_processes shows the running process');
  r = await call(client, 'kill_process', { id: id2 });
  for (let i = 0; i < 20; i++) {
    r = await call(client, 'read_process_output', { id: id2, wait_ms: 500 });
    if (!sc(r).running) break;
  }
  tap.check(sc(r).running === false, 'kill_process stops it', JSON.stringify(sc(r)));
});

// One slow call must not hold up another session.
await tap.step('concurrency', async () => {
  const other = await connect(url, 'mcp-shell-test-2');
  const slow = call(client, 'run_command', { command: 'sleep 3' });
  await new Promise((res) => setTimeout(res, 200));
  const t0 = Date.now();
  await other.ping();
  const r = await call(other, 'run_command', { command: 'echo quick' });
  const ms = Date.now() - t0;
  tap.check(sc(r).stdout === 'quick\n' && ms < 2500, `a second session is served while a slow call runs (${ms} ms)`);
  await slow;
  await other.close();
});

await client.close();

// --- bad input over raw HTTP -------------------------------------------
await tap.step('raw', async () => {
  const sid = await rawSession(url);
  const alive = async (what) => {
    const r = await rawPost(url, { jsonrpc: '2.0', id: 'alive', method: 'ping' }, { session: sid });
    tap.check(r.status === 200 && r.json && r.json.id === 'alive', `the server still answers after ${what}`);
  };
  let r = await rawPost(url, '{"jsonrpc":"2.0","id":1,"method":', { session: sid });
  tap.check(r.json && r.json.error && r.json.error.code === -32700, 'malformed JSON -> -32700', r.text);
  await alive('malformed JSON');
  r = await rawPost(url, { jsonrpc: '2.0', id: 'x-1', method: 'no/such/method' }, { session: sid });
  tap.check(r.json && r.json.error && r.json.error.code === -32601 && r.json.id === 'x-1', 'unknown method -> -32601 (string id echoed)', r.text);
  r = await rawPost(url, { jsonrpc: '2.0', id: 42, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } }, { session: sid });
  tap.check(r.json && r.json.error && r.json.error.code === -32602 && r.json.id === 42, 'unknown tool -> -32602 (numeric id echoed)', r.text);
  r = await rawPost(url, { jsonrpc: '2.0', id: 43, method: 'tools/call', params: { name: 'run_command', arguments: { command: 5, timeout_ms: 'soon' } } }, { session: sid });
  tap.check(r.json && r.json.error && r.json.error.code === -32602 && /command/.test(r.json.error.message), 'wrong argument types -> -32602 naming the argument', r.text);
  r = await rawPost(url, { jsonrpc: '2.0', id: 44, method: 'tools/call', params: { name: 'run_command', arguments: {} } }, { session: sid });
  tap.check(r.json && r.json.error && r.json.error.code === -32602 && /required/.test(r.json.error.message), 'missing required argument -> -32602', r.text);
  await alive('invalid params');
  r = await rawPost(url, JSON.stringify({ jsonrpc: '2.0', id: 45, method: 'ping', params: { pad: 'x'.repeat(5 << 20) } }), { session: sid });
  tap.check(r.status === 413, `oversized body -> 413 (${r.status})`);
  await alive('an oversized body');
  r = await rawPost(url, [{ jsonrpc: '2.0', id: 1, method: 'ping' }], { session: sid });
  tap.check(r.json && r.json.error && r.json.error.code === -32600, 'a batch -> -32600', r.text);
  r = await rawPost(url, { jsonrpc: '2.0', id: 46, method: 'ping' }, { session: 'deadbeef' });
  tap.check(r.status === 404, `unknown session -> 404 (${r.status})`);
  r = await rawPost(url, { jsonrpc: '2.0', id: 47, method: 'ping' });
  tap.check(r.status === 400, `missing session -> 400 (${r.status})`);
  r = await rawPost(url, { jsonrpc: '2.0', id: 48, method: 'ping' }, { session: sid, accept: 'application/json' });
  tap.check(r.status === 406, `Accept without text/event-stream -> 406 (${r.status})`);
  r = await rawPost(url, { jsonrpc: '2.0', id: 49, method: 'ping' }, { session: sid, contentType: 'text/plain' });
  tap.check(r.status === 415, `non-JSON Content-Type -> 415 (${r.status})`);
  r = await rawPost(url, { jsonrpc: '2.0', id: 50, method: 'ping' }, { session: sid, headers: { 'mcp-protocol-version': '1999-01-01' } });
  tap.check(r.status === 400, `unsupported MCP-Protocol-Version -> 400 (${r.status})`);
  r = await rawPost(url, { jsonrpc: '2.0', id: 51, method: 'ping' }, { session: sid, headers: { origin: 'http://evil.example.com' } });
  tap.check(r.status === 403, `foreign Origin -> 403 (${r.status})`);
  // Headers too long for the server's buffers are refused, not skipped.
  const long = 'a'.repeat(300);
  const ping = { jsonrpc: '2.0', id: 53, method: 'ping' };
  let h = await rawHostPost(url, ping, { host: `${long}.evil.example.com`, 'mcp-session-id': sid });
  tap.check(h.status === hostStatus, `a 300-character foreign Host -> ${hostStatus} (${h.status})`);
  h = await rawHostPost(url, ping, { host: 'evil.example.com', 'mcp-session-id': sid });
  tap.check(h.status === hostStatus, `a foreign Host -> ${hostStatus} (${h.status})`);
  r = await rawPost(url, ping, { session: sid, headers: { origin: `http://${long}.evil.example.com` } });
  tap.check(r.status === 403, `a 300-character foreign Origin -> 403 (${r.status})`);
  r = await rawPost(url, ping, { session: sid, headers: { 'mcp-protocol-version': `2025-06-18${long}` } });
  tap.check(r.status === 400, `an over-long MCP-Protocol-Version -> 400 (${r.status})`);
  r = await rawPost(url, ping, { session: `${sid}${long}` });
  tap.check(r.status === 404, `an over-long Mcp-Session-Id -> 404 (${r.status})`);
  r = await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { session: sid });
  tap.check(r.status === 202 && r.text === '', `a notification -> 202 with no body (${r.status})`);
  r = await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, ...authHeaders() } });
  tap.check(r.status === 405, `GET -> 405 (${r.status})`);
  await alive('all of that');
  r = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sid, ...authHeaders() } });
  tap.check(r.status === 200, `DELETE ends the session (${r.status})`);
  r = await rawPost(url, { jsonrpc: '2.0', id: 52, method: 'ping' }, { session: sid });
  tap.check(r.status === 404, `an ended session -> 404 (${r.status})`);
});

tap.exit();
