// The end-to-end scripts' scaffold: their arguments, and the `ok - NAME` /
// `not ok - NAME` lines that tests/integration and scripts/test.sh count.
//
//   parseArgs([argv])       --key value pairs (a --flag with no value is true)
//   ok(name)                one passing check
//   notOk(name, why)        one failing check; why (cut to 300 characters)
//                           goes in parentheses after the name
//   check(cond, name, why)  ok or notOk by cond; returns !!cond
//   step(name, fn)          awaits fn; a throw is notOk(name, its message)
//   tap.failed / tap.passed the counts so far
//   tap.exit()              the summary, then process.exit(1 if any failed, else 0)
//   tap.done()              the summary and the exit status, without exiting
//                           (for a script that still has to close things)
// The summary is one `# N of M checks failed` line, printed only when one
// did: a passing script prints nothing but its checks.

export function parseArgs(argv = process.argv.slice(2)) {
  const args = {};
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) args[k] = argv[++i];
    else args[k] = true;
  }
  return args;
}

export const tap = {
  failed: 0,
  passed: 0,
  ok(name) {
    console.log(`ok - ${name}`);
    this.passed++;
  },
  notOk(name, why) {
    console.log(`not ok - ${name}${why ? ` (${String(why).slice(0, 300)})` : ''}`);
    this.failed++;
  },
  check(cond, name, why) {
    if (cond) this.ok(name); else this.notOk(name, why);
    return !!cond;
  },
  async step(name, fn) {
    try { return await fn(); } catch (e) { this.notOk(name, e && e.message ? e.message : e); return undefined; }
  },
  summary() {
    if (this.failed) console.log(`# ${this.failed} of ${this.failed + this.passed} checks failed`);
  },
  done() {
    this.summary();
    process.exitCode = this.failed ? 1 : 0;
  },
  exit() {
    this.summary();
    process.exit(this.failed ? 1 : 0);
  },
};

export const ok = (name) => tap.ok(name);
export const notOk = (name, why) => tap.notOk(name, why);
export const check = (cond, name, why) => tap.check(cond, name, why);
export const step = (name, fn) => tap.step(name, fn);
