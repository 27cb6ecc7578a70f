// Helpers for tests that drive noVNC in a real browser (playwright-core).

// noVNC's canvas, whose width and height are the remote framebuffer's.
export const canvas = '#noVNC_container canvas';

// Resolves once noVNC in page is connected: its canvas (the framebuffer's
// size) at least min[0] x min[1]; rejects after ms.
export function canvasReady(page, { ms = 30000, min = [640, 480] } = {}) {
  return page.waitForFunction(([sel, w, h]) => {
    const c = document.querySelector(sel);
    return c && c.width >= w && c.height >= h;
  }, [canvas, min[0], min[1]], { timeout: ms });
}

// Polls fn every 20 ms until it is true or ms have passed; the time it took, or -1.
export async function within(ms, fn) {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (await fn()) return Date.now() - t0;
    await new Promise((r) => setTimeout(r, 20));
  }
  return -1;
}

// Where framebuffer pixel (x, y) is on the page, for page.mouse.
export async function pagePoint(page, x, y) {
  return page.evaluate(({ sel, x, y }) => {
    const c = document.querySelector(sel);
    const r = c.getBoundingClientRect();
    return [r.left + (x + 0.5) * r.width / c.width, r.top + (y + 0.5) * r.height / c.height];
  }, { sel: canvas, x, y });
}

// Takes control of the desktop the way a person does: one click on the
// control bar's "Take control" (docs/vnc.md, Control).  Resolves true once
// the bar says so, false when the desktop has no lease (cloche-vnc
// --control shared: everyone drives at once); throws when neither happens
// within ms.
export async function takeControl(page, ms = 10000) {
  await page.waitForFunction(() => window.clocheControl && window.clocheControl.lease !== undefined,
    null, { timeout: ms });
  if (!(await page.evaluate(() => window.clocheControl.lease))) return false;
  await page.click('#cloche-take', { timeout: ms });
  await page.waitForFunction(() => {
    const s = document.querySelector('#cloche-state');
    return s && s.textContent === 'You have control';
  }, null, { timeout: ms });
  return true;
}
