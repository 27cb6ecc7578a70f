// The three MCP servers of one sandbox together, through the official SDK
// client, the way an agent uses them: mcp-browser navigates to a local test
// page and types into its text field, and browser_snapshot shows the text;
// mcp-desktop's screenshot is a PNG of the display size in which that page
// is visible; a desktop click into the field and typed text (including
// non-ASCII) change what browser_snapshot reports; mcp-shell sees the same
// desktop's processes.  Prints "ok - ..." / "not ok - ...".
//
//   node mcp-e2e-test.mjs --host 10.0.2.15 [--width 1280 --height 800]
import { parseArgs, tap } from './lib/tap.mjs';
import { call, connect, textOf } from './lib/mcp-client.mjs';
import { decodePng } from './lib/png.mjs';

const args = parseArgs();
const host = args.host || '10.0.2.15';
const W = Number(args.width || 1280);
const H = Number(args.height || 800);
const PAGE = 'file:///opt/cloche/share/test/form.html';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const browser = await connect(`http://${host}:7999/mcp`, 'cloche-e2e-browser');
const desktop = await connect(`http://${host}:8100/mcp`, 'cloche-e2e-desktop');
const shell = await connect(`http://${host}:8889/mcp`, 'cloche-e2e-shell');
tap.ok('the SDK client connects to mcp-browser, mcp-desktop and mcp-shell of one sandbox');

const fieldLine = (snap) => /textbox "Your name"[^\n]*\[ref=(e\d+)\](?::\s*(.*))?/.exec(snap);
const snapshot = async () => textOf(await call(browser, 'browser_snapshot', {}));

try {
  let r = await call(browser, 'browser_navigate', { url: PAGE });
  tap.check(!r.isError, `browser_navigate opens the local test page`, textOf(r).slice(0, 200));
  let m = fieldLine(await snapshot());
  tap.check(m, 'browser_snapshot shows the text field with a ref');
  if (!m) throw new Error('no text field in the snapshot');
  r = await call(browser, 'browser_type', { ref: m[1], element: 'Your name', text: 'typed by mcp-browser' });
  m = fieldLine(await snapshot());
  tap.check(m && m[2] && m[2].includes('typed by mcp-browser'), 'browser_type then browser_snapshot shows the typed text', m && m[0]);

  // Where is the field on the screen?  Viewport position plus the window's
  // position and the browser's toolbar height.
  r = await call(browser, 'browser_evaluate', {
    function: `() => { const r = document.querySelector('#name').getBoundingClientRect();
      return JSON.stringify({ x: Math.round(window.screenX + (window.outerWidth - window.innerWidth) + r.x),
               y: Math.round(window.screenY + (window.outerHeight - window.innerHeight) + r.y),
               w: Math.round(r.width), h: Math.round(r.height) }); }`,
  });
  // The tool answers with the JSON of the returned value: here a string.
  let rect = JSON.parse(textOf(r).trim());
  if (typeof rect === 'string') rect = JSON.parse(rect);
  tap.check(rect.w > 100 && rect.h > 10, `the field's screen box is ${rect.x},${rect.y} ${rect.w}x${rect.h}`);

  // The desktop sees that page: a PNG of the display size, white where the
  // field is, with dark text in it.
  r = await call(desktop, 'computer', { action: 'screenshot' });
  const img = (r.content || []).find((c) => c.type === 'image');
  const shot = img && img.mimeType === 'image/png' ? decodePng(Buffer.from(img.data, 'base64')) : null;
  tap.check(shot && shot.w === W && shot.h === H, `desktop screenshot is a ${W}x${H} PNG`, shot && `${shot.w}x${shot.h}`);
  const inField = (f, pred) => {
    let n = 0; let all = 0;
    for (let y = rect.y + 4; y < rect.y + rect.h - 4; y++) {
      for (let x = rect.x + 4; x < rect.x + rect.w - 4; x++) {
        const i = (y * f.w + x) * 4;
        all++;
        if (pred(f.data[i], f.data[i + 1], f.data[i + 2])) n++;
      }
    }
    return n / all;
  };
  if (shot) {
    const white = inField(shot, (r0, g, b) => r0 > 230 && g > 230 && b > 230);
    const dark = inField(shot, (r0, g, b) => r0 < 100 && g < 100 && b < 100);
    tap.check(white > 0.6 && dark > 0.01, `the page is visible in it: the field is white (${Math.round(white * 100)}%) with text (${Math.round(dark * 100)}%)`);
  }

  // A person-like edit through the desktop: click into the field, select
  // all, type over it.  The browser's view of the page must change.
  const cx = rect.x + Math.round(rect.w / 2);
  const cy = rect.y + Math.round(rect.h / 2);
  r = await call(desktop, 'computer', { action: 'left_click', coordinate: [cx, cy] });
  tap.check(!r.isError, `desktop left_click at ${cx},${cy}`, textOf(r).slice(0, 200));
  await call(desktop, 'computer', { action: 'key', text: 'ctrl+a' });
  r = await call(desktop, 'computer', { action: 'type', text: 'desktop wrote: héllo €' });
  tap.check(!r.isError, 'desktop type', textOf(r).slice(0, 200));
  let seen = '';
  for (let i = 0; i < 20; i++) {
    m = fieldLine(await snapshot());
    seen = m && m[2];
    if (seen && seen.includes('desktop wrote: héllo €')) break;
    await sleep(250);
  }
  tap.check(seen && seen.includes('desktop wrote: héllo €') && !seen.includes('typed by mcp-browser'),
    `desktop click + type change browser_snapshot ("${seen}")`);

  // The shell runs in the same desktop: it sees the browser.
  r = await call(shell, 'run_command', { command: 'ps -eo comm | grep -c chromium' });
  tap.check(!r.isError && Number((r.structuredContent || {}).stdout || textOf(r).match(/\d+/)) > 0,
    'mcp-shell sees the same desktop (chromium processes)', textOf(r).slice(0, 200));
} catch (e) {
  tap.notOk('MCP end to end aborted', e && e.message);
} finally {
  await Promise.allSettled([browser.close(), desktop.close(), shell.close()]);
}
tap.exit();
