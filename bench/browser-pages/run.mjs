// bench/browser-pages.sh's driver: the same pages through two MCP servers
// that drive the same Chromium build headless, cloche's mcp-browser and
// @playwright/mcp, both reached with the official SDK client over
// Streamable HTTP on loopback.  Per page and server: browser_navigate to the
// file:// URL (timed), then browser_snapshot several times (the first is a
// warm-up; the median of the rest is the figure), the characters of the
// answer and its refs, and whether the page's chosen sentence is reachable:
// in the snapshot itself, or (mcp-browser only, when its tools/list offers
// them) by continuing a cut snapshot with `offset` or by browser_find.
// Tools are detected, not assumed, so the bench runs on every version of
// mcp-browser while its snapshot format changes.
//
//   node run.mjs --pages pages.tsv --ours URL --theirs URL [--snapshots 3]
//        [--only name,name] [--out FILE.json] [--dump DIR]
// (--dump: each server's last snapshot of each page, as DIR/NAME.SERVER.txt)
// Prints a table per page and the overall ratios; writes the figures as JSON.
import { readFileSync, writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { parseArgs } from '../../tests/e2e/lib/tap.mjs';

const args = parseArgs();
const SNAPSHOTS = Math.max(2, Number(args.snapshots || 3));
// A continuation walk stops after this many calls or this long: a page
// cut into hundreds of parts is reported as not reached, not waited out
// (and the whole run stays within minutes).
const CONT_MAX_CALLS = Number(args['cont-max-calls'] || 40);
const CONT_BUDGET_MS = Number(args['cont-budget-ms'] || 30000);
const CALL_TIMEOUT_MS = 180000; // the 8 MB page's navigate and snapshots take seconds each
const DEEP = 40000; // a sentence closer to the top than this is not "deep"

const pages = readFileSync(args.pages, 'utf8').split('\n')
  .filter((l) => l.trim() && !l.startsWith('#'))
  .map((l) => {
    const [name, pkg, path, kind, sentence] = l.split('\t');
    return { name, pkg, path, kind, sentence };
  })
  .filter((p) => !args.only || args.only.split(',').includes(p.name));

// --- talking to the servers -------------------------------------------------
// Its own SDK client rather than tests/e2e/lib/mcp-client.mjs: this
// directory pins the SDK that the results name (versions.mcp_sdk), and that
// module would load tests/e2e's copy instead.

async function connect(url, name) {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const textOf = (r) => (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

// One tools/call, timed by the client.  A JSON-RPC error becomes a failed
// result: one page's failure must not end the whole run.
async function timed(client, name, a = {}) {
  const t0 = performance.now();
  try {
    const r = await client.callTool({ name, arguments: a }, undefined, { timeout: CALL_TIMEOUT_MS });
    return { ms: performance.now() - t0, text: textOf(r), isError: !!r.isError };
  } catch (e) {
    return { ms: performance.now() - t0, text: `JSON-RPC error: ${e.message}`, isError: true };
  }
}

// --- reading answers --------------------------------------------------------

// Snapshot text as a reader sees it: quotes and backslashes unescaped,
// every run of whitespace one space (the YAML outline folds lines).
const norm = (s) => s.replace(/\\(["\\])/g, '$1').replace(/[\s\u00a0]+/g, ' ');
const refsIn = (s) => (s.match(/\[ref=[^\]\s]+\]/g) || []).length;
// The parts of an answer outside its ```yaml outline: where a server puts
// notes such as "truncated, continue with offset N".  The outline itself
// can say "truncated" (fs.html documents ftruncate), so it is left out;
// an answer without fences loses its outline lines ("- role ...") instead.
const notesOf = (s) => (/^```/m.test(s)
  ? s.split(/^```.*$/m).filter((_, i) => i % 2 === 0).join('\n')
  : s.split('\n').filter((l) => !/^\s*- /.test(l)).join('\n'));
const isCut = (s) => /truncat|left out|omitted|"offset"\s*:/i.test(notesOf(s));
// The offset the note says to continue from, or null.
function nextOffset(s) {
  const m = [...notesOf(s).matchAll(/"offset"\s*:\s*(\d+)/g)];
  return m.length ? Number(m[m.length - 1][1]) : null;
}
// Whether an answer shows the sentence: whole, or (for browser_find, whose
// line of context may be clipped) a 24-character stretch of its start,
// middle or end.
function shows(text, sentence, partial = false) {
  const t = norm(text), s = norm(sentence);
  if (t.includes(s)) return true;
  if (!partial) return false;
  const w = Math.min(24, s.length), mid = Math.floor((s.length - w) / 2);
  return [s.slice(0, w), s.slice(mid, mid + w), s.slice(s.length - w)].some((x) => t.includes(x));
}
const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length ? (v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2) : null;
};
const r1 = (x) => (x == null ? null : Math.round(x * 10) / 10);
const r3 = (x) => (x == null ? null : Math.round(x * 1000) / 1000);

// --- one page on one server -------------------------------------------------

async function measure(client, page) {
  const url = `file://${page.path}`;
  const nav = await timed(client, 'browser_navigate', { url });
  if (nav.isError) return { error: `browser_navigate: ${nav.text.slice(0, 300)}` };
  const snaps = [];
  for (let i = 0; i < SNAPSHOTS; i++) snaps.push(await timed(client, 'browser_snapshot'));
  const bad = snaps.find((s) => s.isError);
  if (bad) return { error: `browser_snapshot: ${bad.text.slice(0, 300)}` };
  const last = snaps[snaps.length - 1];
  const ms = snaps.slice(1).map((s) => s.ms);
  return {
    navigate_ms: r1(nav.ms),
    navigate_chars: nav.text.length,
    snapshot_chars: last.text.length,
    snapshot_chars_varied: new Set(snaps.map((s) => s.text.length)).size > 1,
    refs: refsIn(last.text),
    snapshot_ms_median: r1(median(ms)),
    snapshot_ms: ms.map(r1),
    cut: isCut(last.text),
    direct: shows(last.text, page.sentence),
    sentence_at: norm(last.text).indexOf(norm(page.sentence)),
    _text: last.text,
  };
}

// Follows a cut snapshot with browser_snapshot {offset}, as its notes say,
// until the sentence shows: whether and after how many calls, and what the
// answers cost in characters.  Stops at the page's end, at a note without
// an offset, or at the bounds.
async function walk(client, page, first) {
  let text = first, calls = 0, chars = first.length, ms = 0, stopped = 'reached';
  const seen = new Set(), texts = [first];
  while (!shows(text, page.sentence)) {
    const off = nextOffset(text);
    if (off == null) { stopped = isCut(text) ? 'a note without an offset' : 'the end of the page'; break; }
    if (seen.has(off)) { stopped = `offset ${off} offered twice`; break; }
    if (calls >= CONT_MAX_CALLS || ms >= CONT_BUDGET_MS) { stopped = `bound (${calls} calls, ${Math.round(ms)} ms)`; break; }
    seen.add(off);
    const r = await timed(client, 'browser_snapshot', { offset: off });
    calls++; ms += r.ms;
    if (r.isError) { stopped = `error: ${r.text.slice(0, 200)}`; break; }
    text = r.text; chars += r.text.length; texts.push(text);
  }
  const reached = shows(text, page.sentence);
  return { reached, calls_to_sentence: reached ? calls : null, calls, chars, ms: r1(ms), stopped,
    complete: !isCut(text), _texts: texts };
}

// The page text a snapshot line shows, as a string to look for in the
// other server's snapshot: the longest of its quoted name, what follows
// its first ": ", and the line without its "- role" and [attributes], with
// a clipping "…" dropped.  Null when none is 20+ characters without
// quotes or escapes (which the two servers may write differently).  Loose
// on purpose: mcp-browser's format is changing.
function lineText(line) {
  // inline markup of ours ([label](address)[ref=e1], `code`) reads as its text
  const bare = line.trim().replace(/^- /, '')
    .replace(/\[([^\]]*)\]\([^)]*\)(\[ref=e\d+\])?/g, '$1').replace(/`([^`]*)`/g, '$1');
  const cands = [...bare.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]);
  const colon = bare.indexOf(': ');
  if (colon >= 0) cands.push(bare.slice(colon + 2));
  cands.push(bare.replace(/^[\w/-]+\s*/, '').replace(/\s*\[[^\]]*\]/g, '').replace(/^:\s*/, ''));
  const ok = cands.map((t) => t.replace(/…$/, '').trim()).filter((t) => t.length >= 20 && !/["\\]/.test(t));
  return ok.sort((a, b) => b.length - a.length)[0] ?? null;
}
// Where a cut snapshot of ours ends in playwright-mcp's whole one, found by
// walking both in page order: each line of ours with 20+ characters of
// text is looked for forward from the last match in theirs (so a table of
// contents matches before the headings that repeat it), and a match that
// would leap far ahead of ours (over 10 times what ours advanced, plus 2,000
// characters: a table of contents can be a fifth of playwright-mcp's size
// in ours) is taken for a repeat elsewhere and skipped.  Gives the
// characters each spent on the same stretch of the page, so a cut snapshot
// is compared with the same content, not with the whole page.
function covered(oursText, theirsText) {
  let o = 0, lastO = 0, pos = 0, hit = null;
  for (const l of oursText.split('\n')) {
    o += l.length + 1;
    const t = lineText(l);
    const at = t ? theirsText.indexOf(t, pos) : -1;
    if (at < 0 || at - pos > 10 * (o - lastO) + 2000) continue;
    pos = at + t.length; lastO = o;
    hit = { ours: o - 1, theirs: pos };
  }
  return hit;
}

async function find(client, page) {
  const r = await timed(client, 'browser_find', { text: page.sentence });
  return {
    reached: !r.isError && refsIn(r.text) > 0 && shows(r.text, page.sentence, true),
    chars: r.text.length, ms: r1(r.ms), refs: refsIn(r.text),
    ...(r.isError ? { error: r.text.slice(0, 300) } : {}),
  };
}

// Where the sentence is in the page's own text (body.textContent: innerText
// leaves out sections that content-visibility skips, most of nodejs's
// all.html), as a
// fraction, or -1: a check that the page list still fits the installed
// package, asked of playwright-mcp, or of mcp-browser on a page that
// playwright-mcp could not load.
async function sentenceOnPage(client, page) {
  const fn = `() => { const t = document.body.textContent.replace(/\\s+/g, ' ');
    const i = t.indexOf(${JSON.stringify(page.sentence)});
    return 'SENTENCE_AT=' + (i < 0 ? -1 : (i / t.length).toFixed(3)); }`;
  const r = await timed(client, 'browser_evaluate', { function: fn });
  const m = r.text.match(/SENTENCE_AT=(-?[\d.]+)/);
  return m ? Number(m[1]) : null;
}

// --- the run ----------------------------------------------------------------

const ours = await connect(args.ours, 'cloche-bench-browser-pages');
const theirs = await connect(args.theirs, 'cloche-bench-browser-pages');
const ourTools = (await ours.listTools()).tools;
const snapTool = ourTools.find((t) => t.name === 'browser_snapshot');
const can = {
  continuation: !!snapTool?.inputSchema?.properties?.offset,
  find: ourTools.some((t) => t.name === 'browser_find'),
};
console.log(`mcp-browser offers: continuation (browser_snapshot offset) ${can.continuation ? 'yes' : 'no'}, browser_find ${can.find ? 'yes' : 'no'}`);
// Playwright-mcp starts its browser on the first call: not part of a page.
await timed(theirs, 'browser_navigate', { url: 'about:blank' });
await timed(ours, 'browser_navigate', { url: 'about:blank' });

const t0 = performance.now();
const results = [];
for (const [i, page] of pages.entries()) {
  process.stdout.write(`[${i + 1}/${pages.length}] ${page.name} ...`);
  const p0 = performance.now();
  // Alternate who goes first, so neither always meets a cold page cache
  // or the other's leftovers.
  const order = i % 2 ? [['playwright', theirs], ['ours', ours]] : [['ours', ours], ['playwright', theirs]];
  const res = { name: page.name, package: page.pkg, path: page.path, kind: page.kind, sentence: page.sentence };
  for (const [who, client] of order) res[who] = await measure(client, page);
  res.sentence_on_page = await sentenceOnPage(res.playwright.error ? ours : theirs, page);
  const o = res.ours, p = res.playwright;
  if (!o.error) {
    o.reach = {
      direct: o.direct,
      continuation: can.continuation ? await walk(ours, page, o._text) : null,
      find: can.find ? await find(ours, page) : null,
    };
  }
  if (!o.error && !p.error) {
    // The same content on both sides: the whole page when ours was not cut
    // or its continuation was walked to the end, else the stretch ours
    // showed.  Plus what one answer costs.
    const w = o.reach.continuation?.calls ? o.reach.continuation : null;
    // (the answers of a walk are located together, in page order)
    const c = !o.cut || w?.complete ? null : covered(w ? w._texts.join('') : o._text, p._text);
    const [num, den, basis] = !o.cut ? [o.snapshot_chars, p.snapshot_chars, 'whole page']
      : w?.complete ? [w.chars, p.snapshot_chars, `whole page in ${w.calls + 1} answers`]
      : c ? [c.ours, c.theirs, `the part ours showed${w ? ` in ${w.calls + 1} answers` : ''}`]
      : [null, null, 'not comparable'];
    Object.assign(res, { ratio: num == null ? null : r3(num / den), ratio_basis: basis, ratio_chars: { ours: num, playwright: den },
      ratio_one_answer: r3(o.snapshot_chars / p.snapshot_chars) });
  }
  if (args.dump) {
    for (const who of ['ours', 'playwright']) if (res[who]._text) writeFileSync(`${args.dump}/${page.name}.${who}.txt`, res[who]._text);
  }
  // how deep the sentence is: its place in playwright-mcp's full outline
  res.sentence_depth_chars = p.error ? null : p.sentence_at;
  for (const who of ['ours', 'playwright']) delete res[who]._text;
  if (o.reach?.continuation) delete o.reach.continuation._texts;
  // Leave both browsers on an empty page: an idle 8 MB page in one must
  // not weigh on the next measurement in the other.
  await timed(ours, 'browser_navigate', { url: 'about:blank' });
  await timed(theirs, 'browser_navigate', { url: 'about:blank' });
  res.seconds = r1((performance.now() - p0) / 1000);
  results.push(res);
  console.log(` ${res.seconds} s`);
}

// --- the report -------------------------------------------------------------

const how = (r) => {
  if (r.ours.error) return 'error';
  const ways = [];
  if (r.ours.reach.direct) ways.push('direct');
  const c = r.ours.reach.continuation;
  if (c?.reached && c.calls_to_sentence > 0) ways.push(`cont(${c.calls_to_sentence})`);
  if (r.ours.reach.find?.reached) ways.push('find');
  return ways.length ? ways.join('+') : 'NO';
};
const reachable = (r) => !r.ours.error && how(r) !== 'NO';
const fmt = (n) => (n == null ? '-' : Number(n).toLocaleString('en-US'));
const mark = (r) => (r.ratio_basis === 'whole page' ? '' : r.ratio_basis.startsWith('whole') ? ' w' : ' p');
const cols = [
  ['page', 12], ['chars ours / pw', 20], ['ratio', 7], ['1 answer', 8], ['refs ours / pw', 15], ['ms/snap ours / pw', 17],
  ['navigate ms ours / pw', 21], ['sentence: ours', 15], ['pw', 6], ['depth', 9],
];
const line = (v) => v.map((x, i) => String(x).padEnd(cols[i][1])).join(' ').trimEnd();
console.log('\n' + line(cols.map((c) => c[0])));
const failures = [];
for (const r of results) {
  const o = r.ours, p = r.playwright;
  if (o.error) failures.push(`${r.name}: mcp-browser: ${o.error}`);
  if (p.error) failures.push(`${r.name}: playwright-mcp: ${p.error}`);
  if (o.error) { console.log(line([r.name, 'mcp-browser failed (below)'])); continue; }
  const pw = (f) => (p.error ? '-' : f());
  console.log(line([
    r.name,
    `${fmt(o.snapshot_chars)}${o.cut ? '*' : ''} / ${pw(() => fmt(p.snapshot_chars) + (p.cut ? '*' : ''))}`,
    r.ratio == null ? '-' : r.ratio.toFixed(2) + mark(r),
    r.ratio_one_answer == null ? '-' : r.ratio_one_answer.toFixed(2),
    `${fmt(o.refs)} / ${pw(() => fmt(p.refs))}`,
    `${fmt(Math.round(o.snapshot_ms_median))} / ${pw(() => fmt(Math.round(p.snapshot_ms_median)))}`,
    `${fmt(Math.round(o.navigate_ms))} / ${pw(() => fmt(Math.round(p.navigate_ms)))}`,
    r.sentence_on_page === -1 ? 'not on page!' : how(r),
    p.error ? 'failed' : p.direct ? 'direct' : 'NO',
    fmt(r.sentence_depth_chars),
  ]));
}
for (const f of failures) console.log(`failed: ${f.replace(/\s+/g, ' ').slice(0, 240)}`);
const ok = results.filter((r) => !r.ours.error && !r.playwright.error);
const rated = ok.filter((r) => r.ratio != null);
const whole = rated.filter((r) => r.ratio_basis.startsWith('whole'));
const sum = (rs, f) => rs.reduce((a, r) => a + f(r), 0);
const ratioTotal = (rs) => (rs.length ? r3(sum(rs, (r) => r.ratio_chars.ours) / sum(rs, (r) => r.ratio_chars.playwright)) : null);
const onPage = results.filter((r) => r.sentence_on_page !== -1);
const maxOf = (rs, f) => (rs.length ? r1(Math.max(...rs.map(f))) : null);
const summary = {
  pages: results.length,
  pages_failed_ours: results.filter((r) => r.ours.error).length,
  pages_failed_playwright: results.filter((r) => r.playwright.error).length,
  pages_cut_ours: ok.filter((r) => r.ours.cut).length,
  pages_rated: rated.length,
  ratio_median: r3(median(rated.map((r) => r.ratio))),
  ratio_total: ratioTotal(rated),
  pages_whole: whole.length,
  ratio_median_whole: r3(median(whole.map((r) => r.ratio))),
  ratio_total_whole: ratioTotal(whole),
  ratio_one_answer_median: r3(median(ok.map((r) => r.ratio_one_answer))),
  sentences: onPage.length,
  reachable_ours: onPage.filter(reachable).length,
  reachable_ours_direct: onPage.filter((r) => !r.ours.error && r.ours.reach.direct).length,
  reachable_ours_continuation: can.continuation ? onPage.filter((r) => !r.ours.error && r.ours.reach.continuation.reached).length : null,
  reachable_ours_find: can.find ? onPage.filter((r) => !r.ours.error && r.ours.reach.find.reached).length : null,
  reachable_playwright: onPage.filter((r) => !r.playwright.error && r.playwright.direct).length,
  unreachable_ours: onPage.length - onPage.filter(reachable).length,
  sentences_not_deep: ok.filter((r) => r.sentence_depth_chars >= 0 && r.sentence_depth_chars < DEEP).map((r) => r.name),
  sentences_not_on_page: results.filter((r) => r.sentence_on_page === -1).map((r) => r.name),
  ours_snapshot_ms_max: maxOf(results.filter((r) => !r.ours.error), (r) => r.ours.snapshot_ms_median),
  playwright_snapshot_ms_max: maxOf(results.filter((r) => !r.playwright.error), (r) => r.playwright.snapshot_ms_median),
  ours_navigate_ms_max: maxOf(results.filter((r) => !r.ours.error), (r) => r.ours.navigate_ms),
  playwright_navigate_ms_max: maxOf(results.filter((r) => !r.playwright.error), (r) => r.playwright.navigate_ms),
  seconds: r1((performance.now() - t0) / 1000),
};
console.log(`
chars: of one browser_snapshot answer (* = cut, a note says what was left out).  ratio: ours / playwright-mcp's
characters for the same content: the whole page, or (w) the whole page through continuation, or (p) the part of
the page ours showed before its cut, located in playwright-mcp's whole snapshot.  1 answer: ours / theirs for
one browser_snapshot.  depth: where the sentence is in playwright-mcp's whole snapshot, in characters.
sentence: direct = in the snapshot, cont(N) = after N continuation calls, find = browser_find shows it with a ref.
size ratio for the same content, ${rated.length} pages: median ${summary.ratio_median ?? '-'}, total ${summary.ratio_total ?? '-'} (sum ours / sum playwright-mcp)
  of which whole pages (${whole.length}): median ${summary.ratio_median_whole ?? '-'}, total ${summary.ratio_total_whole ?? '-'}; one answer, median of ${ok.length}: ${summary.ratio_one_answer_median ?? '-'}
sentences reachable: mcp-browser ${summary.reachable_ours}/${summary.sentences} (direct ${summary.reachable_ours_direct}, \
continuation ${summary.reachable_ours_continuation ?? 'n/a'}, find ${summary.reachable_ours_find ?? 'n/a'}), playwright-mcp ${summary.reachable_playwright}/${summary.sentences}
slowest page: snapshot ${summary.ours_snapshot_ms_max} / ${summary.playwright_snapshot_ms_max} ms, navigate ${summary.ours_navigate_ms_max} / ${summary.playwright_navigate_ms_max} ms (ours / playwright-mcp)`);
if (summary.sentences_not_deep.length) console.log(`note: the sentence is within the first ${DEEP} characters on ${summary.sentences_not_deep.join(', ')}`);
if (summary.sentences_not_on_page.length) console.log(`WARNING: the sentence is not on the page (the package changed?): ${summary.sentences_not_on_page.join(', ')}`);

const out = { snapshots_per_page: SNAPSHOTS, ours_tools: can, summary, pages: results };
if (args.out) writeFileSync(args.out, JSON.stringify(out, null, 2) + '\n');
await ours.close();
await theirs.close();
// A page that one server fails is a finding, in the table and the figures;
// only a run that measured no page at all is a failed benchmark.
process.exit(ok.length ? 0 : 1);
