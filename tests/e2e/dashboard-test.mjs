// The dashboard in headless Chromium (playwright-core on /usr/bin/chromium),
// against a real portal, node agent and proxy:
//   node dashboard-test.mjs --portal URL --key USER_KEY --sandbox ID --token TOKEN --browser-url URL
//        --other SANDBOX_OF_ANOTHER_KEY --admin ADMIN_KEY --shots DIR
// A bad key is refused; the user's sandbox is listed and the other key's is
// not; its thumbnail is a picture of its screen and follows it (the page
// the sandbox shows is made red, then green, through its own mcp-browser);
// keep alive, hibernate, wake, fork, open desktop and release do what they
// say (checked through the API); the detail shows the events; the admin
// sees the node with its warm pool and the queue depth.  Screenshots of a
// laptop and a phone screen go to --shots.
import { launchBrowser } from './lib/browser.mjs';
import { parseArgs, tap } from './lib/tap.mjs';
import { connect, call } from './lib/mcp-client.mjs';

const args = parseArgs();
for (const k of ['portal', 'key', 'sandbox', 'token', 'browser-url', 'other', 'admin', 'shots']) {
  if (!args[k]) { console.error(`missing --${k}`); process.exit(2); }
}
const P = args.portal;
const api = async (key, method, path, body) => {
  const r = await fetch(P + path, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
  return { status: r.status, json: await r.json().catch(() => ({})) };
};
const view = async (id) => (await api(args.key, 'GET', `/sbv1/sandboxes/${id}`)).json;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(s, fn) {
  const end = Date.now() + s * 1000;
  for (;;) { const v = await fn().catch(() => false); if (v || Date.now() > end) return v; await sleep(250); }
}
const A = args.sandbox;
let mcp;

const browser = await launchBrowser();
try {
  const ctx = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Chromium logs every non-2xx fetch as a console error; the page expects
  // these answers (401 the wrong key, 403 a user key's role probe at
  // /sbv1/nodes, 404/409 a thumbnail of a sandbox that is not running).
  page.on('console', (m) => { if (m.type() === 'error' && !/status of (401|403|404|409)\b/.test(m.text())) errors.push(m.text()); });
  // The console names no URL: the answers of 500 and above are kept with
  // theirs (and the error body) for the failure's message.
  const bad = [];
  page.on('response', async (r) => {
    if (r.status() < 500) return;
    let body = '';
    try { body = (await r.text()).slice(0, 200); } catch { /* gone with its page */ }
    bad.push(`${r.request().method()} ${r.url().replace(P, '')} -> ${r.status()} ${body}`);
  });

  // --- login ---------------------------------------------------------------
  const res = await page.goto(`${P}/`);
  tap.check(res.status() === 200 && /script-src 'self'/.test(res.headers()['content-security-policy'] || ''),
    'the dashboard is served at / with a strict Content-Security-Policy');
  await page.fill('#key', 'ck_000000000000_not-a-key');
  await page.click('#login button[type=submit]');
  await page.waitForFunction(() => document.querySelector('#login-error').textContent.length > 0);
  tap.check(/not valid/.test(await page.textContent('#login-error')), 'a wrong key: the page says it is not valid');
  await page.fill('#key', args.key);
  await page.click('#login button[type=submit]');
  await page.waitForSelector(`article[data-id="${A}"]`, { timeout: 15000 });
  tap.ok('a user key logs in and its sandbox is listed');
  const card = page.locator(`article[data-id="${A}"]`);
  tap.check((await card.locator('.state').textContent()) === 'ready', '... with its state');
  tap.check(/desktop/.test(await card.locator('.template').textContent()) && (await card.locator('.node').textContent()).length > 2,
    '... its template and node');
  tap.check(/lease ends in/.test(await card.locator('.expires').textContent()), '... and its lease expiry');
  tap.check(await page.locator(`article[data-id="${args.other}"]`).count() === 0, "another key's sandbox is not listed");
  tap.check(await page.locator('#tab-nodes').isHidden(), 'a user key has no Nodes tab');

  // --- the thumbnail follows the screen ---------------------------------------
  mcp = await connect(args['browser-url'], 'dash', { token: args.token });
  const paint = async (color) => {
    await call(mcp, 'browser_navigate', { url: `data:text/html,<body style="margin:0;background:${color}"></body>` }, { timeout: 60000 });
  };
  // The share of the thumbnail's pixels near rgb (in the page, from the img).
  const share = (rgb) => page.evaluate(([id, want]) => {
    const img = document.querySelector(`article[data-id="${id}"] img.thumb`);
    if (!img || !img.complete || !img.naturalWidth) return -1;
    const c = document.createElement('canvas');
    c.width = img.naturalWidth; c.height = img.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - want[0]) < 24 && Math.abs(d[i + 1] - want[1]) < 24 && Math.abs(d[i + 2] - want[2]) < 24) n++;
    return n / (d.length / 4);
  }, [A, rgb]);
  await paint('rgb(220,20,20)');
  const red = await until(20, async () => (await share([220, 20, 20])) > 0.5);
  const w = await page.evaluate((id) => document.querySelector(`article[data-id="${id}"] img.thumb`).naturalWidth, A);
  tap.check(red && w === 320, `the thumbnail is a 320-pixel picture of the sandbox's screen (the page it shows is red: ${Math.round((await share([220, 20, 20])) * 100)}%)`);
  await page.screenshot({ path: `${args.shots}/dashboard-laptop.png` });
  await paint('rgb(20,170,60)');
  const green = await until(20, async () => (await share([20, 170, 60])) > 0.5);
  tap.check(green, `... and follows it when the screen changes (now green: ${Math.round((await share([20, 170, 60])) * 100)}%)`);
  await mcp.close();
  mcp = null;

  // The agent asks for a person (mcp-desktop's request_human_help): the
  // card says so, with the reason (it comes with the thumbnails).
  if (args['desktop-url']) {
    const reason = `Please sign in to the test site (${process.pid})`;
    const desk = await connect(args['desktop-url'], 'dash-help', { token: args.token });
    const stop = new AbortController();
    const pending = call(desk, 'request_human_help', { reason, timeout_s: 120 },
      { signal: stop.signal, timeout: 150000 }).catch(() => null);
    tap.check(await until(20, async () => (await card.locator('.desk').textContent()) === `The agent asks for help: ${reason}`),
      "a card shows the agent's request for a person, with its reason");
    const v = await view(A);
    tap.check(v.desktop_state && v.desktop_state.control === 'agent' && v.desktop_state.help.length === 1 && v.desktop_state.help[0].reason === reason,
      "... and so does the API's view of the sandbox (desktop_state.help)", JSON.stringify(v.desktop_state));
    await page.screenshot({ path: `${args.shots}/dashboard-laptop.png` });
    stop.abort(); // the agent gives up: the request goes after a while
    await pending;
    await desk.close();
  }

  // --- buttons ------------------------------------------------------------------
  const before = (await view(A)).expires_at;
  await sleep(1100);
  await card.locator('button', { hasText: 'Keep alive' }).click();
  tap.check(await until(10, async () => (await view(A)).expires_at > before), 'Keep alive renews the lease');

  const popup = ctx.waitForEvent('page', { timeout: 15000 });
  await card.locator('button', { hasText: 'Open desktop' }).click();
  const vnc = await popup;
  // The tab opens blank (so no popup blocker stops it) and then goes to
  // the sandbox's noVNC link, which the page fetches first.
  await vnc.waitForURL(new RegExp(`6080-${A}\\.`), { timeout: 15000 }).catch(() => {});
  tap.check(new RegExp(`6080-${A}\\.`).test(vnc.url()), `Open desktop opens the sandbox's noVNC page (${vnc.url().replace(/(token|secret|password)(=|%3D)[^&]+/g, '$1$2...')})`);
  await vnc.close();

  await card.locator('.shot').click();
  await page.waitForSelector('#detail[open]');
  await page.waitForFunction(() => document.querySelectorAll('#d-events li').length > 0);
  tap.check(/ready/.test(await page.textContent('#d-events')), 'the detail shows the sandbox\'s events');
  await until(10, async () => page.evaluate(() => document.querySelector('#d-thumb').naturalWidth > 0));
  await page.screenshot({ path: `${args.shots}/dashboard-detail.png` });
  // Share: two prompts (the minutes, then the link to copy), the link listed, revoked.
  const said = [];
  const onDialog = async (d) => { said.push(d.defaultValue()); await d.accept(said.length === 1 ? '30' : undefined); };
  page.on('dialog', onDialog);
  await page.locator('#d-actions button', { hasText: 'Share' }).click();
  await until(10, async () => said.length >= 2);
  page.off('dialog', onDialog);
  tap.check(new RegExp(`6080-${A}\\..*token=sh1\\.${A}\\.[^.]+\\.v\\.`).test(said[1] || ''), 'Share makes a view-only link and shows it to copy');
  tap.check(await until(10, async () => (await page.locator('#d-shares li').count()) === 1 &&
    /view, until/.test(await page.textContent('#d-shares'))), '... the detail lists it');
  await page.locator('#d-shares button', { hasText: 'Revoke' }).click();
  tap.check(await until(10, async () => (await page.textContent('#d-shares')).trim() === 'none'), '... and Revoke ends it');
  // Recording: start, stop, listed, downloaded as an MP4; the trace downloads.
  await page.locator('#d-rec-actions button', { hasText: 'Record screen' }).click();
  tap.check(await until(20, async () => /recording/.test(await page.textContent('#d-recordings')) &&
    (await page.locator('#d-rec-actions button', { hasText: 'Stop recording' }).count()) === 1),
  'Record screen starts a recording and the detail lists it');
  await new Promise((r) => setTimeout(r, 3000));
  await page.locator('#d-rec-actions button', { hasText: 'Stop recording' }).click();
  tap.check(await until(20, async () => (await page.locator('#d-recordings button', { hasText: 'Download' }).count()) === 1),
    '... Stop recording ends it, with a Download button');
  await page.screenshot({ path: `${args.shots}/dashboard-recordings.png` });
  {
    const got = page.waitForEvent('download', { timeout: 30000 });
    await page.locator('#d-recordings button', { hasText: 'Download' }).click();
    const d = await got.catch(() => null);
    const file = d ? await d.path().catch(() => null) : null;
    const head = file ? (await import('node:fs')).readFileSync(file).subarray(4, 8).toString('latin1') : '';
    tap.check(/\.mp4$/.test(d ? d.suggestedFilename() : '') && head === 'ftyp', `... and Download saves the MP4 (${d ? d.suggestedFilename() : 'no download'})`);
    const tg = page.waitForEvent('download', { timeout: 30000 });
    await page.locator('#d-rec-actions button', { hasText: 'Action trace' }).click();
    const t = await tg.catch(() => null);
    tap.check(/trace\.jsonl$/.test(t ? t.suggestedFilename() : ''), '... and Action trace saves the trace');
  }
  await page.click('#detail .close button');

  await card.locator('button', { hasText: 'Hibernate' }).click();
  tap.check(await until(90, async () => (await view(A)).state === 'hibernated'), 'Hibernate hibernates it');
  tap.check(await until(10, async () => (await card.locator('.state').textContent()) === 'hibernated' &&
    (await card.locator('.placeholder').textContent()) === 'hibernated'), '... the card says so instead of a picture');
  await card.locator('button', { hasText: 'Wake' }).click();
  tap.check(await until(90, async () => (await view(A)).state === 'ready'), 'Wake wakes it');
  tap.check(await until(20, async () => (await share([20, 170, 60])) > 0.5), '... and its thumbnail shows the same screen again');

  page.once('dialog', (d) => d.accept('1'));
  await until(10, async () => card.locator('button', { hasText: 'Fork' }).isVisible());
  await card.locator('button', { hasText: 'Fork' }).click();
  const child = await until(90, async () => {
    const l = (await api(args.key, 'GET', '/sbv1/sandboxes?state=ready')).json.sandboxes || [];
    return l.find((s) => s.forked_from === A);
  });
  tap.check(child, 'Fork makes a child');
  if (child) {
    tap.check(await until(15, async () => (await page.locator(`article[data-id="${child.id}"]`).count()) === 1), '... which the list shows');
    page.once('dialog', (d) => d.accept());
    await page.locator(`article[data-id="${child.id}"] button`, { hasText: 'Release' }).click();
    tap.check(await until(60, async () => ['releasing', 'released'].includes((await view(child.id)).state)), 'Release (after a confirmation) releases it');
    tap.check(await until(20, async () => (await page.locator(`article[data-id="${child.id}"]`).count()) === 0), '... and it leaves the list');
  }

  // --- a phone ------------------------------------------------------------------------
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const pp = await phone.newPage();
  await pp.goto(`${P}/`);
  await pp.fill('#key', args.key);
  await pp.click('#login button[type=submit]');
  await pp.waitForSelector(`article[data-id="${A}"] img.thumb[src]`, { timeout: 20000 }).catch(() => {});
  const fits = await pp.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1);
  tap.check(fits, 'on a phone (390 px) nothing is wider than the screen');
  await pp.screenshot({ path: `${args.shots}/dashboard-phone.png` });
  await phone.close();

  // --- the admin's view ------------------------------------------------------------------
  const adm = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  const ap = await adm.newPage();
  await ap.goto(`${P}/`);
  await ap.fill('#key', args.admin);
  await ap.click('#login button[type=submit]');
  await ap.waitForSelector(`article[data-id="${args.other}"]`, { timeout: 15000 });
  tap.ok('an admin key sees every sandbox');
  await ap.click('#tab-nodes');
  await ap.waitForSelector('#node-rows tr');
  const row = await ap.textContent('#node-rows tr');
  tap.check(/up/.test(row) && /desktop \d+\/\d+/.test(row) && /GiB/.test(row), `the Nodes tab shows the node, its capacity and warm pool (${row.replace(/\s+/g, ' ').slice(0, 140)})`);
  // (filled from /metrics after the rows: a slow portal answers it later)
  const depth = await ap.waitForFunction(() => /queue depth \d+/.test(document.querySelector('#queue')?.textContent || ''),
    null, { timeout: 15000 }).then(() => true, () => false);
  tap.check(depth, 'and the queue depth', await ap.textContent('#queue'));
  await ap.screenshot({ path: `${args.shots}/dashboard-nodes.png` });
  await adm.close();

  await page.click('#logout');
  tap.check(await page.locator('#login').isVisible() && await page.evaluate(() => !sessionStorage.getItem('cloche.key')),
    'Log out forgets the key');
  tap.check(errors.length === 0, 'no script errors on the page', [...errors, ...bad].join(' | '));
} catch (e) {
  tap.notOk('the dashboard test ran to its end', e && e.stack ? e.stack : e);
} finally {
  if (mcp) await mcp.close().catch(() => {});
  await browser.close();
}
tap.exit();
