// The agent's pointer as a person watching through noVNC sees it, in a real
// headless Chromium (playwright-core driving Debian's /usr/bin/chromium):
// xdotool moves the X pointer (as mcp-desktop or anything in the sandbox
// would) and the noVNC canvas must show the cursor at the new place and no
// longer at the old one; an xdotool click must show a click ring shortly
// after, gone again once it expires; a click made by one noVNC viewer rings
// on another viewer's canvas but not on its own.  Also reports the bytes a
// viewer receives per pointer move and, with --pid, the server's CPU while
// a viewer is connected and nothing moves.  The area used must be plain
// page background.  Prints "ok - ..." / "not ok - ..." lines.
//
//   node novnc-pointer-test.mjs --url URL --from X,Y --to X,Y [--pid PID] [--out DIR]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { launchBrowser } from './lib/browser.mjs';
import { canvas, canvasReady, pagePoint, takeControl, within } from './lib/novnc.mjs';
import { parseArgs, tap, notOk, check } from './lib/tap.mjs';

const args = parseArgs();
const point = (s) => s.split(',').map(Number);
const [fromX, fromY] = point(args.from);
const [toX, toY] = point(args.to);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const xdotool = (...a) => execFileSync('xdotool', a.map(String));

// Runs in the page: for each [x, y] in framebuffer pixels, the RGB there.
function readPixels({ sel, pts }) {
  const c = document.querySelector(sel);
  const ctx = c.getContext('2d');
  return pts.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3)));
}
const pixels = (page, pts) => page.evaluate(readPixels, { sel: canvas, pts });
const far = ([r, g, b], [r2, g2, b2]) => Math.abs(r - r2) + Math.abs(g - g2) + Math.abs(b - b2) > 90;

// The cursor's pixels sit right of and below its hot spot (an arrow, or
// any of X's usual shapes); count those that differ from the background
// taken 40 px up-left.
const cursorBox = (x, y) => {
  const pts = [[x - 40, y - 40]];
  for (let dy = 1; dy < 16; dy += 2) for (let dx = 1; dx < 10; dx += 2) pts.push([x + dx, y + dy]);
  return pts;
};
async function cursorPixels(page, x, y) {
  const [bg, ...px] = await pixels(page, cursorBox(x, y));
  return px.filter((p) => far(p, bg)).length;
}
// Points on the ring (radius 12-16 around the click), away from the arrow.
const ringPts = (x, y) => [[x - 14, y], [x, y - 14], [x - 10, y - 10], [x + 10, y - 10]];
const yellow = ([r, g, b]) => r > 170 && g > 140 && b < 110;
async function ringShown(page, x, y) {
  return (await pixels(page, ringPts(x, y))).filter(yellow).length >= 3;
}

async function openViewer(browser) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const stats = { bytes: 0 };
  page.on('websocket', (ws) => ws.on('framereceived', (f) => { stats.bytes += Buffer.byteLength(f.payload); }));
  await page.goto(args.url, { waitUntil: 'load', timeout: 30000 });
  await canvasReady(page);
  return { page, stats };
}


const ticks = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  .slice(11, 13).reduce((a, b) => a + Number(b), 0);

const browser = await launchBrowser();
try {
  const a = await openViewer(browser);
  const { page } = a;
  check(await page.evaluate(() => localStorage.getItem('show_dot')) === 'true',
    "noVNC's dot cursor is on by default (the pointer itself is in the frames)");

  xdotool('mousemove', fromX, fromY);
  let t = await within(5000, async () => (await cursorPixels(page, fromX, fromY)) >= 6);
  check(t >= 0, `noVNC shows the pointer where xdotool put it (${fromX},${fromY})`);
  if (args.out) await page.screenshot({ path: `${args.out}/pointer-from.png` });

  xdotool('mousemove', toX, toY);
  t = await within(3000, async () => (await cursorPixels(page, toX, toY)) >= 6 &&
    (await cursorPixels(page, fromX, fromY)) === 0);
  const [nNew, nOld] = [await cursorPixels(page, toX, toY), await cursorPixels(page, fromX, fromY)];
  check(t >= 0, `after xdotool warps it to ${toX},${toY}, noVNC shows the pointer there and not at ${fromX},${fromY} (${t} ms; cursor pixels new ${nNew}, old ${nOld})`);
  if (args.out) await page.screenshot({ path: `${args.out}/pointer-to.png` });

  // XTest motion, as mcp-desktop moves the pointer (mousemove_relative is
  // xdotool's XTest path; mousemove above is XWarpPointer).
  await sleep(1500);
  xdotool('mousemove_relative', '--', -60, -50);
  t = await within(3000, async () => (await cursorPixels(page, toX - 60, toY - 50)) >= 6 &&
    (await cursorPixels(page, toX, toY)) === 0);
  check(t >= 0, `after an XTest move by -60,-50 noVNC shows the pointer at ${toX - 60},${toY - 50} (${t} ms)`);
  xdotool('mousemove', toX, toY);

  // Bytes per move: back and forth between two nearby places.
  await sleep(500);
  const moves = 20;
  const b0 = a.stats.bytes;
  for (let i = 0; i < moves; i++) {
    xdotool('mousemove', toX + (i % 2 ? 0 : 40), toY);
    await sleep(150);
  }
  const perMove = Math.round((a.stats.bytes - b0) / moves);
  check(perMove > 0 && perMove < 20000, `a pointer move costs a noVNC viewer ${perMove} bytes (mean of ${moves})`);
  xdotool('mousemove', toX, toY);
  await sleep(300);

  if (args.pid) {
    const hz = 100;
    const t0 = ticks(args.pid);
    await sleep(5000);
    const used = ticks(args.pid) - t0;
    check(used <= 25, `idle with noVNC connected: cloche-vnc used ${used} ticks in 5 s (${(used * 100 / hz / 5).toFixed(2)}% of a core)`);
  }

  check(!(await ringShown(page, toX, toY)), 'no click ring before the click');
  xdotool('click', 1);
  t = await within(1000, () => ringShown(page, toX, toY));
  check(t >= 0, `an xdotool click shows a ring around ${toX},${toY} (${t} ms after the click)`);
  if (args.out) await page.screenshot({ path: `${args.out}/pointer-click.png` });
  t = await within(2000, async () => !(await ringShown(page, toX, toY)));
  check(t >= 0, `the ring goes away by itself (${t} ms later)`);
  check((await cursorPixels(page, toX, toY)) >= 6, '... and the pointer is still shown there');

  // Two viewers: a click through viewer A rings on B's canvas, not on A's.
  const b = await openViewer(browser);
  await sleep(500);
  const [cx, cy] = [fromX, fromY];
  await takeControl(page); // viewer A drives, as a person who took control
  const [px, py] = await pagePoint(page, cx, cy);
  await page.mouse.move(px, py);
  t = await within(3000, async () => (await cursorPixels(b.page, cx, cy)) >= 6);
  check(t >= 0, `viewer A moving its mouse moves the pointer viewer B sees (${t} ms)`);
  await page.mouse.click(px, py);
  const [onB, onA] = await Promise.all([within(1000, () => ringShown(b.page, cx, cy)),
    within(500, () => ringShown(page, cx, cy))]);
  check(onB >= 0, `viewer A's click shows a ring on viewer B (${onB} ms)`);
  check(onA < 0, 'viewer A gets no ring for its own click');
} catch (e) {
  notOk(`noVNC pointer test aborted: ${e.message.split('\n')[0]}`);
} finally {
  await browser.close();
}
tap.exit();
