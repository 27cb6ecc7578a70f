// mcp-browser end to end with the official MCP TypeScript SDK client: lists
// the tools (their input schemas compile as JSON Schema 2020-12), drives the
// test form page (navigate, snapshot, type, click, select, evaluate,
// screenshot, console, tabs, wait), with elements named as older clients do
// (`ref`) and as playwright-mcp does since 2026 (`target`), checks that a
// stale ref gives the documented error, that a cancelled call lets go of the
// browser, and that bad input is rejected while the server keeps serving.
// Prints "ok - ..." / "not ok - ..." lines; exits 1 when anything failed.
//
//   node mcp-browser-test.mjs --url http://10.0.2.15:7999/mcp
//        [--page file:///opt/cloche/share/test/form.html] [--origin http://127.0.0.1]
//   node mcp-browser-test.mjs --url ... --bench N [--out FILE.json]
//        (only times N browser_snapshot round trips, writes p50/p99)
import { writeFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import { parseArgs, tap, ok, notOk, check } from './lib/tap.mjs';
import { connect, call as callTool, textOf } from './lib/mcp-client.mjs';

const args = parseArgs();
const page = args.page || 'file:///opt/cloche/share/test/form.html';
const text = (r) => (r ? textOf(r) : '');
const short = (s) => JSON.stringify(String(s).slice(0, 300));

// --origin sends an Origin header, as a browser-based client would.
const client = await connect(args.url, 'cloche-mcp-browser-test',
  { headers: args.origin ? { Origin: args.origin } : undefined });
const call = (name, a = {}) => callTool(client, name, a, { timeout: 60000 });
// A JSON-RPC error as a failed result, for checks that must go on after one.
const tryCall = (name, a) => call(name, a).catch((e) => ({ isError: true, content: [{ type: 'text', text: `JSON-RPC ${e.code}: ${e.message}` }] }));
// Expects a JSON-RPC -32602 error (whose message matches re, when given).
const rejects = async (p, name, re) => {
  try {
    const x = await p;
    notOk(name, `answered ${short(JSON.stringify(x))}`);
  } catch (e) {
    check(e.code === -32602 && (!re || re.test(e.message)), name, `code ${e.code}: ${e.message}`);
  }
};

if (args.bench) {
  await call('browser_navigate', { url: page });
  const n = Number(args.bench), ms = [];
  for (let i = 0; i < 5; i++) await call('browser_snapshot');
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call('browser_snapshot');
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  const q = (p) => Math.round(ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] * 100) / 100;
  const res = { tool: 'browser_snapshot', page, calls: n, p50_ms: q(0.5), p99_ms: q(0.99), max_ms: q(1),
    samples_ms: ms.map((x) => Math.round(x * 100) / 100) };
  console.log(JSON.stringify(res));
  if (args.out) writeFileSync(args.out, JSON.stringify(res, null, 2) + '\n');
  await client.close();
  process.exit(0);
}

try {
  const { tools } = await client.listTools();
  const names = new Set(tools.map((t) => t.name));
  const want = ['browser_navigate', 'browser_navigate_back', 'browser_snapshot', 'browser_click', 'browser_type',
    'browser_press_key', 'browser_hover', 'browser_select_option', 'browser_fill_form', 'browser_wait_for',
    'browser_take_screenshot', 'browser_evaluate', 'browser_console_messages', 'browser_tabs', 'browser_resize',
    'browser_close', 'browser_handle_dialog', 'browser_drag'];
  const missing = want.filter((n) => !names.has(n));
  check(missing.length === 0, `tools/list has the ${want.length} browser tools`, `missing ${missing}`);

  // The schemas are valid JSON Schema, document `target` and still accept `ref`.
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  const validators = {};
  for (const t of tools) {
    try { validators[t.name] = ajv.compile(t.inputSchema); } catch (e) { notOk(`the input schema of ${t.name} compiles`, e.message); }
  }
  check(Object.keys(validators).length === tools.length, `every input schema compiles as JSON Schema 2020-12 (${tools.length})`);
  const fits = (tool, a) => validators[tool]?.(a) === true;
  const accepted = [['browser_click', { target: 'e1' }], ['browser_click', { ref: 'e1' }],
    ['browser_type', { target: 'e1', text: 'x' }], ['browser_evaluate', { target: 'e1', function: '(el) => el.id' }],
    ['browser_drag', { startTarget: 'e1', endTarget: 'e2' }], ['browser_drag', { startRef: 'e1', endRef: 'e2' }],
    ['browser_fill_form', { fields: [{ target: 'e1', value: 'x' }] }]].filter(([n, a]) => !fits(n, a));
  check(accepted.length === 0, 'the schemas accept elements named by `target` and by the older `ref`', short(JSON.stringify(accepted)));
  const undocumented = tools.filter((t) => 'ref' in (t.inputSchema.properties || {}) && !('target' in t.inputSchema.properties));
  check(undocumented.length === 0 && 'target' in (tools.find((t) => t.name === 'browser_click')?.inputSchema.properties || {}),
    'every tool that takes `ref` documents `target`', undocumented.map((t) => t.name).join(', '));

  let t0 = Date.now();
  let r = await call('browser_navigate', { url: page });
  check(!r.isError && /Page Title: cloche form test/.test(text(r)), `browser_navigate to the test page (${Date.now() - t0} ms)`, short(text(r)));

  t0 = Date.now();
  r = await call('browser_snapshot');
  let snap = text(r);
  const field = /textbox "Your name"[^\n]*\[ref=(e\d+)\]/.exec(snap);
  const button = /button "Greet"[^\n]*\[ref=(e\d+)\]/.exec(snap);
  const select = /combobox "Favourite colour"[^\n]*\[ref=(e\d+)\]/.exec(snap);
  const box = /checkbox "I agree"[^\n]*\[ref=(e\d+)\]/.exec(snap);
  check(field && button && select && box, `browser_snapshot shows the form with refs (${Date.now() - t0} ms, ${snap.length} chars)`, short(snap));
  if (!field || !button) throw new Error('no refs to work with');

  r = await call('browser_type', { ref: field[1], element: 'name field', text: 'Ada Lovelace 42' });
  check(!r.isError, 'browser_type into the text field', short(text(r)));
  r = await call('browser_snapshot');
  check(new RegExp(`textbox "Your name"[^\\n]*\\[ref=${field[1]}\\]: Ada Lovelace 42`).test(text(r)),
    'browser_snapshot shows the typed text (same ref)', short(text(r)));

  r = await call('browser_evaluate', { function: "() => document.querySelector('#name').value" });
  check(!r.isError && text(r).trim() === '"Ada Lovelace 42"', 'browser_evaluate returns the field value', short(text(r)));
  r = await call('browser_evaluate', { function: '(el) => el.id', ref: field[1] });
  check(!r.isError && text(r).trim() === '"name"', 'browser_evaluate on a ref gets the element', short(text(r)));
  r = await call('browser_evaluate', { function: '() => { throw new Error("boom"); }' });
  check(r.isError && /boom/.test(text(r)), 'browser_evaluate reports a thrown error as isError', short(text(r)));

  r = await call('browser_select_option', { ref: select[1], values: ['Blue'] });
  check(!r.isError && /"blue"/.test(text(r)), 'browser_select_option by label', short(text(r)));
  r = await call('browser_fill_form', { fields: [{ ref: box[1], type: 'checkbox', value: 'true' }] });
  check(!r.isError && /checkbox "I agree" \[checked\]/.test(text(r)), 'browser_fill_form checks the checkbox', short(text(r)));
  r = await call('browser_click', { ref: button[1], element: 'Greet button' });
  check(!r.isError && /Hello, Ada Lovelace 42 \(blue, agreed\)/.test(text(r)), 'browser_click runs the page script (snapshot shows its output)', short(text(r)));
  r = await call('browser_wait_for', { text: 'Hello, Ada', time: 5 });
  check(!r.isError, 'browser_wait_for finds text on the page', short(text(r)));
  r = await call('browser_console_messages');
  check(/\[LOG\] form page loaded/.test(text(r)) && /greeted Ada Lovelace 42/.test(text(r)), 'browser_console_messages has the page logs', short(text(r)));

  r = await call('browser_take_screenshot');
  const img = (r.content || []).find((c) => c.type === 'image');
  const png = img && Buffer.from(img.data, 'base64');
  check(!r.isError && img?.mimeType === 'image/png' && png?.subarray(1, 4).toString() === 'PNG' && png.length > 2000,
    `browser_take_screenshot returns a PNG image (${png?.length} bytes)`);
  r = await call('browser_take_screenshot', { type: 'jpeg', fullPage: true });
  const jpg = (r.content || []).find((c) => c.type === 'image');
  check(!r.isError && jpg?.mimeType === 'image/jpeg' && Buffer.from(jpg.data, 'base64')[0] === 0xff, 'browser_take_screenshot fullPage jpeg');

  // The page changes: the old refs must be refused with the documented words.
  await call('browser_navigate', { url: page });
  r = await call('browser_click', { ref: button[1] });
  check(r.isError && text(r).includes(`ref ${button[1]} is stale: the page changed since the last browser_snapshot; take a new snapshot`),
    'a stale ref gives the clear error', short(text(r)));
  r = await call('browser_type', { ref: 'e999999', text: 'x' });
  check(r.isError && /ref e999999 is unknown/.test(text(r)), 'an unknown ref gives an error', short(text(r)));
  r = await call('browser_snapshot');
  const fresh = /textbox "Your name"[^\n]*\[ref=(e\d+)\]/.exec(text(r));
  check(fresh && fresh[1] !== field[1], 'a new snapshot hands out new refs', short(text(r)));
  r = await call('browser_type', { ref: fresh?.[1] || 'e1', text: 'again', submit: true });
  check(!r.isError && /Hello, again/.test(text(r)), 'browser_type with submit submits the form', short(text(r)));
  r = await call('browser_press_key', { key: 'Control+a' });
  check(!r.isError, 'browser_press_key Control+a', short(text(r)));

  r = await call('browser_tabs', { action: 'new', url: 'about:blank' });
  check(!r.isError && /- 1: \(current\)/.test(text(r)), 'browser_tabs new opens and selects a second tab', short(text(r)));
  r = await call('browser_tabs', { action: 'close' });
  check(!r.isError && /- 0: \(current\)/.test(text(r)) && !/- 1:/.test(text(r)), 'browser_tabs close returns to one tab', short(text(r)));
  r = await call('browser_navigate_back');
  check(!r.isError || /no previous page/.test(text(r)), 'browser_navigate_back answers', short(text(r)));

  // A JavaScript dialog blocks the page: reported, refused, then answered.
  snap = text(await call('browser_navigate', { url: page }));
  const ask = /button "Ask"[^\n]*\[ref=(e\d+)\]/.exec(snap);
  r = await call('browser_click', { ref: ask?.[1] || 'e1' });
  check(!r.isError && /\[confirm dialog\]: "Really\?"/.test(text(r)), 'a click that opens confirm() reports the dialog', short(text(r)));
  r = await call('browser_snapshot');
  check(r.isError && /dialog is open/.test(text(r)), 'other tools are refused while the dialog is open', short(text(r)));
  r = await call('browser_handle_dialog', { accept: true });
  check(!r.isError && /status[^\n]*: confirmed/.test(text(r)), 'browser_handle_dialog accepts it and the page continues', short(text(r)));
  r = await call('browser_evaluate', { function: "() => alert('hi')" });
  check(r.isError && /a dialog opened in the page \(alert: "hi"\)/.test(text(r)), 'an evaluate that opens alert() reports it instead of hanging', short(text(r)));
  r = await call('browser_handle_dialog', { accept: false });
  check(!r.isError && /Dismissed the alert dialog/.test(text(r)), 'browser_handle_dialog dismisses the alert', short(text(r)));
  snap = text(r);
  const src = /button "Drag me"[^\n]*\[ref=(e\d+)\]/.exec(snap), dst = /button "Drop here"[^\n]*\[ref=(e\d+)\]/.exec(snap);
  r = await call('browser_drag', { startRef: src?.[1] || 'e1', endRef: dst?.[1] || 'e1' });
  check(!r.isError && /status[^\n]*: dropped/.test(text(r)), 'browser_drag drags between two elements', short(text(r)));

  // playwright-mcp's names since 2026: `target` (drag: startTarget, endTarget).
  snap = text(await call('browser_navigate', { url: page }));
  const ref = (role, name) => new RegExp(`${role} "${name}"[^\\n]*\\[ref=(e\\d+)\\]`).exec(snap)?.[1] || 'e1';
  const tName = ref('textbox', 'Your name'), tColour = ref('combobox', 'Favourite colour'), tBox = ref('checkbox', 'I agree');
  const tGreet = ref('button', 'Greet'), tSrc = ref('button', 'Drag me'), tDst = ref('button', 'Drop here');
  r = await tryCall('browser_type', { target: tName, element: 'name field', text: 'Grace Hopper' });
  check(!r.isError && new RegExp(`textbox "Your name"[^\\n]*\\[ref=${tName}\\]: Grace Hopper`).test(text(r)), 'browser_type with target', short(text(r)));
  r = await tryCall('browser_select_option', { target: tColour, values: ['Green'] });
  check(!r.isError && /"green"/.test(text(r)), 'browser_select_option with target', short(text(r)));
  r = await tryCall('browser_fill_form', { fields: [{ target: tBox, type: 'checkbox', value: 'true' }] });
  check(!r.isError && /checkbox "I agree" \[checked\]/.test(text(r)), 'browser_fill_form with a field named by target', short(text(r)));
  r = await tryCall('browser_hover', { target: tGreet, element: 'Greet button' });
  const hovered = text(await call('browser_evaluate', { function: "() => document.querySelector('#hello').matches(':hover')" })).trim();
  check(!r.isError && hovered === 'true', 'browser_hover with target puts the mouse on the element', `${short(text(r))} :hover ${hovered}`);
  r = await tryCall('browser_click', { target: tGreet, element: 'Greet button' });
  check(!r.isError && /Hello, Grace Hopper \(green, agreed\)/.test(text(r)), 'browser_click with target', short(text(r)));
  r = await tryCall('browser_evaluate', { function: '(el) => el.id', target: tName });
  check(!r.isError && text(r).trim() === '"name"', 'browser_evaluate with target gets the element', short(text(r)));
  r = await tryCall('browser_snapshot', { target: tColour });
  check(!r.isError && new RegExp(`^- combobox "Favourite colour"[^\\n]*\\[ref=${tColour}\\]`, 'm').test(text(r)) &&
    !/heading "Form test"|button "Greet"/.test(text(r)), 'browser_snapshot with target outlines that element only', short(text(r)));
  r = await tryCall('browser_take_screenshot', { target: tColour });
  const shot = (r.content || []).find((c) => c.type === 'image');
  const ihdr = shot && Buffer.from(shot.data, 'base64');
  const [w, h] = ihdr ? [ihdr.readUInt32BE(16), ihdr.readUInt32BE(20)] : [0, 0];
  check(!r.isError && w > 100 && w < 600 && h > 10 && h < 150, `browser_take_screenshot with target captures the element (${w}x${h})`, short(text(r)));
  r = await tryCall('browser_drag', { startTarget: tSrc, endTarget: tDst });
  check(!r.isError && /status[^\n]*: dropped/.test(text(r)), 'browser_drag with startTarget and endTarget', short(text(r)));
  r = await tryCall('browser_click', { target: tGreet, ref: tGreet });
  check(!r.isError, 'target and ref naming the same element are accepted', short(text(r)));
  await rejects(call('browser_click', { target: tGreet, ref: tName }),
    'target and ref naming different elements is a JSON-RPC -32602 error that says so', /`target` and `ref` name different elements/);
  await rejects(call('browser_drag', { startTarget: tSrc, startRef: tDst, endTarget: tDst }),
    'startTarget and startRef naming different elements is a JSON-RPC -32602 error', /`startTarget` and `startRef` name different elements/);

  // Cancellation: a long wait is abandoned promptly and frees the browser.
  const ac = new AbortController();
  t0 = Date.now();
  const long = callTool(client, 'browser_wait_for', { time: 60 }, { signal: ac.signal, timeout: 90000 }).then(() => 'answered', () => 'aborted');
  setTimeout(() => ac.abort(), 500);
  const how = await long;
  r = await call('browser_snapshot');
  const took = Date.now() - t0;
  check(how === 'aborted' && !r.isError && took < 10000, `a cancelled browser_wait_for frees the browser (next call done after ${took} ms)`, how);

  // Bad input: JSON-RPC errors, and the server keeps serving.
  await rejects(call('browser_frobnicate', {}), 'an unknown tool is a JSON-RPC -32602 error');
  await rejects(call('browser_navigate', { url: 42 }), 'a wrong argument type is a JSON-RPC -32602 error');
  await rejects(call('browser_click', {}), 'a missing element is a JSON-RPC -32602 error that names `target`', /`target` is required/);
  await rejects(call('browser_press_key', { key: 'NoSuchKey' }), 'an unknown key name is a JSON-RPC -32602 error');
  r = await call('browser_navigate', { url: 'http://127.0.0.1:1/' });
  check(r.isError || /chrome-error|refused/i.test(text(r)), 'a failed navigation is reported', short(text(r)));
  r = await call('browser_navigate', { url: page });
  check(!r.isError && /Form test/.test(text(r)), 'the server keeps serving after bad input', short(text(r)));
} catch (e) {
  notOk('the end-to-end run finished', e.stack || String(e));
}
await client.close();
tap.exit();
