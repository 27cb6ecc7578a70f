// Helpers for tests that drive cloche-vnc's noVNC page in Chromium.

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
