// Headless Chromium for the end-to-end scripts: Debian's /usr/bin/chromium
// (or $CHROMIUM) driven by playwright-core, always with the same flags.
//
//   CHROMIUM                 the executable
//   CHROMIUM_FLAGS           the flags every launch gets: no sandbox (the tests
//                            often run as root), no GPU, no QUIC, and none of
//                            the first-run, background, update or sync traffic
//   launchBrowser(extra, options)
//                            chromium.launch() with CHROMIUM, CHROMIUM_FLAGS and
//                            then the caller's extra flags; options are
//                            playwright's other launch options
// playwright-core is loaded by launchBrowser only, so a script that spawns
// Chromium itself (bench/novnc/run.mjs) can take the flags without it.

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export const CHROMIUM_FLAGS = Object.freeze(['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']);

export async function launchBrowser(extra = [], options = {}) {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ ...options, executablePath: CHROMIUM, args: [...CHROMIUM_FLAGS, ...extra] });
}
