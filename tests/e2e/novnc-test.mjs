// noVNC end to end, in a real headless Chromium (playwright-core driving
// Debian's /usr/bin/chromium): opens the sandbox's noVNC page, waits until it
// is connected and shows the desktop, checks the frame shows Chromium's
// window, then clicks into the start page's text field and types through
// VNC and checks the screen changed.  Optionally also judges a frame that
// vncsnapshot captured.  Prints "ok - ..." / "not ok - ..." lines.
//
//   node novnc-test.mjs --url URL [--snapshot FILE.jpg] [--out DIR]
import { chromium } from 'playwright-core';
import { readFileSync, writeFileSync } from 'node:fs';
import { frameStats, looksLikeDesktop } from './lib/frame.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
let failed = 0;
const ok = (name) => console.log(`ok - ${name}`);
const notOk = (name) => { console.log(`not ok - ${name}`); failed++; };
const check = (cond, name) => (cond ? ok(name) : notOk(name));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });

  if (args.snapshot) {
    // Decode vncsnapshot's JPEG in the browser and measure it like a canvas.
    const b64 = readFileSync(args.snapshot).toString('base64');
    await page.setContent('<canvas id=c></canvas>');
    const pixels = await page.evaluate(async (src) => {
      const img = new Image();
      img.src = src;
      await img.decode();
      const c = document.getElementById('c');
      c.width = img.width; c.height = img.height;
      const g = c.getContext('2d');
      g.drawImage(img, 0, 0);
      return { w: img.width, h: img.height, data: Array.from(g.getImageData(0, 0, img.width, img.height).data) };
    }, `data:image/jpeg;base64,${b64}`);
    const st = frameStats(pixels);
    check(looksLikeDesktop(st), `vncsnapshot frame shows Chromium's window (${pixels.w}x${pixels.h}, ${st.colours} colours, top colour ${Math.round(st.dominant * 100)}%)`);
  }

  const t0 = Date.now();
  await page.goto(args.url, { waitUntil: 'load', timeout: 30000 });
  try {
    await page.waitForFunction(() => {
      const c = document.querySelector('#noVNC_container canvas') || document.querySelector('canvas');
      return c && c.width >= 640 && c.height >= 480;
    }, null, { timeout: 30000 });
    ok(`noVNC connects (${Date.now() - t0} ms to a ${await page.evaluate(() => { const c = document.querySelector('canvas'); return `${c.width}x${c.height}`; })} canvas)`);
  } catch (e) {
    notOk(`noVNC connects: ${e.message.split('\n')[0]}`);
    throw e;
  }

  const grab = () => page.evaluate(() => {
    const c = document.querySelector('#noVNC_container canvas') || document.querySelector('canvas');
    const g = c.getContext('2d');
    const r = c.getBoundingClientRect();
    return { w: c.width, h: c.height, x: r.x, y: r.y, data: Array.from(g.getImageData(0, 0, c.width, c.height).data) };
  });
  let frame;
  let st;
  const deadline = Date.now() + 20000;
  do {
    frame = await grab();
    st = frameStats(frame);
    if (looksLikeDesktop(st)) break;
    await page.waitForTimeout(250);
  } while (Date.now() < deadline);
  check(looksLikeDesktop(st), `noVNC renders the desktop with Chromium's window (${st.colours} colours, top colour ${Math.round(st.dominant * 100)}%)`);
  if (args.out) await page.screenshot({ path: `${args.out}/novnc-before.png` });

  // The start page's text field is the one large white box below the toolbar.
  const box = st.whiteBox;
  if (!box) {
    notOk('found the start page text field on the VNC screen');
  } else {
    ok(`found the start page text field at ${box.x0},${box.y0}-${box.x1},${box.y1}`);
    const cx = Math.round((box.x0 + box.x1) / 2);
    const cy = Math.round((box.y0 + box.y1) / 2);
    const inkBefore = st.inkIn(box);
    await page.mouse.click(frame.x + cx, frame.y + cy);
    await page.waitForTimeout(300);
    await page.keyboard.type('Cloche types HERE!', { delay: 40 });
    let inkAfter = inkBefore;
    const until = Date.now() + 10000;
    while (Date.now() < until) {
      await page.waitForTimeout(300);
      const f2 = await grab();
      inkAfter = frameStats(f2).inkIn(box);
      if (inkAfter > inkBefore + 200) break;
    }
    check(inkAfter > inkBefore + 200, `a click and keys sent through noVNC change the screen (dark pixels in the field ${inkBefore} -> ${inkAfter})`);
    if (args.out) await page.screenshot({ path: `${args.out}/novnc-after.png` });
  }
  if (args.out) writeFileSync(`${args.out}/novnc-stats.json`, JSON.stringify({ colours: st.colours, dominant: st.dominant }));
} catch (e) {
  notOk(`noVNC test aborted: ${e.message.split('\n')[0]}`);
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
