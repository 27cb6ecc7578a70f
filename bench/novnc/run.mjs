// The viewer side of bench/novnc.sh: opens cloche-vnc's noVNC page (the one
// the web port serves, through its one-link redirect) in headless Chromium,
// and over fixed windows, while the
// desktop's page scrolls and while it is idle, counts what noVNC received:
// FramebufferUpdate messages, updates that reached the visible canvas (and
// the gaps between them), WebSocket payload bytes; beside them the bytes the
// server's TCP sockets sent (ss), the frames the desktop's Chromium drew (its
// window title), and the CPU time of cloche-vnc, Xvfb, the desktop's Chromium
// and the viewer's Chromium from /proc.  Writes one JSON object to --out.
//
// The viewer is driven over DevTools on a pipe with a handful of commands
// rather than through playwright: playwright enables the Network domain,
// and Chromium would then copy every WebSocket frame, base64-encoded, to the
// driver, tens of MB a second here, which is CPU no real viewer spends.
//
//   node run.mjs --url URL --http-port P --display :N --wid WINDOW
//     --vnc-pid N --xvfb-pid N --desktop-sid N --phases scroll:20,idle:20
//     --profile DIR [--settle-s 2] --out FILE
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { CHROMIUM, CHROMIUM_FLAGS } from '../../tests/e2e/lib/browser.mjs';
import { parseArgs } from '../../tests/e2e/lib/tap.mjs';

const args = parseArgs();
for (const a of ['url', 'http-port', 'display', 'wid', 'vnc-pid', 'xvfb-pid', 'desktop-sid', 'phases', 'profile', 'out']) {
  if (!args[a]) { console.error(`novnc/run.mjs: --${a} is required`); process.exit(2); }
}
const HZ = Number(execFileSync('getconf', ['CLK_TCK']).toString());
const settleS = Number(args['settle-s'] || 2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (x, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

// --- the host side --------------------------------------------------------------
// Every process: pid -> {ppid, sid, ticks}.  stat's second field may hold
// spaces and parentheses, so fields are counted from the last ')'.
function processes() {
  const all = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let s;
    try { s = readFileSync(`/proc/${d}/stat`, 'utf8'); } catch { continue; }
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    all.set(Number(d), { ppid: Number(f[1]), sid: Number(f[3]), ticks: Number(f[11]) + Number(f[12]) });
  }
  return all;
}
function descendants(all, root) {
  const out = new Set();
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, p] of all) {
      if (!out.has(pid) && (p.ppid === root || out.has(p.ppid))) { out.add(pid); grew = true; }
    }
  }
  return out;
}
// The groups whose CPU is reported: pid -> ticks for each.
function cpuGroups() {
  const all = processes();
  const pick = (pred) => new Map([...all].filter(([pid, p]) => pred(pid, p)).map(([pid, p]) => [pid, p.ticks]));
  const viewer = descendants(all, process.pid);
  return {
    cloche_vnc: pick((pid) => pid === Number(args['vnc-pid'])),
    xvfb: pick((pid) => pid === Number(args['xvfb-pid'])),
    desktop_chromium: pick((_, p) => p.sid === Number(args['desktop-sid'])),
    viewer_chromium: pick((pid) => viewer.has(pid)),
    viewer_driver_node: pick((pid) => pid === process.pid),
  };
}
// CPU seconds between two cpuGroups(): a process born in between counts
// whole; one that ended in between loses its last ticks (rare: helpers).
function cpuSeconds(a, b) {
  const out = {};
  for (const g of Object.keys(b)) {
    let t = 0;
    for (const [pid, ticks] of b[g]) t += ticks - (a[g].get(pid) ?? 0);
    out[g] = t / HZ;
  }
  return out;
}
function machineBusy() { // busy and total jiffies of the whole machine
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((x, y) => x + y, 0);
  return { busy: total - f[3] - f[4], total };
}
// Bytes sent so far by each socket of the web port, by its peer address
// (the WebSocket, and any keep-alive connection that fetched noVNC's files
// and may close in between: each socket counts against itself only).
function serverTcpBytes() {
  const out = execFileSync('ss', ['-tinH', 'state', 'established', `( sport = :${args['http-port']} )`]).toString();
  const bytes = new Map();
  let peer = null;
  for (const line of out.split('\n')) {
    if (/^\S/.test(line)) peer = line.trim().split(/\s+/).at(-1);
    else if (peer && /bytes_sent:\d/.test(line)) bytes.set(peer, Number(line.match(/bytes_sent:(\d+)/)[1]));
  }
  return bytes;
}
function tcpSent(a, b) {
  let n = 0;
  for (const [peer, sent] of b) n += sent - (a.get(peer) ?? 0);
  return n;
}
const xenv = { ...process.env, DISPLAY: args.display };
function desktopTitle() {
  return execFileSync('xdotool', ['getwindowname', args.wid], { env: xenv }).toString().trim();
}
function desktopFrames() { return Number((desktopTitle().match(/^novnc-bench \w+ (\d+)/) || [])[1] ?? NaN); }
async function desktopKey(key, state) {
  execFileSync('xdotool', ['key', key], { env: xenv });
  const until = Date.now() + 10000;
  while (!desktopTitle().startsWith(`novnc-bench ${state}`)) {
    if (Date.now() > until) throw new Error(`the desktop page did not turn ${state} after key ${key} (title: ${desktopTitle()})`);
    await sleep(100);
  }
}

// --- the viewer -------------------------------------------------------------------
// Installed before noVNC's modules run: the WebSocket gets a counting
// listener, and noVNC's own Display.flip and RFB._framebufferUpdate (the
// same module instances vnc.html's UI imports) are wrapped to count.
function hooks() {
  const B = (window.__bench = { bytes: 0, msgs: 0, fbu: 0, empty: 0, rects: {}, flips: 0, drawn: 0, times: [] });
  // A plain native WebSocket is handed back: noVNC checks the methods on
  // the object's own prototype, which a subclass would not have.
  const Native = window.WebSocket;
  const Counted = function (...a) {
    const ws = new Native(...a);
    ws.addEventListener('message', (e) => {
      B.msgs++;
      B.bytes += e.data.byteLength ?? e.data.size ?? e.data.length;
    });
    return ws;
  };
  Counted.prototype = Native.prototype;
  for (const k of ['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED']) Counted[k] = Native[k];
  window.WebSocket = Counted;
  import('/core/display.js').then(({ default: Display }) => {
    const flip = Display.prototype.flip;
    Display.prototype.flip = function (fromQueue) {
      const queued = this._renderQ.length !== 0 && !fromQueue;
      const d = this._damageBounds;
      const dirty = d.right > d.left && d.bottom > d.top;
      const r = flip.call(this, fromQueue);
      if (!queued) {
        B.flips++;
        if (dirty) { B.drawn++; B.times.push(performance.now()); }
      }
      return r;
    };
  });
  import('/core/rfb.js').then(({ default: RFB }) => {
    // An update whose header said 0 rectangles is counted as empty; the
    // rectangles of the others by encoding (7 Tight, -239 cursor, ...).
    const fbu = RFB.prototype._framebufferUpdate;
    let rects = 0;
    RFB.prototype._framebufferUpdate = function () {
      const done = fbu.call(this);
      if (done) {
        B.fbu++;
        if (rects === 0) B.empty++;
        rects = 0;
      }
      return done;
    };
    const rect = RFB.prototype._handleRect;
    RFB.prototype._handleRect = function () {
      const enc = this._FBU.encoding;
      const done = rect.call(this);
      if (done) { rects++; B.rects[enc] = (B.rects[enc] || 0) + 1; }
      return done;
    };
  });
}
// Headless Chromium with DevTools on fds 3 (commands) and 4 (answers),
// NUL-terminated JSON; events are read and dropped.
class Viewer {
  constructor() {
    this.proc = spawn(CHROMIUM, [...CHROMIUM_FLAGS, '--headless', '--remote-debugging-pipe',
      '--disable-dev-shm-usage', '--no-default-browser-check',
      `--user-data-dir=${args.profile}`, '--window-size=1280,800', 'about:blank'],
    { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
    this.next = 1;
    this.waiting = new Map();
    let buf = '';
    this.proc.stdio[4].setEncoding('utf8');
    this.proc.stdio[4].on('data', (d) => {
      buf += d;
      for (let i; (i = buf.indexOf('\0')) >= 0; buf = buf.slice(i + 1)) {
        const m = JSON.parse(buf.slice(0, i));
        const w = this.waiting.get(m.id);
        if (!w) continue;
        this.waiting.delete(m.id);
        if (m.error) w.fail(new Error(`${w.method}: ${m.error.message}`)); else w.ok(m.result);
      }
    });
    this.proc.on('exit', (code) => {
      for (const w of this.waiting.values()) w.fail(new Error(`the viewer's Chromium exited (${code}) during ${w.method}`));
      this.waiting.clear();
    });
  }
  send(method, params = {}, sessionId = this.session) {
    const id = this.next++;
    return new Promise((ok, fail) => {
      const timer = setTimeout(() => { this.waiting.delete(id); fail(new Error(`${method}: no answer in 30 s`)); }, 30000);
      this.waiting.set(id, { method, ok: (r) => { clearTimeout(timer); ok(r); }, fail: (e) => { clearTimeout(timer); fail(e); } });
      this.proc.stdio[3].write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + '\0');
    });
  }
  async open(url, initScript) {
    let page;
    for (let i = 0; i < 100 && !page; i++) {
      page = (await this.send('Target.getTargets', {}, null)).targetInfos.find((t) => t.type === 'page');
      if (!page) await sleep(100);
    }
    if (!page) throw new Error('the viewer\'s Chromium opened no page');
    this.session = (await this.send('Target.attachToTarget', { targetId: page.targetId, flatten: true }, null)).sessionId;
    await this.send('Page.enable');
    // Headless keeps some of the window for browser UI it does not draw:
    // the page gets exactly 1280x800.
    await this.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });
    await this.send('Page.addScriptToEvaluateOnNewDocument', { source: `(${initScript})()` });
    await this.send('Page.navigate', { url });
  }
  async eval(expression) {
    const r = await this.send('Runtime.evaluate', { expression, returnByValue: true });
    if (r.exceptionDetails) throw new Error(`in the viewer: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value;
  }
  async close() {
    await this.send('Browser.close', {}, null).catch(() => {});
    const exited = new Promise((r) => this.proc.once('exit', r));
    if (this.proc.exitCode === null && !(await Promise.race([exited.then(() => true), sleep(5000)]))) this.proc.kill('SIGKILL');
  }
}
const counters = (viewer) => viewer.eval(`(() => {
  const B = window.__bench;
  const s = { ...B, times: B.times };
  B.times = [];
  return s;
})()`);
const pctl = (xs, q) => {
  if (!xs.length) return null;
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

const viewer = new Viewer();
const result = { hz: HZ, phases: [] };
let failed = null;
try {
  // The viewer's window is the desktop's size, so noVNC's scaling is 1:1.
  const t0 = Date.now();
  await viewer.open(args.url, hooks.toString());
  const shown = `window.__bench && window.__bench.drawn > 0 &&
    document.querySelector('#noVNC_container canvas')?.width === 1280`;
  while (!(await viewer.eval(shown))) {
    if (Date.now() - t0 > 30000) {
      const seen = await viewer.eval(`JSON.stringify({ url: location.href.replace(/secret=[^&]*/g, 'secret=...'),
        bench: window.__bench, status: document.querySelector('#noVNC_status')?.textContent })`);
      throw new Error(`noVNC showed no frame in 30 s (${seen})`);
    }
    await sleep(100);
  }
  result.connect_ms = Date.now() - t0;
  result.canvas = await viewer.eval(`(() => {
    const c = document.querySelector('#noVNC_container canvas');
    const r = c.getBoundingClientRect();
    return { width: c.width, height: c.height, css_width: r.width, css_height: r.height, inner: [innerWidth, innerHeight] };
  })()`);
  result.novnc_url = (await viewer.eval('location.href')).replace(/(secret|password)=[^&]*/g, '$1=...')
    .replace(/secret%3D[^&]*/, 'secret%3D...');
  await sleep(settleS * 1000);

  for (const spec of args.phases.split(',')) {
    const [name, secs] = spec.split(':');
    if (name === 'scroll') await desktopKey('s', 'scrolling');
    else await desktopKey('x', 'idle');
    // Scrolling reaches its pace at once; an idle screen first sends the
    // last frames of the scroll.
    await sleep((name === 'scroll' ? 1 : settleS) * 1000);
    const a = { v: await counters(viewer), cpu: cpuGroups(), m: machineBusy(), tcp: serverTcpBytes(),
      frames: desktopFrames(), t: performance.now(), load: readFileSync('/proc/loadavg', 'utf8').split(' ')[0] };
    await sleep(Number(secs) * 1000);
    const b = { v: await counters(viewer), cpu: cpuGroups(), m: machineBusy(), tcp: serverTcpBytes(),
      frames: desktopFrames(), t: performance.now() };
    const s = (b.t - a.t) / 1000;
    const cpu = cpuSeconds(a.cpu, b.cpu);
    const gaps = b.v.times.slice(1).map((t, i) => t - b.v.times[i]);
    const bytes = b.v.bytes - a.v.bytes;
    result.phases.push({
      name,
      seconds: round(s, 2),
      updates: b.v.fbu - a.v.fbu,
      updates_per_s: round((b.v.fbu - a.v.fbu) / s),
      empty_updates: b.v.empty - a.v.empty,
      rects_by_encoding: Object.fromEntries(Object.entries(b.v.rects).map(([k, n]) => [k, n - (a.v.rects[k] || 0)])
        .filter(([, n]) => n > 0)),
      drawn: b.v.drawn - a.v.drawn,
      fps: round((b.v.drawn - a.v.drawn) / s),
      gap_ms: { p50: round(pctl(gaps, 0.5) ?? NaN), p95: round(pctl(gaps, 0.95) ?? NaN), max: round(gaps.length ? Math.max(...gaps) : NaN) },
      ws_bytes: bytes,
      ws_messages: b.v.msgs - a.v.msgs,
      mbit_s: round(bytes * 8 / s / 1e6, 3),
      kbit_s: round(bytes * 8 / s / 1e3),
      server_tcp_bytes: tcpSent(a.tcp, b.tcp),
      desktop_frames: b.frames - a.frames,
      desktop_fps: round((b.frames - a.frames) / s),
      cpu_s: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, round(v, 2)])),
      cpu_pct: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, round(v / s * 100)])),
      machine_busy_cores: round((b.m.busy - a.m.busy) / (b.m.total - a.m.total) * cpus().length, 2),
      load_average: Number(a.load),
    });
    const p = result.phases.at(-1);
    console.error(`${name} ${p.seconds} s: ${p.fps} fps drawn (${p.updates_per_s} updates/s), ${p.mbit_s} Mbit/s, ` +
      `cloche-vnc ${p.cpu_pct.cloche_vnc} %, Xvfb ${p.cpu_pct.xvfb} %, desktop Chromium ${p.cpu_pct.desktop_chromium} %, ` +
      `viewer ${p.cpu_pct.viewer_chromium} % of a core; desktop drew ${p.desktop_fps} fps; machine ${p.machine_busy_cores} cores busy`);
  }
  await desktopKey('x', 'idle');
} catch (e) {
  failed = e.message.split('\n')[0];
} finally {
  await viewer.close();
}
if (failed) {
  console.error(`novnc/run.mjs: ${failed}`);
  process.exit(1);
}
writeFileSync(args.out, JSON.stringify(result));
