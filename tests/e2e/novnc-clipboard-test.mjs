// The clipboard between noVNC and the X display, in a real headless Chromium
// (playwright-core driving Debian's /usr/bin/chromium): noVNC 1.3's own page
// and clipboard panel against cloche-vnc, the X side read and set with xclip
// on the display.
//
//   node novnc-clipboard-test.mjs --url URL --display :N [--mcp URL] [--off 1]
//
// Checks that text xclip copies on the display (and, with --mcp, text
// mcp-desktop's clipboard_set sets) arrives in noVNC (the RFB `clipboard`
// event and the clipboard panel's text), exactly, non-Latin-1 included; that
// text given to noVNC's clipboard panel (as a person does) and to
// rfb.clipboardPasteFrom() is what `xclip -o -selection clipboard` (and the
// PRIMARY selection) print; that noVNC does not get its own text back; and
// that a text over the 1 MiB limit from noVNC changes nothing.
// With --off 1 (cloche-vnc started with CLOCHE_CLIPBOARD=off) nothing may
// cross either way.  Prints "ok - ..." / "not ok - ..." lines.
import { execFileSync, spawn } from 'node:child_process';
import { launchBrowser } from './lib/browser.mjs';
import { call, connect, textOf } from './lib/mcp-client.mjs';
import { takeControl } from './lib/novnc.mjs';
import { parseArgs, tap, notOk, check } from './lib/tap.mjs';

const args = parseArgs();
const off = args.off === '1';
const env = { ...process.env, DISPLAY: args.display };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// xclip keeps running as the owner of what it copied: leave it in the
// background (it exits when someone else takes the selection).
function xclipSet(text) {
  const p = spawn('xclip', ['-selection', 'clipboard'], { env, stdio: ['pipe', 'ignore', 'ignore'] });
  p.stdin.end(text);
  p.unref();
}
function xclipGet(selection) {
  try {
    return execFileSync('timeout', ['3', 'xclip', '-o', '-selection', selection], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch { return null; }
}
async function mcpSet(text) {
  const client = await connect(args.mcp, 'cloche-clipboard-test');
  try {
    const res = await call(client, 'clipboard_set', { text }, { timeout: 60000 });
    if (res.isError) throw new Error(`clipboard_set: ${textOf(res)}`);
  } finally {
    await client.close().catch(() => {});
  }
}
async function until(fn, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() >= end) return v;
    await sleep(100);
  }
}

const browser = await launchBrowser();
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(args.url, { waitUntil: 'load', timeout: 30000 });
  // noVNC's UI module, imported again, is the page's own instance.
  const connected = await until(() => page.evaluate(async () => {
    const ui = (await import(new URL('app/ui.js', location.href).href)).default;
    if (!ui.rfb || ui.rfb._rfbConnectionState !== 'connected') return false;
    if (!window.clips) {
      window.clips = [];
      ui.rfb.addEventListener('clipboard', (e) => window.clips.push(e.detail.text));
    }
    return true;
  }).catch(() => false), 30000);
  check(connected, 'noVNC connects');
  if (!connected) throw new Error('noVNC did not connect');
  const panel = () => page.$eval('#noVNC_clipboard_text', (t) => t.value);
  const events = () => page.evaluate(() => window.clips.slice());
  const wait = off ? 1500 : 8000;

  // The sandbox to noVNC.
  const t1 = `copied in the sandbox ${process.pid} é € 日本語 ✓`;
  xclipSet(t1);
  const got1 = await until(async () => (await events()).includes(t1) && (await panel()) === t1, wait);
  if (off) check(!got1 && !(await events()).length, 'off: text xclip copies does not reach noVNC');
  else check(got1, `text xclip copies reaches noVNC exactly, UTF-8 included (panel: '${await panel()}')`);

  if (args.mcp) {
    const t2 = `set by mcp-desktop ${process.pid} Ωμέγα`;
    await mcpSet(t2);
    const got2 = await until(async () => (await panel()) === t2, wait);
    if (off) check(!got2, 'off: clipboard_set text does not reach noVNC');
    else check(got2, `mcp-desktop's clipboard_set reaches noVNC (panel: '${await panel()}')`);
  }

  // A paste is input: the page takes control first, as a person does (and
  // mcp-desktop's clipboard_set waits until it hands back).
  await takeControl(page);
  // noVNC to the sandbox: the clipboard panel, as a person uses it (noVNC
  // 1.3 sends Latin-1 there), then the API.
  const before = (await events()).length;
  const t3 = `pasted in noVNC ${process.pid} café naïve ½`;
  await page.evaluate((t) => {
    const ta = document.getElementById('noVNC_clipboard_text');
    ta.value = t;
    ta.dispatchEvent(new Event('change'));
  }, t3);
  const got3 = await until(() => xclipGet('clipboard') === t3, wait);
  if (off) check(!got3, 'off: noVNC\'s clipboard panel does not reach the sandbox');
  else {
    check(got3, `noVNC's clipboard panel text is what xclip -o -selection clipboard prints (got '${xclipGet('clipboard')}')`);
    check(xclipGet('primary') === t3, 'and what PRIMARY holds (middle click)');
  }
  const t4 = `clipboardPasteFrom ${process.pid} ÀÇ`;
  await page.evaluate(async (t) => (await import(new URL('app/ui.js', location.href).href)).default.rfb.clipboardPasteFrom(t), t4);
  const got4 = await until(() => xclipGet('clipboard') === t4, wait);
  if (off) check(!got4, 'off: rfb.clipboardPasteFrom does not reach the sandbox');
  else check(got4, `rfb.clipboardPasteFrom(text) is what xclip -o prints (got '${xclipGet('clipboard')}')`);
  if (!off) {
    await sleep(500);
    check((await events()).length === before, 'noVNC does not get its own text back');
    // Over the limit: 2^19 + 1 Latin-1 characters are 1 MiB + 2 bytes of
    // UTF-8 (noVNC's own limit is larger, libvncserver's is 1 MiB on the wire).
    await page.evaluate(async (n) => (await import(new URL('app/ui.js', location.href).href)).default.rfb.clipboardPasteFrom('é'.repeat(n)), (1 << 19) + 1);
    await sleep(1500);
    check(xclipGet('clipboard') === t4, 'a text over 1 MiB from noVNC leaves the clipboard as it was');
  }
} catch (e) {
  notOk(`noVNC clipboard test aborted: ${e.message.split('\n')[0]}`);
} finally {
  await browser.close();
}
tap.exit();
