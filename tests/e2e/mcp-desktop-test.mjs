// mcp-desktop end to end with the official MCP TypeScript SDK client
// (Client + StreamableHTTPClientTransport): lists the tools, takes a
// screenshot and decodes the PNG here (zlib inflate + unfiltering) to check
// its size and that it shows Chromium with the start page, clicks into the
// start page's text field, types non-ASCII text and sees the field change,
// clears it with ctrl+a and BackSpace, moves the pointer and reads it back,
// zooms a region, checks that every image states its size, the display's
// real size and the scale, that `if_changed` answers "unchanged" (text, no
// image) to the same session when nothing changed and an image when the
// screen changed or the client is another session, that the pointer is
// drawn in, pastes through the
// clipboard into Chromium and reads Chromium's copy back, and checks that
// bad calls are refused with clear errors while the server keeps serving.
// Prints "ok - ..." / "not ok - ..." lines.
//
//   node mcp-desktop-test.mjs --url URL [--width 1280 --height 800]
//                             [--real-width W --real-height H] [--out DIR]
//                             [--type TEXT] [--paste TEXT] [--sizes [--pointer off]]
//                             [--bench N [--bench-args JSON]]
//
// --type TEXT: only click into the field and type TEXT (the host test then
// reads the exact text back from the page).  --paste TEXT: the same through
// clipboard_set and ctrl+v.  --sizes: only check the screenshot's size and
// what it states (for the --screen-size presets); with --pointer off, also
// that the pointer is not drawn (--no-pointer).  --bench N: only time N calls
// of the computer tool (default {"action":"screenshot"}) after 3 warm-up
// calls and print {"p50_ms","p90_ms","p99_ms","mean_ms","answer_bytes_mean" (the result
// as JSON), "unchanged" (answers that were), ...} as JSON.
import { writeFileSync } from 'node:fs';
import { frameStats, looksLikeDesktop } from './lib/frame.mjs';
import { parseArgs, tap, ok, notOk, check } from './lib/tap.mjs';
import { connect, call as callTool, textOf } from './lib/mcp-client.mjs';
import { decodePng } from './lib/png.mjs';

const args = parseArgs();
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

// Pixels that differ (any channel by more than 48) between two same-size images.
function diffAll(a, b) {
  let n = 0;
  for (let i = 0; i < a.data.length; i += 4) {
    if (Math.abs(a.data[i] - b.data[i]) > 48 || Math.abs(a.data[i + 1] - b.data[i + 1]) > 48 || Math.abs(a.data[i + 2] - b.data[i + 2]) > 48) n++;
  }
  return n;
}
// Whether screenshots show the pointer: a zoom of a spot of page background
// with the pointer away, then on it.
async function pointerPixels() {
  const region = [W - 90, H - 90, W - 50, H - 50];
  await computer({ action: 'mouse_move', coordinate: [W - 150, H - 150] });
  const z0 = png(await call('zoom', { region }));
  await computer({ action: 'mouse_move', coordinate: [W - 75, H - 75] });
  const z1 = png(await call('zoom', { region }));
  return z0 && z1 && z0.w === z1.w ? diffAll(z0, z1) : -1;
}

let client;
const call = (name, a = {}) => callTool(client, name, a);
// Resolves to the JSON-RPC error (code, message) of a call that must fail.
const refused = (name, a) => call(name, a).then((res) => ({ res }), (err) => ({ code: err.code, message: String(err.message) }));
const computer = (a) => call('computer', a);

try {
  client = await connect(args.url, 'cloche-mcp-desktop-test');

  if (args.bench) {
    const n = Number(args.bench); const ms = []; let bytes = 0; let answer = 0; let unchanged = 0;
    const a = JSON.parse(args['bench-args'] || '{"action":"screenshot"}');
    for (let i = 0; i < n + 3; i++) {
      const t0 = performance.now();
      const res = await computer(a);
      const t = performance.now() - t0;
      if (res.isError) throw new Error(texts(res));
      const img = images(res)[0];
      if (i >= 3) {
        ms.push(t); bytes = img ? Buffer.from(img.data, 'base64').length : 0;
        answer += JSON.stringify(res).length;
        if (res.structuredContent && res.structuredContent.unchanged) unchanged++;
      }
    }
    ms.sort((x, y) => x - y);
    const q = (p) => +ms[Math.min(ms.length - 1, Math.floor(p * ms.length))].toFixed(1);
    const mean = +(ms.reduce((x, y) => x + y, 0) / ms.length).toFixed(1);
    console.log(JSON.stringify({ calls: n, p50_ms: q(0.5), p90_ms: q(0.9), p99_ms: q(0.99), mean_ms: mean, max_ms: q(1), png_bytes: bytes, answer_bytes_mean: Math.round(answer / n), unchanged, samples_ms: ms.map((x) => +x.toFixed(1)) }));
    process.exit(0);
  }

  // The pointer is drawn into screenshots: park it in the corner, off
  // everything the checks below look at.
  await computer({ action: 'mouse_move', coordinate: [W - 1, H - 1] });
  const first = png(await computer({ action: 'screenshot' }));
  const st0 = first && frameStats(first.w, first.h, first.data);
  const field = st0 && st0.field;
  // --type and --paste: a click into the page's text field, emptied.
  const emptyField = async () => {
    check(field, 'found the page text field');
    if (!field) throw new Error('no field');
    await computer({ action: 'left_click', coordinate: [Math.round((field.x0 + field.x1) / 2), Math.round((field.y0 + field.y1) / 2)] });
    await call('key', { text: 'ctrl+a BackSpace' });
  };
  if (args.type !== undefined) {
    await emptyField();
    const t0 = performance.now();
    const res = await call('type', { text: args.type });
    check(!res.isError && /typed/.test(texts(res)), `type answers "${texts(res)}" (${Math.round(performance.now() - t0)} ms with its screenshot)`);
    tap.exit();
  }
  if (args.paste !== undefined) {
    await emptyField();
    let res = await call('clipboard_set', { text: args.paste });
    check(!res.isError && /clipboard holds your text/.test(texts(res)), `clipboard_set answers "${texts(res)}"`);
    res = await call('key', { text: 'ctrl+v' });
    check(!res.isError, 'ctrl+v in the field');
    tap.exit();
  }
  if (args.sizes) {
    const RW0 = Number(args['real-width'] || W); const RH0 = Number(args['real-height'] || H);
    const res = await call('screenshot');
    const sc = res.structuredContent || {};
    check(first && first.w === W && first.h === H, `screenshot is a PNG of ${W}x${H}`, first ? `got ${first.w}x${first.h}` : 'no PNG');
    check(sc.display_width_px === W && sc.display_height_px === H && sc.real_width_px === RW0 && sc.real_height_px === RH0,
      `it states display ${W}x${H} and real ${RW0}x${RH0} ("${texts(res)}")`, JSON.stringify(sc));
    const { tools } = await client.listTools();
    const comp = tools.find((t) => t.name === 'computer');
    check(comp && comp.description.includes(`display_width_px=${W}`) && comp.description.includes(`display_height_px=${H}`), `the computer tool names the display size ${W}x${H}`);
    if (args.pointer === 'off') {
      const n = await pointerPixels();
      check(n === 0, `--no-pointer: the pointer is not in the image (${n} pixels changed where it went)`);
    }
    tap.exit();
  }

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  const want = ['computer', 'screenshot', 'mouse_move', 'left_click', 'right_click', 'middle_click', 'double_click',
    'triple_click', 'left_click_drag', 'left_mouse_down', 'left_mouse_up', 'scroll', 'key', 'type', 'hold_key', 'wait',
    'cursor_position', 'zoom'];
  want.push('clipboard_get', 'clipboard_set');
  check(want.every((n) => names.includes(n)), `tools/list has computer, every action as a tool and the clipboard tools (${names.length} tools)`, `missing: ${want.filter((n) => !names.includes(n))}`);
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
  await computer({ action: 'mouse_move', coordinate: [W - 1, H - 1] });
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

  // Every image states its size, the display's real size and the scale.
  res = await call('screenshot');
  let sc = res.structuredContent || {};
  const note = texts(res);
  const near = (a, b) => typeof a === 'number' && Math.abs(a - b) < 1e-6;
  check(sc.display_width_px === W && sc.display_height_px === H && sc.real_width_px === RW && sc.real_height_px === RH &&
    sc.image_width_px === W && sc.image_height_px === H && near(sc.scale_x, W / RW) && near(sc.scale_y, H / RH),
  `screenshot's structuredContent states display ${W}x${H}, real ${RW}x${RH}, image ${W}x${H}, scale ${+(W / RW).toFixed(4)}`, JSON.stringify(sc));
  check(note.includes(`screenshot ${W}x${H}`) && (W === RW && H === RH ? /real size/.test(note) : note.includes(`${RW}x${RH} display`)) &&
    /scale \d/.test(note), `the screenshot's text states sizes and scale ("${note}")`);
  res = await computer({ action: 'mouse_move', coordinate: [5, 5] });
  check(images(res).length === 1 && /scale \d/.test(texts(res)) && res.structuredContent && res.structuredContent.real_width_px === RW,
    `an action's screenshot states them too ("${texts(res).replace(/\n/g, ' / ')}")`);
  res = await call('zoom', { region: [0, 0, 64, 32], scale: 2 });
  sc = res.structuredContent || {};
  check(sc.region && sc.region.join() === '0,0,64,32' && sc.real_region && near(sc.scale_x, 2) && sc.real_width_px === RW &&
    /zoom of region \[0, 0, 64, 32\]/.test(texts(res)) && /scale 2 /.test(texts(res)), `zoom states its region in both spaces and its scale ("${texts(res)}")`);

  // The pointer is drawn into screenshots (the default).
  const pp = await pointerPixels();
  check(pp >= 20, `the pointer is drawn into the image where it is (${pp} pixels changed where it went)`);

  // if_changed: "unchanged" (text and hash, no image) when the screen is as
  // this session last saw it.  A blinking caret may change the screen
  // between two calls, hence a few tries.
  await computer({ action: 'left_click', coordinate: [Math.max(0, box.x0 - 20), Math.min(H - 1, box.y1 + 40)] }); // off the field
  let un = null; let full = null;
  for (let i = 0; i < 8 && !un; i++) {
    full = await call('screenshot');
    const again2 = await call('screenshot', { if_changed: true });
    if (again2.structuredContent && again2.structuredContent.unchanged) un = again2;
  }
  check(un && images(un).length === 0 && /^unchanged since \d\d:\d\d:\d\d\.\d{3} UTC/.test(texts(un)) &&
    un.structuredContent.hash === full.structuredContent.hash && un.structuredContent.display_width_px === W,
  `screenshot {if_changed: true} right after a screenshot answers "${un ? texts(un).slice(0, 70) : 'an image every time'}..." without an image`);
  if (un) {
    const big = JSON.stringify(full).length; const small = JSON.stringify(un).length;
    ok(`unchanged answer ${small} bytes of JSON against ${big} with the image (${Math.round(big / small)}x smaller)`);
  }
  res = await computer({ action: 'screenshot', if_changed: true });
  check(res.structuredContent && typeof res.structuredContent.unchanged === 'boolean' && typeof res.structuredContent.hash === 'string',
    'the computer tool takes if_changed too');
  res = await computer({ action: 'wait', duration: 0.1, if_changed: true });
  check(!res.isError && /waited/.test(texts(res)) && res.structuredContent && typeof res.structuredContent.unchanged === 'boolean', 'wait takes if_changed');
  // Another session has its own memory: its first if_changed is an image.
  const client2 = await connect(args.url, 'cloche-mcp-desktop-test-2');
  try {
    res = await callTool(client2, 'screenshot', { if_changed: true });
    check(images(res).length === 1 && res.structuredContent.unchanged === false, "another session's first screenshot with if_changed is an image");
    // The screen changes under session 1 (session 2 types): an image again.
    const h0 = (await call('screenshot')).structuredContent.hash;
    await callTool(client2, 'left_click', { coordinate: [cx, cy] });
    await callTool(client2, 'type', { text: 'changed' });
    await sleep(300);
    res = await call('screenshot', { if_changed: true });
    check(images(res).length === 1 && res.structuredContent.unchanged === false && res.structuredContent.hash !== h0,
      'after the screen changed, screenshot {if_changed: true} is an image again with a new hash');
    await callTool(client2, 'key', { text: 'ctrl+a BackSpace' });
  } finally {
    await client2.close().catch(() => {});
  }

  // Clipboard: ours pasted into Chromium, and Chromium's copy read back.
  const clipText = 'clip héllo € 日本 ' + Date.now();
  res = await call('clipboard_set', { text: clipText });
  check(!res.isError && res.structuredContent && res.structuredContent.bytes === Buffer.byteLength(clipText), `clipboard_set answers "${texts(res)}"`);
  res = await call('clipboard_get');
  check(!res.isError && texts(res) === clipText && res.structuredContent.text === clipText, 'clipboard_get reads our own text back');
  await computer({ action: 'left_click', coordinate: [cx, cy] });
  await call('key', { text: 'ctrl+a BackSpace' });
  await call('key', { text: 'ctrl+v' });
  await computer({ action: 'mouse_move', coordinate: [W - 1, H - 1] });
  let pasted; let pch = 0;
  for (let i = 0; i < 10 && pch < 150; i++) {
    pasted = png(await computer({ action: 'wait', duration: 0.3 }));
    pch = diff(before, pasted, box);
  }
  check(pch >= 150, `ctrl+v pastes the clipboard into Chromium's field (${pch} pixels changed)`);
  await call('key', { text: 'ctrl+a BackSpace' });
  await call('type', { text: 'copied from chromium' });
  await call('key', { text: 'ctrl+a ctrl+c' });
  let got = '';
  for (let i = 0; i < 10 && got !== 'copied from chromium'; i++) {
    res = await call('clipboard_get');
    got = texts(res);
    if (got !== 'copied from chromium') await sleep(200);
  }
  check(got === 'copied from chromium', `clipboard_get reads what Chromium copied ("${got.slice(0, 60)}")`);
  await call('key', { text: 'BackSpace' });

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
    ['screenshot', { if_changed: 'yes' }, /if_changed/],
    ['clipboard_set', {}, /text/],
    ['clipboard_set', { text: 'x'.repeat((1 << 20) + 1) }, /limit/],
  ];
  for (const [name, a, re] of bad) {
    const r = await refused(name, a);
    check(r.code === -32602 && re.test(r.message), `${name} ${JSON.stringify(a).slice(0, 70)} is refused with -32602 (${r.code}: ${(r.message || '').slice(0, 90)})`);
  }
  res = await call('screenshot');
  const again = png(res);
  check(again && again.w === W, 'the server keeps serving after bad calls');
} catch (err) {
  notOk(`mcp-desktop session: ${err.message}`);
} finally {
  await client.close().catch(() => {});
}
tap.exit();
