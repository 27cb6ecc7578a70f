// noVNC end to end, in a real headless Chromium (playwright-core driving
// Debian's /usr/bin/chromium): opens the sandbox's noVNC page, waits until it
// is connected and shows the desktop, checks the frame shows Chromium's
// window, then clicks into the start page's text field and types through
// VNC and checks the screen changed.  Optionally also judges a frame that
// vncsnapshot captured.  Prints "ok - ..." / "not ok - ..." lines.
//
// With --input none (a view-only share link) the click and the keys must
// change nothing: the field stays as it was.
//
//   node novnc-test.mjs --url URL [--snapshot FILE.jpg] [--out DIR] [--input none]
import { readFileSync } from 'node:fs';
import { launchBrowser } from './lib/browser.mjs';
import { looksLikeDesktop, statsInPage } from './lib/frame.mjs';
import { canvas, canvasReady, takeControl } from './lib/novnc.mjs';
import { parseArgs, tap, ok, notOk, check } from './lib/tap.mjs';

const args = parseArgs();
const pct = (x) => Math.round(x * 100);

const browser = await launchBrowser();
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });

  if (args.snapshot) {
    // Decode vncsnapshot's JPEG in the browser and measure it like a canvas.
    await page.setContent('<body></body>');
    const url = `data:image/jpeg;base64,${readFileSync(args.snapshot).toString('base64')}`;
    const st = await statsInPage(page, { imageUrl: url });
    check(looksLikeDesktop(st), `vncsnapshot frame shows Chromium's window (${st.w}x${st.h}, ${st.colours} colours, top colour ${pct(st.dominant)}%)`);
  }

  const t0 = Date.now();
  await page.goto(args.url, { waitUntil: 'load', timeout: 30000 });
  const connected = await canvasReady(page).then(() => true, () => false);
  check(connected, `noVNC connects (${Date.now() - t0} ms to a full-size canvas)`);
  if (!connected) throw new Error('noVNC did not connect');

  let st;
  const deadline = Date.now() + 20000;
  do {
    st = await statsInPage(page, { selector: canvas });
    if (looksLikeDesktop(st) && st.field) break;
    await page.waitForTimeout(250);
  } while (Date.now() < deadline);
  check(looksLikeDesktop(st), `noVNC renders the desktop with Chromium's window (${st.w}x${st.h}, ${st.colours} colours, top colour ${pct(st.dominant)}%)`);
  if (args.out) await page.screenshot({ path: `${args.out}/novnc-before.png` });

  // The start page's text field is the one wide white box below the toolbar.
  const box = st.field;
  check(box, `found the start page text field${box ? ` at ${box.x0},${box.y0}-${box.x1},${box.y1}` : ''}`);
  const viewOnly = args.input === 'none';
  if (viewOnly) {
    await page.waitForSelector('#cloche-bar:not([hidden])', { timeout: 10000 });
    check(await page.locator('#cloche-take').isHidden() &&
      /view only/.test(await page.locator('#cloche-state').textContent()),
      'view only: the control bar says so and offers no Take control');
    const status = await page.evaluate(() => fetch(`cloche/control?action=take&viewer=${window.clocheControl.key}`,
      { method: 'POST' }).then((r) => r.status));
    check(status === 403, `view only: taking control anyway is refused (${status})`);
  } else {
    // People watch until they take control (docs/vnc.md, Control).
    if (await takeControl(page)) ok('one click on Take control gives the page the desktop');
  }
  if (box) {
    const inkBefore = (await statsInPage(page, { selector: canvas, box })).ink;
    await page.mouse.click(st.left + st.scaleX * (box.x0 + box.x1) / 2, st.top + st.scaleY * (box.y0 + box.y1) / 2);
    await page.waitForTimeout(300);
    await page.keyboard.type('Cloche types HERE!', { delay: 40 });
    let inkAfter = inkBefore;
    const until = Date.now() + (viewOnly ? 4000 : 10000);
    while (Date.now() < until) {
      await page.waitForTimeout(300);
      inkAfter = (await statsInPage(page, { selector: canvas, box })).ink;
      if (!viewOnly && inkAfter > inkBefore + 200) break;
    }
    if (viewOnly)
      check(inkAfter <= inkBefore + 50, `view only: a click and keys sent through noVNC change nothing (dark pixels in the field ${inkBefore} -> ${inkAfter} after 4 s)`);
    else
      check(inkAfter > inkBefore + 200, `a click and keys sent through noVNC change the screen (dark pixels in the field ${inkBefore} -> ${inkAfter})`);
    if (args.out) await page.screenshot({ path: `${args.out}/novnc-after.png` });
  }
} catch (e) {
  notOk(`noVNC test aborted: ${e.message.split('\n')[0]}`);
} finally {
  await browser.close();
}
tap.exit();
