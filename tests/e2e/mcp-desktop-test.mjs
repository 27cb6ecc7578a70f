// mcp-desktop end to end with the official MCP TypeScript SDK client
// (Client + StreamableHTTPClientTransport): lists the tools, takes a
// screenshot and decodes the PNG here (zlib inflate + unfiltering) to check
// its size and that it shows Chromium with the start page, clicks into the
// start page's text field, types non-ASCII text and sees the field change,
// clears it with ctrl+a and BackSpace, moves the pointer and reads it back,
// zooms a region, and checks that bad calls are refused with clear errors
// while the server keeps serving.  Prints "ok - ..." / "not ok - ..." lines.
//
//   node mcp-desktop-test.mjs --url URL [--width 1280 --height 800]
//                             [--real-width W --real-height H] [--out DIR]
//                             [--type TEXT] [--bench N [--bench-args JSON]]
//
// --type TEXT: only click into the field and type TEXT (the host test then
// reads the exact text back from the page).  --bench N: only time N calls
// of the computer tool (default {"action":"screenshot"}) after 3 warm-up
// calls and print {"p50_ms","p90_ms","p99_ms","mean_ms",...} as JSON.
import { writeFileSync } from 'node:fs';
import { frameStats, looksLikeDesktop } from './lib/frame.mjs';
import { parseArgs, tap, connect, textOf } from './lib/mcp-client.mjs';
import { decodePng } from './lib/png.mjs';

const args = parseArgs();
const ok = (name) => tap.ok(name);
const notOk = (name, why) => tap.notOk(name, why);
const check = (cond, name, why) => tap.check(cond, name, why);
const W = Number(args.width || 1280);
const H = Number(args.height || 800);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const images = (res) => (res.content || []).filter((c) => c.type === 'image');
const texts = textOf;
let shots = 0;
function png(res) {
  const img = images(res)[0];
  if (!img || img.mimeType !== 'image/png') return null;
  const buf = Buffer.from(img.data, 'base64');
  if (args.out) writeFileSync(`${args.out}/mcp-desktop-${shots++}.png`, buf);
  return decodePng(buf);
}
// Pixels that differ (any channel by more than 24) inside box between frames.
function diff(a, b, box) {
  let n = 0;
  for (let y = box.y0 + 3; y <= box.y1 - 3; y++) {
    for (let x = box.x0 + 3; x <= box.x1 - 3; x++) {
      const i = (y * a.w + x) * 4;
      if (Math.abs(a.data[i] - b.data[i]) > 24 || Math.abs(a.data[i + 1] - b.data[i + 1]) > 24 || Math.abs(a.data[i + 2] - b.data[i + 2]) > 24) n++;
    }
  }
  return n;
}

let client;
const call = (name, a = {}) => client.callTool({ name, arguments: a });
// Resolves to the JSON-RPC error (code, message) of a call that must fail.
const refused = (name, a) => call(name, a).then((res) => ({ res }), (err) => ({ code: err.code, message: String(err.message) }));
const computer = (a) => call('computer', a);

try {
  client = await connect(args.url, 'cloche-mcp-desktop-test');

  if (args.bench) {
    const n = Number(args.bench); const ms = []; let bytes = 0;
    const a = JSON.parse(args['bench-args'] || '{"action":"screenshot"}');
    for (let i = 0; i < n + 3; i++) {
      const t0 = performance.now();
      const res = await computer(a);
      const t = performance.now() - t0;
      if (res.isError) throw new Error(texts(res));
      const img = images(res)[0];
      if (i >= 3) { ms.push(t); bytes = img ? Buffer.from(img.data, 'base64').length : 0; }
    }
    ms.sort((x, y) => x - y);
    const q = (p) => +ms[Math.min(ms.length - 1, Math.floor(p * ms.length))].toFixed(1);
    const mean = +(ms.reduce((x, y) => x + y, 0) / ms.length).toFixed(1);
    console.log(JSON.stringify({ calls: n, p50_ms: q(0.5), p90_ms: q(0.9), p99_ms: q(0.99), mean_ms: mean, max_ms: q(1), png_bytes: bytes, samples_ms: ms.map((x) => +x.toFixed(1)) }));
    process.exit(0);
  }

  const first = png(await computer({ action: 'screenshot' }));
  const st0 = first && frameStats(first.w, first.h, first.data);
  const field = st0 && st0.field;
  if (args.type !== undefined) {
    check(field, 'found the page text field');
    if (!field) throw new Error('no field');
    await computer({ action: 'left_click', coordinate: [Math.round((field.x0 + field.x1) / 2), Math.round((field.y0 + field.y1) / 2)] });
    await call('key', { text: 'ctrl+a BackSpace' });
    const t0 = performance.now();
    const res = await call('type', { text: args.type });
    check(!res.isError && /typed/.test(texts(res)), `type answers "${texts(res)}" (${Math.round(performance.now() - t0)} ms with its screenshot)`);
    process.exit(tap.failed ? 1 : 0);
  }

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  const want = ['computer', 'screenshot', 'mouse_move', 'left_click', 'right_click', 'middle_click', 'double_click',
    'triple_click', 'left_click_drag', 'left_mouse_down', 'left_mouse_up', 'scroll', 'key', 'type', 'hold_key', 'wait',
    'cursor_position', 'zoom'];
  check(want.every((n) => names.includes(n)), `tools/list has computer and every action as a tool (${names.length} tools)`, `missing: ${want.filter((n) => !names.includes(n))}`);
  const comp = tools.find((t) => t.name === 'computer');
  check(comp && comp.inputSchema.properties.action.enum.length === 17, 'the computer tool declares its 17 actions');
  check(comp && comp.description.includes(`display_width_px=${W}`) && comp.description.includes(`display_height_px=${H}`), `the computer tool names the display size ${W}x${H}`);

  check(first && first.w === W && first.h === H, `screenshot is a PNG of ${W}x${H}`, first ? `got ${first.w}x${first.h}` : 'no PNG');
  let st = st0; let shot = first;
  // Chromium may still be painting right after boot: give it a few tries.
  for (let i = 0; i < 20 && !(looksLikeDesktop(st) && st.field); i++) {
    await sleep(500);
    shot = png(await call('screenshot'));
    st = frameStats(shot.w, shot.h, shot.data);
  }
  check(looksLikeDesktop(st), `the screenshot shows Chromium with the start page (${st.colours} colours, toolbar ${Math.round(st.toolbarLight * 100)}% light, page ${Math.round(st.pageBlue * 100)}% blue)`);
  const box = st.field;
  check(box, `found the start page's text field${box ? ` at ${box.x0},${box.y0}-${box.x1},${box.y1}` : ''}`);
  if (!box) throw new Error('no text field');
  const before = shot;
  const cx = Math.round((box.x0 + box.x1) / 2); const cy = Math.round((box.y0 + box.y1) / 2);

  let res = await computer({ action: 'left_click', coordinate: [cx, cy] });
  check(!res.isError && /left_click at/.test(texts(res)) && images(res).length === 1, `left_click answers with text and a screenshot ("${texts(res)}")`);
  res = await computer({ action: 'type', text: 'héllo € cloche ÄÖÜ' });
  check(!res.isError && /typed 18 of 18/.test(texts(res)), `type of non-ASCII text answers "${texts(res)}"`);
  let typed; let changed = 0;
  for (let i = 0; i < 10 && changed < 150; i++) {
    typed = png(await computer({ action: 'wait', duration: 0.5 }));
    changed = diff(before, typed, box);
  }
  check(changed >= 150, `the text field changed on a later screenshot (${changed} pixels)`);

  res = await call('key', { text: 'ctrl+a' });
  check(!res.isError, 'key ctrl+a (the separate key tool)');
  res = await call('key', { text: 'BackSpace' });
  check(!res.isError, 'key BackSpace');
  let cleared; let left = Infinity;
  for (let i = 0; i < 10 && left > changed / 4; i++) {
    cleared = png(await computer({ action: 'wait', duration: 0.5 }));
    left = diff(before, cleared, box);
  }
  check(left <= changed / 4, `ctrl+a then BackSpace clears the field (${left} pixels differ from before typing, ${changed} did after)`);

  res = await computer({ action: 'mouse_move', coordinate: [123, 456] });
  check(!res.isError, 'mouse_move to 123,456');
  res = await computer({ action: 'cursor_position' });
  check(texts(res) === 'X=123,Y=456', `cursor_position answers "${texts(res)}"`);
  check(res.structuredContent && res.structuredContent.x === 123 && res.structuredContent.y === 456, 'cursor_position has structured x, y');
  res = await call('cursor_position');
  check(texts(res) === 'X=123,Y=456', 'the separate cursor_position tool agrees');

  // Zoom answers the region's real pixels: with a scaled display that is
  // more than the region's size in screenshot pixels.
  const RW = Number(args['real-width'] || W); const RH = Number(args['real-height'] || H);
  const span = (a, b, m, r) => Math.min(r, Math.ceil((b * r) / m)) - Math.floor((a * r) / m);
  const zw = span(100, 300, W, RW); const zh = span(100, 250, H, RH);
  res = await computer({ action: 'zoom', region: [100, 100, 300, 250] });
  const z = png(res);
  check(z && z.w === zw && z.h === zh, `zoom [100,100,300,250] is a PNG of ${zw}x${zh}${z ? ` (got ${z.w}x${z.h})` : ''}`);
  res = await call('zoom', { region: [0, 0, 64, 32], scale: 2 });
  const z2 = png(res);
  check(z2 && z2.w === 2 * span(0, 64, W, RW) && z2.h === 2 * span(0, 32, H, RH), 'zoom with scale 2 doubles the region');

  res = await computer({ action: 'scroll', coordinate: [cx, cy], scroll_direction: 'down', scroll_amount: 2 });
  check(!res.isError && /scrolled down 2/.test(texts(res)), `scroll answers "${texts(res)}"`);

  // Bad input: JSON-RPC -32602 with a message that says what is wrong.
  const bad = [
    ['computer', { action: 'fly' }, /action/],
    ['computer', {}, /action/],
    ['computer', { action: 'left_click', coordinate: 'middle' }, /coordinate/],
    ['computer', { action: 'left_click', coordinate: [W, 10] }, /outside the display/],
    ['computer', { action: 'mouse_move', coordinate: [-1, 5] }, /outside the display/],
    ['computer', { action: 'mouse_move' }, /coordinate/],
    ['computer', { action: 'key', text: 'ctrl+nosuchkey' }, /unknown key name/],
    ['computer', { action: 'type', text: 42 }, /text/],
    ['computer', { action: 'wait', duration: 1000 }, /duration/],
    ['computer', { action: 'scroll', scroll_direction: 'sideways' }, /scroll_direction/],
    ['computer', { action: 'zoom', region: [10, 10, 5, 5] }, /region/],
    ['left_click', { text: 'a' }, /modifier/],
  ];
  for (const [name, a, re] of bad) {
    const r = await refused(name, a);
    check(r.code === -32602 && re.test(r.message), `${name} ${JSON.stringify(a)} is refused with -32602 (${r.code}: ${(r.message || '').slice(0, 90)})`);
  }
  res = await call('screenshot');
  const again = png(res);
  check(again && again.w === W, 'the server keeps serving after bad calls');
} catch (err) {
  notOk(`mcp-desktop session: ${err.message}`);
} finally {
  await client.close().catch(() => {});
}
process.exit(tap.failed ? 1 : 0);
