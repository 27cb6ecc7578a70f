// One scripted agent session against a whole cloche installation, using only
// what an agent has: the portal's public REST API (its key), the proxy
// (sandbox URLs and tokens from the acquire answer) and MCP (the SDK client).
//
//   node agent-session.mjs --portal URL --key KEY [--template desktop] [--out FILE]
//
// acquire -> a page served inside the sandbox (python's http.server, started
// through mcp-shell) opened by mcp-browser -> an mcp-desktop screenshot shows
// it -> mcp-shell writes a file -> hibernate -> the next MCP call wakes it
// (through the proxy) -> file, page and the MCP sessions intact -> fork 2 ->
// the children diverge -> both children hibernate and go to S3 (their
// offload_after) -> a call wakes one from S3, the other is released while in
// S3 -> release all.  Prints ok/not ok lines; --out gets the ids it used
// (portal and node ids) for the leftover checks of the script around it.
import { writeFileSync } from 'node:fs';
import { parseArgs, tap } from './lib/tap.mjs';
import { connect, call, textOf } from './lib/mcp-client.mjs';
import { decodePng } from './lib/png.mjs';

const args = parseArgs();
if (!args.portal || !args.key) {
  console.error('usage: agent-session.mjs --portal URL --key KEY [--template NAME] [--out FILE]');
  process.exit(2);
}
const OFFLOAD_AFTER = Number(args['offload-after'] || 5);
const nonce = Math.random().toString(36).slice(2, 10);
const used = { sandboxes: [] };
const clients = [];

async function api(method, path, body) {
  const res = await fetch(args.portal + path, {
    method,
    headers: { authorization: `Bearer ${args.key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, json, text };
}
const view = async (id) => (await api('GET', `/sbv1/sandboxes/${id}`)).json || {};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(seconds, fn) {
  const end = Date.now() + seconds * 1000;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) return v;
    await sleep(250);
  }
}
function remember(sb) {
  if (!sb || !sb.id) return;
  let u = used.sandboxes.find((x) => x.id === sb.id);
  if (!u) used.sandboxes.push((u = { id: sb.id, node_ids: [] }));
  if (sb.node_sandbox_id && !u.node_ids.includes(sb.node_sandbox_id)) u.node_ids.push(sb.node_sandbox_id);
}

// The three MCP clients of one sandbox, through the proxy with its token.
async function agentOf(sb) {
  const h = { token: sb.token };
  const a = {
    id: sb.id,
    shell: await connect(sb.urls.mcp.shell, 'e2e-shell', h),
    browser: await connect(sb.urls.mcp.browser, 'e2e-browser', h),
    desktop: await connect(sb.urls.mcp.desktop, 'e2e-desktop', h),
  };
  clients.push(a.shell, a.browser, a.desktop);
  return a;
}
const T = { timeout: 180000 };
async function sh(a, command) {
  const r = await call(a.shell, 'run_command', { command }, T);
  return textOf(r).replace(/\n?\[exit code: \d+\]\s*$/, '').trim();
}
async function readFile(a, path) {
  const r = await call(a.shell, 'read_file', { path }, T);
  return r.isError ? `error: ${textOf(r)}` : textOf(r).trim();
}
async function pageState(a) {
  const r = await call(a.browser, 'browser_evaluate',
    { function: '() => document.title + "|" + document.querySelector("#q").value' }, T);
  const t = textOf(r).trim();
  try { return String(JSON.parse(t)); } catch { return t; }
}
// Share of a screenshot's pixels in the page's colour (#e0218a, within 12).
function pageShare(res) {
  const img = (res.content || []).find((c) => c.type === 'image');
  if (!img) return 0;
  const { w, h, data } = decodePng(Buffer.from(img.data, 'base64'));
  let n = 0;
  for (let i = 0; i < w * h * 4; i += 4) {
    if (Math.abs(data[i] - 0xe0) <= 12 && Math.abs(data[i + 1] - 0x21) <= 12 && Math.abs(data[i + 2] - 0x8a) <= 12) n++;
  }
  return n / (w * h);
}

const title = `cloche e2e ${nonce}`;
const html = `<!doctype html><title>${title}</title>
<style>body{margin:0;background:#e0218a;color:#fff;font:32px sans-serif}</style>
<h1>${title}</h1><input id=q>`;

try {
  // --- acquire ---------------------------------------------------------
  let t0 = Date.now();
  const acq = await api('POST', '/sbv1/acquire',
    { template: args.template || 'desktop', ttl: 1800, wait: 180, offload_after: OFFLOAD_AFTER, labels: { e2e: nonce } });
  const P = acq.json || {};
  remember(P);
  tap.check((acq.status === 200 || acq.status === 201) && P.state === 'ready' && P.token && P.urls && P.urls.mcp,
    `acquire: a ready sandbox with its token and MCP URLs (${acq.status}, ${Date.now() - t0} ms)`, acq.text);
  if (!P.token) throw new Error('no sandbox');
  const pa = await agentOf(P);

  // --- a page served inside, in the browser, on the screen ---------------
  await call(pa.shell, 'write_file', { path: 'site/index.html', content: html, create_dirs: true }, T);
  await call(pa.shell, 'start_process',
    { command: 'python3 -m http.server 8000 --bind 127.0.0.1 --directory site' }, T);
  const served = await until(20, async () =>
    (await sh(pa, 'python3 -c "import urllib.request as u; print(u.urlopen(\'http://127.0.0.1:8000/\').status)" 2>&1')) === '200');
  tap.check(served, 'mcp-shell starts a web server inside the sandbox');
  const nav = await call(pa.browser, 'browser_navigate', { url: 'http://127.0.0.1:8000/' }, T);
  tap.check(!nav.isError && textOf(nav).includes(title), 'mcp-browser opens the page served inside', textOf(nav).slice(0, 200));
  await call(pa.browser, 'browser_evaluate',
    { function: '() => { document.querySelector("#q").value = "typed by the agent"; return 1 }' }, T);
  tap.check(await pageState(pa) === `${title}|typed by the agent`, 'the page has the form state the agent typed');
  const share = await until(10, async () => {
    const s = pageShare(await call(pa.desktop, 'computer', { action: 'screenshot' }, T));
    return s > 0.3 ? s : 0;
  });
  tap.check(share > 0.3, `mcp-desktop's screenshot shows the page (${Math.round(share * 100)}% of the screen in its colour)`);
  const w = await call(pa.shell, 'write_file', { path: 'notes/e2e.txt', content: `written by the agent ${nonce}`, create_dirs: true }, T);
  tap.check(!w.isError, 'mcp-shell writes a file');

  // --- hibernate, then the next call wakes it ----------------------------
  t0 = Date.now();
  const hib = await api('POST', `/sbv1/sandboxes/${P.id}/hibernate`);
  tap.check(hib.status === 200 && hib.json.state === 'hibernated',
    `hibernate: hibernated (${hib.status}, ${Date.now() - t0} ms)`, hib.text);
  remember(hib.json);
  t0 = Date.now();
  const back = await readFile(pa, 'notes/e2e.txt');
  const wakeMs = Date.now() - t0;
  tap.check(back === `written by the agent ${nonce}`,
    `an MCP call through the proxy wakes it and reads the file (${wakeMs} ms, the same MCP session)`, back);
  tap.check((await view(P.id)).state === 'ready', '... the sandbox is ready again');
  tap.check(await pageState(pa) === `${title}|typed by the agent`, '... the page and its form state are intact');
  const events = await api('GET', `/sbv1/sandboxes/${P.id}/events`);
  tap.check(/woken/.test(events.text), '... its events record the hibernation and the wake', events.text.slice(0, 300));

  // --- fork into two; the children diverge -------------------------------
  t0 = Date.now();
  const fk = await api('POST', `/sbv1/sandboxes/${P.id}/fork`, { count: 2 });
  const kids = (fk.json && fk.json.children) || [];
  kids.forEach(remember);
  tap.check(fk.status === 200 && kids.length === 2 && kids.every((k) => k.state === 'ready' && k.token),
    `fork 2: two ready children with their own tokens (${fk.status}, ${Date.now() - t0} ms)`, fk.text.slice(0, 300));
  if (kids.length !== 2) throw new Error('no children');
  const ka = [await agentOf(kids[0]), await agentOf(kids[1])];
  for (const [i, k] of ka.entries()) {
    tap.check(await readFile(k, 'notes/e2e.txt') === `written by the agent ${nonce}`, `child ${i + 1} has the parent's file`);
    tap.check(await pageState(k) === `${title}|typed by the agent`, `child ${i + 1} has the parent's page`);
    await call(k.shell, 'write_file', { path: 'notes/child.txt', content: `child ${i + 1}` }, T);
    await call(k.browser, 'browser_evaluate', { function: `() => { document.querySelector("#q").value = "child ${i + 1}"; return 1 }` }, T);
  }
  tap.check(await readFile(ka[0], 'notes/child.txt') === 'child 1' && await readFile(ka[1], 'notes/child.txt') === 'child 2',
    'each child keeps its own file');
  tap.check((await readFile(pa, 'notes/child.txt')).startsWith('error'), "the parent has neither child's file");
  tap.check(await pageState(ka[1]) === `${title}|child 2` && await pageState(pa) === `${title}|typed by the agent`,
    'the pages diverge too');

  // --- the children hibernate and go to S3 --------------------------------
  const hk = await Promise.all(kids.map((k) => api('POST', `/sbv1/sandboxes/${k.id}/hibernate`)));
  tap.check(hk.every((r) => r.status === 200 && r.json.state === 'hibernated'), 'both children hibernate',
    hk.map((r) => r.text.slice(0, 200)).join(' | '));
  t0 = Date.now();
  const off = await until(OFFLOAD_AFTER + 90, async () =>
    (await Promise.all(kids.map((k) => view(k.id)))).every((v) => v.state === 'offloaded'));
  tap.check(off, `... and are offloaded to S3 after their offload_after (${Date.now() - t0} ms)`);
  t0 = Date.now();
  const c1 = await readFile(ka[0], 'notes/child.txt');
  tap.check(c1 === 'child 1', `a call to child 1 wakes it from S3 with its file (${Date.now() - t0} ms)`, c1);
  const v1 = await view(kids[0].id);
  remember(v1);
  tap.check(v1.state === 'ready', '... child 1 is ready');
  tap.check(await pageState(ka[0]) === `${title}|child 1`, "... with child 1's page");
  const rel2 = await api('POST', `/sbv1/sandboxes/${kids[1].id}/release`);
  tap.check(rel2.status === 200, `child 2 is released while in S3 (${rel2.status})`, rel2.text);

  // --- release all --------------------------------------------------------
  for (const id of [P.id, kids[0].id]) {
    const r = await api('POST', `/sbv1/sandboxes/${id}/release`);
    tap.check(r.status === 200, `release ${id} (${r.status})`, r.text);
  }
  const done = await until(60, async () =>
    (await Promise.all([P.id, kids[0].id, kids[1].id].map(view))).every((v) => v.state === 'released'));
  tap.check(done, 'all three are released');
  const tok = await fetch(P.urls.mcp.shell, { method: 'POST', headers: { authorization: `Bearer ${P.token}` } });
  tap.check(tok.status === 404 || tok.status === 403, `the released sandbox's URL opens nothing (${tok.status})`);
} catch (e) {
  tap.notOk('the session ran to its end', e && e.stack ? e.stack : e);
} finally {
  for (const c of clients) await c.close().catch(() => {});
  // A run that failed half-way still gives back what it took.
  if (tap.failed) for (const s of used.sandboxes) await api('POST', `/sbv1/sandboxes/${s.id}/release`).catch(() => {});
  if (args.out) writeFileSync(args.out, JSON.stringify(used));
}
tap.exit();
