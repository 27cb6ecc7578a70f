// noVNC through a hibernation, in a real headless Chromium: the page is
// connected to the desktop, the sandbox hibernates (its connection is cut),
// noVNC reconnects by itself, the proxy holds that reconnect and has the
// sandbox woken, and the page shows the desktop again.
//   node novnc-wake-test.mjs --url NOVNC_URL --id ID --cli PATH_TO_cloche
import { execFileSync } from 'node:child_process';
import { launchBrowser } from './lib/browser.mjs';
import { parseArgs, tap } from './lib/tap.mjs';

const args = parseArgs();
const browser = await launchBrowser();
const cli = (...a) => execFileSync(args.cli, a, { timeout: 180000 }).toString();
const stateOf = () => JSON.parse(cli('get', args.id, '--json')).state;
const waitState = async (want, ms) => {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 250)))
    if (stateOf() === want) return true;
  return false;
};
// Connected: noVNC's own class on its document, and a desktop-sized canvas.
const connected = (page, ms) => page.waitForFunction(() => {
  const c = document.querySelector('#noVNC_container canvas');
  return !!document.querySelector('.noVNC_connected') && c && c.width >= 640;
}, null, { timeout: ms }).then(() => true, () => false);
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(args.url, { waitUntil: 'load', timeout: 30000 });
  tap.check(await connected(page, 30000), 'noVNC is connected to the desktop');
  const t0 = Date.now();
  // (noVNC's reconnect is held meanwhile and wakes it right after: the
  // answer of hibernate is what says it hibernated)
  const said = cli('hibernate', args.id);
  tap.check(/hibernated/.test(said), `the sandbox hibernates under the open page (${Date.now() - t0} ms)`);
  await page.waitForFunction(() => !document.querySelector('.noVNC_connected'), null, { timeout: 10000 })
    .then(() => true, () => false);
  const t1 = Date.now();
  tap.check(await connected(page, 90000), `noVNC reconnects by itself to the woken desktop (${Date.now() - t1} ms)`);
  tap.check(await waitState('ready', 30000), 'its reconnect woke the sandbox (ready)');
} catch (e) {
  tap.notOk('noVNC through a hibernation', e.message);
} finally {
  await browser.close();
}
tap.done();
