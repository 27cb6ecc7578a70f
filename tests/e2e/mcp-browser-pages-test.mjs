// mcp-browser on big pages and its other tools, with the official MCP SDK
// client, inside a sandbox (mcp-shell writes the pages and files):
//  - a page of about 1 MB: continuation from the offset each answer names
//    covers the whole outline once, so every heading, link and button is
//    reached by ref; browser_find names a sentence deep in it with a ref and
//    a line, the snapshot at that line shows it, and a button found that way
//    is clicked; depth limits show the top levels with refs to look into;
//  - the elements of iframes are in the snapshot, clicked and typed into: of
//    the same origin, of another origin of the same site (another port) and
//    of another site (localhost inside 127.0.0.1, a process of its own);
//  - sections that content-visibility: auto has not laid out are found;
//  - files written by mcp-shell are uploaded through the file chooser a
//    click opened, and through the input's target;
//  - browser_network_requests lists a page's fetches with their statuses;
//  - browser_pdf_save writes a PDF that mcp-shell reads back;
//  - the coordinate tools click, move and drag where they are told;
//  - bad arguments, unknown refs and offsets past the end give clear errors.
//
//   node mcp-browser-pages-test.mjs --url http://10.0.2.15:7999/mcp --shell http://10.0.2.15:8889/mcp
import { parseArgs, tap, check } from './lib/tap.mjs';
import { connect, call as callTool, textOf } from './lib/mcp-client.mjs';

const args = parseArgs();
const text = (r) => (r ? textOf(r) : '');
const short = (s) => JSON.stringify(String(s).slice(0, 400));
const browser = await connect(args.url, 'cloche-mcp-browser-pages-test');
const shell = await connect(args.shell, 'cloche-mcp-browser-pages-test');
const call = (name, a = {}) => callTool(browser, name, a, { timeout: 120000 });
const sh = (name, a = {}) => callTool(shell, name, a, { timeout: 60000 });
const home = '/home/agent';
const rejects = async (p, name) => {
  try {
    const x = await p;
    check(x.isError, name, `answered ${short(text(x))}`);
  } catch (e) {
    check(e.code === -32602, name, `code ${e.code}: ${e.message}`);
  }
};

// --- a page of about 1 MB -----------------------------------------------------------
const SECTIONS = 1500;
const deep = 'The marmot sleeps under the seventh bridge of Ulm.';
let html = '<!doctype html><title>Big page</title><nav><ul>';
for (let i = 0; i < SECTIONS; i++) html += `<li><a href="#s${i}">Section ${i}</a></li>`;
html += '</ul></nav><main>';
for (let i = 0; i < SECTIONS; i++) {
  html += `<h2 id="s${i}">Section ${i}</h2><p>${'Filler words to make the page long and realistic. '.repeat(9)}`;
  html += i === SECTIONS - 7 ? deep : `Sentence number ${i}.`;
  html += '</p>';
  if (i % 100 === 99) html += `<button onclick="document.title='pressed ${i}'">Deep button ${i}</button>`;
}
html += '</main>';
let r = await sh('write_file', { path: 'big.html', content: html });
check(!r.isError, `mcp-shell writes a page of ${(html.length / 1048576).toFixed(2)} MB`, short(text(r)));

let t0 = Date.now();
r = await call('browser_navigate', { url: `file://${home}/big.html` });
const navMs = Date.now() - t0;
const nav = text(r);
check(!r.isError && nav.length < 15000 && /browser_snapshot \{"offset": \d+\}/.test(nav),
  `browser_navigate answers with a short outline that says how to go on (${nav.length} chars, ${navMs} ms)`, short(nav.slice(-400)));

// continuation: parts from the offset each one names, to the end
const seen = new Set();
const refs = new Set();
let offset = 0, parts = 0, total = -1, ordered = true, chars = 0, slowest = 0;
for (;;) {
  t0 = Date.now();
  r = await call('browser_snapshot', offset ? { offset } : {});
  slowest = Math.max(slowest, Date.now() - t0);
  const s = text(r);
  chars += s.length;
  if (r.isError) { check(false, 'a snapshot part', short(s)); break; }
  parts++;
  for (const m of s.matchAll(/heading "Section (\d+)"/g)) {
    if (seen.has(Number(m[1]))) ordered = false;
    seen.add(Number(m[1]));
  }
  for (const m of s.matchAll(/\[ref=(e\d+)\]/g)) refs.add(m[1]);
  const range = /\[Lines (\d+)-(\d+) of (\d+) shown/.exec(s);
  if (!range) break; // the whole outline fitted
  if (Number(range[1]) !== offset) ordered = false;
  total = Number(range[3]);
  offset = Number(range[2]) + 1;
  if (offset >= total || parts > 200) break;
}
check(parts > 5 && offset === total && ordered,
  `continuation covers the outline once, in order (${parts} parts, ${total} lines, ${chars} chars, slowest ${slowest} ms)`);
check(seen.size === SECTIONS, `... every heading is reached (${seen.size} of ${SECTIONS})`);
check(refs.size >= 2 * SECTIONS + SECTIONS / 100, `... with refs for every heading, link and button (${refs.size})`);

t0 = Date.now();
r = await call('browser_find', { text: 'marmot sleeps' });
const found = text(r);
const hit = /- paragraph \[ref=(e\d+)\] \[line=(\d+)\]: [^\n]*marmot sleeps/.exec(found);
check(!r.isError && hit, `browser_find names the deep sentence's paragraph with a ref and a line (${Date.now() - t0} ms)`, short(found));
if (hit) {
  r = await call('browser_snapshot', { offset: Number(hit[2]) });
  check(text(r).split('```yaml\n')[1]?.split('\n')[0].includes('marmot sleeps'), '... the snapshot at that line starts with it', short(text(r).slice(0, 500)));
  r = await call('browser_snapshot', { target: hit[1] });
  check(!r.isError && text(r).includes(deep), '... and its ref outlines it', short(text(r)));
}
r = await call('browser_find', { regex: 'Deep button 1[0-9]99$' });
const btn = /- button "Deep button (1[0-9]99)" \[ref=(e\d+)\]/.exec(text(r));
check(btn && (text(r).match(/^- button/gm) || []).length === 5, 'browser_find with a regex finds the deep buttons', short(text(r)));
if (btn) {
  r = await call('browser_click', { target: btn[2], element: `Deep button ${btn[1]}` });
  const title = text(await call('browser_evaluate', { function: '() => document.title' }));
  check(!r.isError && title.includes(`pressed ${btn[1]}`), `... and one of them is clicked by its ref (${btn[1]})`, short(title));
}
r = await call('browser_find', { text: 'Sentence number', limit: 3 });
check((text(r).match(/^- paragraph/gm) || []).length === 3 && /\d+ matches, the first ones shown/.test(text(r)),
  'browser_find stops at its limit and says how many matched', short(text(r)));
r = await call('browser_find', { text: 'no such words anywhere' });
check(!r.isError && /No element's text matches/.test(text(r)), 'browser_find says when nothing matches', short(text(r)));
r = await call('browser_snapshot', { depth: 1 });
check(!r.isError && /- navigation \[ref=e\d+\] \(1 inside\)/.test(text(r)) && /- main \[ref=e\d+\] \(\d+ inside\)/.test(text(r)),
  'browser_snapshot with depth 1 shows the landmarks with what they hold', short(text(r)));
await rejects(call('browser_snapshot', { offset: 99999999 }), 'an offset past the end is an error');
await rejects(call('browser_snapshot', { depth: 0 }), 'depth 0 is refused');
await rejects(call('browser_find', {}), 'browser_find without text or regex is refused');
await rejects(call('browser_find', { regex: '(' }), 'a regex that does not compile is refused');
await rejects(call('browser_snapshot', { target: 'e99999999' }), 'an unknown target is an error');

// --- an iframe of the same site ------------------------------------------------------
await sh('write_file', { path: 'inner.html', content: '<!doctype html><title>Inner</title><p>Inside the frame</p><button onclick="this.textContent=\'Pressed inside\'">Press inside</button>' });
await sh('write_file', { path: 'outer.html', content: '<!doctype html><title>Outer</title><p>Outside</p><iframe src="inner.html" width=400 height=150></iframe><button>Outer button</button>' });
r = await call('browser_navigate', { url: `file://${home}/outer.html` });
const inner = /- Iframe \[ref=e\d+\]\n - paragraph: Inside the frame\n - button "Press inside" \[ref=(e\d+)\]/.exec(text(r));
check(!r.isError && inner, 'an iframe\'s elements are in the snapshot, under it, with refs', short(text(r)));
if (inner) {
  r = await call('browser_click', { target: inner[1], element: 'the button inside the frame' });
  check(!r.isError && /button "Pressed inside"/.test(text(r)), '... and a click on one of them acts inside the frame', short(text(r)));
}

// --- file upload ---------------------------------------------------------------------
await sh('write_file', { path: '/tmp/up-one.txt', content: 'first file\n' });
await sh('write_file', { path: '/tmp/up-two.txt', content: 'the second file\n' });
await sh('write_file', {
  path: 'upload.html',
  content: '<!doctype html><title>Upload</title><label>Files <input id=f type=file multiple></label>' +
    '<label>One <input id=g type=file></label><p id=out>none</p><script>' +
    'for (const id of ["f","g"]) document.getElementById(id).onchange = (ev) => {' +
    'document.getElementById("out").textContent = id + ": " + [...ev.target.files].map((x) => x.name + " " + x.size).join(", "); };</script>',
});
r = await call('browser_navigate', { url: `file://${home}/upload.html` });
const many = /button "Files"[^\n]*\[ref=(e\d+)\]/.exec(text(r)) || /"Files"[^\n]*\[ref=(e\d+)\]/.exec(text(r));
const one = /"One"[^\n]*\[ref=(e\d+)\]/.exec(text(r));
check(many && one, 'the upload page shows its file inputs with refs', short(text(r)));
await rejects(call('browser_file_upload', { paths: ['/tmp/up-one.txt'] }), 'an upload with no file chooser open is refused');
if (many && one) {
  r = await call('browser_click', { target: many[1], element: 'Files' });
  check(!r.isError, 'a click on the file input opens its chooser (intercepted, no dialog)', short(text(r)));
  r = await call('browser_file_upload', { paths: ['/tmp/up-one.txt', '/tmp/up-two.txt'] });
  check(!r.isError && /f: up-one\.txt 11, up-two\.txt 16/.test(text(r)), 'browser_file_upload sets the two files mcp-shell wrote', short(text(r)));
  r = await call('browser_file_upload', { target: one[1], paths: ['/tmp/up-two.txt'] });
  check(!r.isError && /g: up-two\.txt 16/.test(text(r)), '... and through an input named by target', short(text(r)));
  await rejects(call('browser_file_upload', { target: one[1], paths: ['/tmp/up-one.txt', '/tmp/up-two.txt'] }),
    'two files for a single-file input are refused');
  await rejects(call('browser_file_upload', { target: one[1], paths: ['/tmp/no-such-file'] }), 'a missing file is refused');
  await rejects(call('browser_file_upload', { target: one[1], paths: ['up-one.txt'] }), 'a relative path is refused');
}

// --- network requests -------------------------------------------------------------------
await sh('write_file', { path: 'www/data.json', content: '{"n": 42}\n', create_dirs: true });
await sh('write_file', {
  path: 'www/net.html',
  content: '<!doctype html><title>Net</title><p id=o>loading</p><script>' +
    'Promise.all([fetch("data.json").then((r) => r.json()), fetch("missing.json").then((r) => r.status)])' +
    '.then(([d, s]) => { document.getElementById("o").textContent = "loaded " + d.n + " " + s; });</script>',
});
// python's http.server on port, started through mcp-shell, once it serves file
const serve = async (port, file) => {
  await sh('start_process', { command: `cd ~/www && exec python3 -m http.server ${port} --bind 127.0.0.1` });
  for (let i = 0; i < 50; i++) {
    const c = await sh('run_command', { command: `curl -s -o /dev/null -w "%{http_code}" http://127.0.0.1:${port}/${file}` });
    if (text(c).includes('200')) return;
    await new Promise((ok) => setTimeout(ok, 200));
  }
};
await serve(8123, 'net.html');
r = await call('browser_navigate', { url: 'http://127.0.0.1:8123/net.html' });
await call('browser_wait_for', { text: 'loaded 42', time: 10 });
r = await call('browser_network_requests');
const net = text(r);
check(/\[GET\] http:\/\/127\.0\.0\.1:8123\/net\.html => \[200\] \(Document\)/.test(net) &&
  /\[GET\] http:\/\/127\.0\.0\.1:8123\/data\.json => \[200\]/.test(net) &&
  /\[GET\] http:\/\/127\.0\.0\.1:8123\/missing\.json => \[404\]/.test(net),
  'browser_network_requests lists the page, its fetch and the missing file with their statuses', short(net));

// --- iframes of another origin: the same site (another port: drawn by the page's own
// renderer) and another site (localhost inside 127.0.0.1: a process of its own) --------
await sh('write_file', { path: 'www/xo-inner.html', content: '<!doctype html><title>Other</title><p>Across origins</p><input aria-label="Far field"><button onclick="this.textContent=\'Pressed across\'">Press across</button>' });
await sh('write_file', {
  path: 'www/xo.html',
  content: '<!doctype html><title>Host</title><p>Host page</p><div style="height:700px">spacer</div>' +
    '<iframe title="other port" src="http://127.0.0.1:8124/xo-inner.html" width=400 height=120 style="border:6px solid #888"></iframe>' +
    '<iframe title="other site" src="http://localhost:8123/xo-inner.html" width=400 height=120 style="border:6px solid #888;padding:9px"></iframe>',
});
await serve(8124, 'xo-inner.html');
r = await call('browser_navigate', { url: 'http://127.0.0.1:8123/xo.html' });
r = await call('browser_snapshot');
for (const [kind, title] of [['another origin of the same site', 'other port'], ['another site, in its own process', 'other site']]) {
  const re = new RegExp(`- Iframe "${title}" \\[ref=e\\d+\\]\\n - paragraph: Across origins\\n - textbox "Far field" \\[ref=(e\\d+)\\]\\n - button "Press across" \\[ref=(e\\d+)\\]`);
  const m = re.exec(text(r));
  check(!r.isError && m, `a frame of ${kind} is in the snapshot with refs`, short(text(r)));
  if (!m) continue;
  const c = await call('browser_click', { target: m[2], element: `the button in the frame of ${kind}` });
  const pressed = new RegExp(`Iframe "${title}"[^\\n]*\\n[^\\n]*\\n[^\\n]*\\n - button "Pressed across"`);
  check(!c.isError && pressed.test(text(c)), `... a click acts inside it (the frame below the fold)`, short(text(c)));
  await call('browser_type', { target: m[1], element: `the field in the frame of ${kind}`, text: `typed in ${title}` });
  const v = await call('browser_evaluate', { target: m[1], function: '(el) => el.value + " @ " + location.host' });
  check(text(v).includes(`typed in ${title} @ ${title === 'other site' ? 'localhost:8123' : '127.0.0.1:8124'}`),
    '... and text typed into its field is there, in that frame', short(text(v)));
}
r = await call('browser_snapshot');

// --- content-visibility: auto ------------------------------------------------------------
await sh('write_file', {
  path: 'www/cv.html',
  content: '<!doctype html><title>Lazy</title><style>section{content-visibility:auto}</style>' +
    Array.from({ length: 60 }, (_, i) => `<section><h2>Part ${i}</h2><p>${i === 57 ? 'The otter keeps its stone in a pocket.' : 'Plain part ' + i + '.'}</p></section>`).join(''),
});
r = await call('browser_navigate', { url: 'http://127.0.0.1:8123/cv.html' });
r = await call('browser_find', { text: 'otter keeps its stone' });
check(!r.isError && /paragraph.*otter keeps its stone/.test(text(r)), 'a sentence in a section content-visibility: auto skips is found', short(text(r)));

// --- PDF ----------------------------------------------------------------------------------
r = await call('browser_pdf_save', { filename: 'net.pdf' });
const pdfSaid = text(r);
r = await sh('run_command', { command: 'head -c 5 ~/net.pdf; echo; stat -c %s ~/net.pdf' });
check(/Saved the page as PDF: \/home\/agent\/net\.pdf/.test(pdfSaid) && /^%PDF-/.test(text(r)),
  'browser_pdf_save writes a PDF that mcp-shell reads', short(pdfSaid + ' | ' + text(r)));
await rejects(call('browser_pdf_save', { filename: '../../etc/x.pdf' }), 'a PDF name with .. is refused');

// --- coordinates ---------------------------------------------------------------------------
await sh('write_file', {
  path: 'canvas.html',
  content: '<!doctype html><title>-</title><style>body{margin:0}canvas{display:block}</style><canvas id=c width=400 height=300></canvas><script>' +
    'const c = document.getElementById("c"); let log = [];' +
    'c.onclick = (e) => { log.push("click " + e.clientX + "," + e.clientY); document.title = log.join(";"); };' +
    'c.onmousedown = (e) => { log.push("down " + e.clientX + "," + e.clientY); };' +
    'c.onmouseup = (e) => { log.push("up " + e.clientX + "," + e.clientY); document.title = log.join(";"); };' +
    'c.onmousemove = (e) => { window.lastMove = e.clientX + "," + e.clientY; };</script>',
});
await call('browser_navigate', { url: `file://${home}/canvas.html` });
const title = async () => text(await call('browser_evaluate', { function: '() => document.title' }));
r = await call('browser_mouse_click_xy', { element: 'the canvas', x: 50, y: 60 });
check(!r.isError && (await title()).includes('click 50,60'), 'browser_mouse_click_xy clicks at (50, 60)', short(await title()));
r = await call('browser_mouse_move_xy', { element: 'the canvas', x: 120, y: 130 });
const moved = text(await call('browser_evaluate', { function: '() => window.lastMove' }));
check(!r.isError && moved.includes('120,130'), 'browser_mouse_move_xy moves the pointer there', short(moved));
r = await call('browser_mouse_drag_xy', { element: 'the canvas', startX: 10, startY: 20, endX: 200, endY: 150 });
check(!r.isError && /down 10,20.*up 200,150/.test(await title()), 'browser_mouse_drag_xy presses at the start and lets go at the end', short(await title()));
await rejects(call('browser_mouse_click_xy', { x: -5, y: 10 }), 'a negative coordinate is refused');
await rejects(call('browser_mouse_click_xy', { x: 5 }), 'a missing coordinate is refused');

await sh('run_command', { command: 'pkill -f "http.server 812[34]"; rm -rf ~/www ~/big.html ~/upload.html ~/canvas.html ~/inner.html ~/outer.html ~/net.pdf /tmp/up-*.txt' });
await browser.close();
await shell.close();
tap.done();
