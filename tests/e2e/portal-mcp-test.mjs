// An agent whose only endpoint is the portal's MCP server: it gets a desktop,
// uses the sandbox's own MCP server with the URL and token it was given,
// forks it, hibernates and wakes, keeps it alive, fills the node, hears the
// progress of an acquire that waits and cancels it, and releases everything;
// another key sees none of it; no key, bad arguments and unknown ids get
// the documented errors.  The MCP TypeScript SDK client; tool schemas are
// compiled with ajv.
//
//   node portal-mcp-test.mjs --portal URL --key KEY --other-key KEY2
import Ajv from 'ajv';
import { parseArgs, tap } from './lib/tap.mjs';
import { connect, call, textOf } from './lib/mcp-client.mjs';

const args = parseArgs();
if (!args.portal || !args.key || !args['other-key']) {
  console.error('usage: portal-mcp-test.mjs --portal URL --key KEY --other-key KEY2');
  process.exit(2);
}
const url = `${args.portal}/mcp`;
const T = { timeout: 300000 };
const nonce = Math.random().toString(36).slice(2, 10);
const clients = [];
const open = async (u, key, name) => {
  const c = await connect(u, name, { token: key });
  clients.push(c);
  return c;
};
const sc = (r) => r.structuredContent || {};
const taken = [];

try {
  const raw = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
  });
  tap.check(raw.status === 401 && /Bearer/.test(raw.headers.get('www-authenticate') || ''),
    `no key: 401 with WWW-Authenticate: Bearer (${raw.status})`);
  const bad = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer ck_000000000000_nope', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
  tap.check(bad.status === 401, `a made-up key: 401 (${bad.status})`);

  const me = await open(url, args.key, 'portal-mcp-test');
  const { tools } = await me.listTools();
  const names = tools.map((t) => t.name).sort();
  const want = ['acquire_sandbox', 'fork_sandbox', 'hibernate_sandbox', 'keepalive_sandbox',
    'list_sandboxes', 'release_sandbox', 'wake_sandbox'];
  tap.check(JSON.stringify(names) === JSON.stringify(want), `tools/list: ${names.join(', ')}`);
  const ajv = new Ajv({ strict: false });
  const badSchemas = tools.filter((t) => { try { ajv.compile(t.inputSchema); if (t.outputSchema) ajv.compile(t.outputSchema); return false; } catch { return true; } });
  tap.check(!badSchemas.length && tools.every((t) => t.description && t.description.length > 20),
    'every tool has a description and schemas ajv compiles', badSchemas.map((t) => t.name).join(','));

  // --- acquire, and use the sandbox's own MCP server ----------------------
  let t0 = Date.now();
  const acq = await call(me, 'acquire_sandbox', { ttl: 900, labels: { test: nonce } }, T);
  const P = sc(acq);
  if (P.id) taken.push(P.id);
  tap.check(!acq.isError && P.state === 'ready' && P.token && P.urls && P.urls.mcp && P.urls.mcp.shell,
    `acquire_sandbox: a ready sandbox with its token and MCP URLs (${Date.now() - t0} ms)`, textOf(acq));
  tap.check(textOf(acq).includes(P.urls.mcp.shell) && textOf(acq).includes(P.token),
    '... and the text a model reads names the URLs and the token');
  const shell = await open(P.urls.mcp.shell, P.token, 'agent-shell');
  const out = textOf(await call(shell, 'run_command', { command: `echo from-${nonce} > mark; cat mark` }, T));
  tap.check(out.includes(`from-${nonce}`), 'the sandbox\'s own mcp-shell answers with the token it was given', out);

  // --- fork, list -----------------------------------------------------------
  t0 = Date.now();
  const fk = await call(me, 'fork_sandbox', { id: P.id, count: 2 }, T);
  const kids = sc(fk).children || [];
  kids.forEach((k) => taken.push(k.id));
  tap.check(!fk.isError && kids.length === 2 && kids.every((k) => k.state === 'ready' && k.token && k.urls.mcp.shell),
    `fork_sandbox 2: two ready children with tokens and URLs (${Date.now() - t0} ms)`, textOf(fk).slice(0, 300));
  if (kids.length) {
    const ks = await open(kids[0].urls.mcp.shell, kids[0].token, 'child-shell');
    const k = textOf(await call(ks, 'run_command', { command: 'cat mark' }, T));
    tap.check(k.includes(`from-${nonce}`), 'a child has the parent\'s file', k);
  }
  const ls = await call(me, 'list_sandboxes', { label: `test=${nonce}` }, T);
  const listed = (sc(ls).sandboxes || []).map((s) => s.id).sort();
  tap.check(listed.length === 3 && taken.every((id) => listed.includes(id)),
    `list_sandboxes (by label) shows the parent and both children (${listed.length})`);

  // --- hibernate, wake, keepalive ---------------------------------------------
  if (kids[1]) {
    const h = await call(me, 'hibernate_sandbox', { id: kids[1].id }, T);
    tap.check(!h.isError && sc(h).state === 'hibernated', `hibernate_sandbox: hibernated`, textOf(h));
    const w = await call(me, 'wake_sandbox', { id: kids[1].id }, T);
    tap.check(!w.isError && sc(w).state === 'ready', `wake_sandbox: ready`, textOf(w));
  }
  const before = P.expires_at;
  await new Promise((r) => setTimeout(r, 1100));
  const ka = await call(me, 'keepalive_sandbox', { id: P.id }, T);
  tap.check(!ka.isError && sc(ka).expires_at > before, `keepalive_sandbox moves the lease (${before} -> ${sc(ka).expires_at})`);

  // --- a queued acquire: progress, then cancellation ----------------------------
  // Fill the node (wait 0 answers at once: ready, starting, or no room), then
  // an acquire that waits in the queue reports progress and, cancelled by
  // the client, leaves the queue at once (its row fails).
  let full = null;
  for (let i = 0; i < 8 && !full; i++) {
    const f = await call(me, 'acquire_sandbox', { ttl: 900, wait: 0, labels: { test: nonce } }, T);
    if (f.isError) full = f;
    else if (sc(f).id) taken.push(sc(f).id);
  }
  tap.check(full && /503/.test(textOf(full)), `acquire_sandbox with wait 0 on a full node: a tool error saying 503 (${taken.length} held)`,
    full ? textOf(full) : 'never full');
  const ac = new AbortController();
  const progress = [];
  t0 = Date.now();
  const queued = call(me, 'acquire_sandbox', { ttl: 900, wait: 60, labels: { qtest: nonce } }, {
    ...T,
    signal: ac.signal,
    onprogress: (p) => { progress.push(p); if (progress.length === 2) ac.abort('enough'); },
  }).then((r) => r, (x) => x);
  const guard = setTimeout(() => ac.abort('no progress'), 15000);
  const qr = await queued;
  clearTimeout(guard);
  tap.check(progress.length >= 2 && progress[1].progress > progress[0].progress && progress[0].total === 60 &&
    /wait of at most 60 s/.test(progress[0].message || ''),
  `a queued acquire reports progress (${progress.length} in ${Date.now() - t0} ms: ${progress.map((p) => p.message).join(' | ')})`,
  JSON.stringify(progress));
  tap.check(qr instanceof Error || (qr && qr.name === 'AbortError'), '... and the client can cancel it', String(qr && qr.message));
  let qs = [];
  for (let i = 0; i < 50; i++) {
    qs = sc(await call(me, 'list_sandboxes', { label: `qtest=${nonce}` }, T)).sandboxes || [];
    if (qs.length && qs.every((s) => s.state === 'failed')) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  tap.check(qs.length === 1 && qs[0].state === 'failed',
    `... which takes it out of the queue at once (its row: ${qs.map((s) => s.state).join(',')})`);

  // --- another key, errors ----------------------------------------------------
  const other = await open(url, args['other-key'], 'other-agent');
  const ol = sc(await call(other, 'list_sandboxes', {}, T)).sandboxes || [];
  tap.check(!ol.some((s) => taken.includes(s.id)), `another key lists none of them (${ol.length})`);
  const orl = await call(other, 'release_sandbox', { id: P.id }, T);
  tap.check(orl.isError && /40[34]/.test(textOf(orl)), 'another key cannot release them (a tool error)', textOf(orl));
  const unk = await call(me, 'wake_sandbox', { id: 'sb-0000000000000000' }, T);
  tap.check(unk.isError && /404/.test(textOf(unk)), 'an unknown id: a tool error saying 404', textOf(unk));
  for (const [tool, a, why] of [['fork_sandbox', { id: P.id, count: 9 }, 'count 9'],
    ['acquire_sandbox', { ttl: 'long' }, 'ttl of the wrong type'],
    ['acquire_sandbox', { ttl: 99999999 }, 'ttl beyond the maximum'],
    ['release_sandbox', { id: '../x' }, 'a malformed id'],
    ['acquire_sandbox', { tll: 5 }, 'an unknown argument']]) {
    const e = await call(me, tool, a, T).then(() => null, (x) => x);
    tap.check(e && e.code === -32602, `${tool} with ${why}: JSON-RPC -32602`, e ? e.message : 'answered');
  }

  // --- release all ----------------------------------------------------------
  // (a sandbox still being made refuses release with 409 until it is ready)
  const release = async (id) => {
    for (let i = 0; ; i++) {
      const r = await call(me, 'release_sandbox', { id }, T);
      if (!r.isError || !/409/.test(textOf(r)) || i >= 600) return r;
      await new Promise((res) => setTimeout(res, 200));
    }
  };
  const rel = await Promise.all(taken.map(release));
  tap.check(rel.every((r) => !r.isError), `release_sandbox releases all ${taken.length}`, rel.map(textOf).join(' | '));
  let left = [];
  for (let i = 0; i < 120; i++) {
    left = (sc(await call(me, 'list_sandboxes', { label: `test=${nonce}` }, T)).sandboxes || [])
      .filter((s) => s.state !== 'released');
    if (!left.length) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  tap.check(!left.length, 'list_sandboxes then shows them all released');
} catch (e) {
  tap.notOk('the session ran to its end', e && e.stack ? e.stack : e);
} finally {
  for (const c of clients) await c.close().catch(() => {});
}
tap.exit();
