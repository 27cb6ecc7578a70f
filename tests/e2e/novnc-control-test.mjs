// The control lease as a person and an agent meet it: noVNC pages in a real
// headless Chromium (playwright-core driving Debian's /usr/bin/chromium)
// and mcp-desktop through the official MCP SDK client, on one display.
//   - a page's viewer watches: its mouse does not move the X pointer;
//   - "Take control" gives it the desktop: its mouse moves the pointer, and
//     an mcp-desktop click answers the documented tool error and moves
//     nothing, while a screenshot still works;
//   - request_human_help shows its reason in every page and blocks until the
//     person hands back, then answers with the person's note;
//   - after the hand-back the agent's click works again;
//   - a person whose page closes loses control after the grace period.
// The pointer is read with xdotool on --display, or else (a sandbox reached
// through the proxy) with mcp-desktop's cursor_position.  The agent clicks
// at --at X,Y and a little right of and below it: a place where a click
// does no harm.  Prints "ok - ..." / "not ok - ..." lines.
//
//   node novnc-control-test.mjs --url URL --mcp URL [--display :N] [--at X,Y] [--grace 1]
import { execFileSync } from 'node:child_process';
import { launchBrowser } from './lib/browser.mjs';
import { connect, call, textOf } from './lib/mcp-client.mjs';
import { canvasReady, pagePoint, within } from './lib/novnc.mjs';
import { parseArgs, tap } from './lib/tap.mjs';

const args = parseArgs();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const env = { ...process.env, DISPLAY: args.display };
const [ax, ay] = (args.at || '100,100').split(',').map(Number);
const at = (dx, dy) => [ax + dx, ay + dy];
let agent;
async function where() {
  if (!args.display) {
    const r = await call(agent, 'cursor_position', {});
    return [r.structuredContent.x, r.structuredContent.y];
  }
  const out = execFileSync('xdotool', ['getmouselocation', '--shell'], { env }).toString();
  return [Number(/X=(\d+)/.exec(out)[1]), Number(/Y=(\d+)/.exec(out)[1])];
}
const near = ([x, y], [x2, y2]) => Math.abs(x - x2) <= 2 && Math.abs(y - y2) <= 2;

async function openViewer(browser) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(args.url, { waitUntil: 'load', timeout: 30000 });
  await canvasReady(page);
  await page.waitForSelector('#cloche-bar:not([hidden])', { timeout: 10000 });
  return page;
}
const barText = (page) => page.locator('#cloche-state').textContent();

const browser = await launchBrowser();
agent = await connect(args.mcp, 'cloche-control-test');
try {
  const a = await openViewer(browser);
  const b = await openViewer(browser);
  tap.check(/^Watching/.test(await barText(a)), 'a noVNC page opens watching, with the control bar',
    await barText(a));
  tap.check(await a.locator('#cloche-take').isVisible(), '... and a Take control button');

  // Watching: the person's mouse does not reach X.
  const start = await where();
  let [px, py] = await pagePoint(a, 500, 400);
  await a.mouse.move(px, py);
  await a.mouse.click(px, py);
  await sleep(400);
  tap.check(near(await where(), start), 'a watching viewer\'s mouse and clicks do not move the X pointer',
    `pointer at ${await where()}, was ${start}`);

  // Take control.
  await a.click('#cloche-take');
  const took = await within(3000, async () => (await barText(a)) === 'You have control');
  tap.check(took >= 0, `"Take control" gives the page the desktop in one click (${took} ms)`,
    await barText(a));
  tap.check(await within(3000, async () => /Another person has control/.test(await barText(b))) >= 0,
    'the other page says another person has control');
  [px, py] = await pagePoint(a, 520, 410);
  await a.mouse.move(px, py);
  tap.check(await within(2000, async () => near(await where(), [520, 410])) >= 0,
    'with control, the person\'s mouse moves the X pointer', `pointer at ${await where()}`);

  // The agent meets the person.
  const before = await where();
  const click = await call(agent, 'left_click', { coordinate: at(0, 0) });
  tap.check(click.isError && /A person has control of this desktop since/.test(textOf(click)),
    'an mcp-desktop click while a person has control answers the documented tool error',
    textOf(click));
  await sleep(200);
  tap.check(near(await where(), before), '... and changes nothing (the pointer stays)',
    `pointer at ${await where()}`);
  const typed = await call(agent, 'type', { text: 'nope' });
  tap.check(typed.isError, 'typing is refused too', textOf(typed));
  const shot = await call(agent, 'screenshot', {});
  tap.check(!shot.isError && shot.content.some((c) => c.type === 'image'),
    'screenshots keep working while a person has control');

  // request_human_help while the person has control: shown, answered at hand-back.
  const reason = 'Please solve the captcha on the login page';
  const t0 = Date.now();
  let progress = 0;
  const help = call(agent, 'request_human_help', { reason, timeout_s: 120 },
    { timeout: 150000, onprogress: () => { progress++; } });
  const shown = await within(5000, async () =>
    (await b.locator('#cloche-help').textContent()) === `The agent asks for help: ${reason}`);
  tap.check(shown >= 0, `request_human_help's reason shows in every watching page (${shown} ms)`);
  // The pages hear of the request one after the other: a's title may
  // change after b's text has.
  tap.check(await within(5000, async () => /help/.test(await a.title())) >= 0,
    'the page title says help is asked for');
  let settled = false;
  help.then(() => { settled = true; }, () => { settled = true; });
  await sleep(1500);
  tap.check(!settled, 'request_human_help blocks while the person has control');
  await a.fill('#cloche-note', 'Solved it; you are logged in as demo');
  await a.click('#cloche-back');
  const res = await help;
  const waited = Date.now() - t0;
  tap.check(!res.isError && /Their note: Solved it; you are logged in as demo/.test(textOf(res)),
    `request_human_help returns when the person hands back, with their note (${waited} ms)`,
    textOf(res));
  tap.check(res.structuredContent && res.structuredContent.answered === true &&
    res.structuredContent.note === 'Solved it; you are logged in as demo',
    '... and the note in structuredContent');
  tap.check(await within(3000, async () => /^Watching/.test(await barText(a))) >= 0,
    'after the hand-back the page watches again');
  tap.check(await within(3000, async () => await b.locator('#cloche-help').isHidden()) >= 0,
    'the help request is gone from the pages');

  // The agent drives again.
  const again = await call(agent, 'left_click', { coordinate: at(40, 50) });
  await sleep(200);
  tap.check(!again.isError && near(await where(), at(40, 50)), 'after the hand-back the agent\'s click works',
    `${textOf(again).slice(0, 200)}; pointer at ${await where()}`);
  tap.check(!/a person had control/i.test(textOf(again)),
    'a hand-back that answered request_human_help is not told twice');

  // A hand-back without a pending request reaches the agent's next action.
  await a.click('#cloche-take');
  await within(3000, async () => (await barText(a)) === 'You have control');
  await a.fill('#cloche-note', 'I closed the popup');
  await a.click('#cloche-back');
  await within(3000, async () => /^Watching/.test(await barText(a)));
  const next = await call(agent, 'mouse_move', { coordinate: at(60, 70) });
  tap.check(!next.isError && /handed it back saying: I closed the popup/.test(textOf(next)),
    'a hand-back the agent did not wait for is told with its next action', textOf(next).slice(0, 300));

  // A person whose page closes while holding control: the lease lapses.
  if (args.grace) {
    await b.click('#cloche-take');
    await within(3000, async () => (await barText(b)) === 'You have control');
    await b.close();
    const t1 = Date.now();
    const back = await within(25000, async () => !(await call(agent, 'mouse_move', { coordinate: at(80, 90) })).isError);
    tap.check(back >= 0, `a person whose page closed loses control after the grace (${Date.now() - t1} ms)`);
  }
  await a.close();
} catch (e) {
  tap.notOk('the control scenario ran to its end', e && e.stack ? e.stack : e);
} finally {
  await agent.close().catch(() => {});
  await browser.close();
}
tap.exit();
