// The first commands an agent runs in a fresh sandbox, through mcp-shell
// with the official MCP SDK client, as the sandbox's user: each must exit 0
// with nothing on stderr (gVisor quirks used to make `ls`, `stat` and `cp -a`
// print errors for files that are fine).  Prints "ok - ..." / "not ok - ..."
// lines; exits non-zero when anything failed.
//
//   node everyday-test.mjs --url http://10.0.2.15:8889/mcp --web http://host:port/ --web-text TEXT
import { tap, parseArgs } from './lib/tap.mjs';
import { connect, call } from './lib/mcp-client.mjs';

const args = parseArgs();
const url = args.url || 'http://10.0.2.15:8889/mcp';
const client = await connect(url, 'everyday-test');
const sc = (r) => r.structuredContent || {};

// [what, command, stdout check (optional)]
const W = '~/everyday';
const commands = [
  ['ls -la /', 'ls -la /', (o) => /\bbin -> usr\/bin\b/.test(o) && /\broot\b/.test(o)],
  ['ls -l /etc/alternatives', 'ls -l /etc/alternatives', (o) => / -> \//.test(o)],
  ['ls -la of the home directory', 'ls -la ~', (o) => /\.bashrc/.test(o)],
  ['stat', 'stat /etc/passwd /bin', (o) => /symbolic link/.test(o) && /regular file/.test(o)],
  ['find', 'find /etc -maxdepth 1 -type l | wc -l', (o) => Number(o) > 0],
  ['a workspace with a symlink', `mkdir -p ${W}/src && cd ${W} && echo hello > src/a.txt && ln -s a.txt src/link && readlink src/link`,
    (o) => o === 'a.txt\n'],
  ['cp -a of a tree with a symlink', `cd ${W} && cp -a src copy && ls -l copy/link`, (o) => /link -> a\.txt/.test(o)],
  ['cp -a of system symlinks', `cp -a /etc/alternatives ${W}/alt && ls ${W}/alt | wc -l`, (o) => Number(o) > 0],
  ['mv', `cd ${W} && mv copy moved && cat moved/link`, (o) => o === 'hello\n'],
  ['tar', `cd ${W} && tar czf w.tgz src moved && mkdir -p x && tar xzf w.tgz -C x && tar tzf w.tgz | wc -l`, (o) => Number(o) >= 6],
  ['du', `du -sh ${W} /usr/share/doc`],
  ['df', 'df -h', (o) => /Filesystem/.test(o)],
  ['ps', 'ps aux', (o) => /cloche-init/.test(o)],
  ['top -bn1', 'top -bn1 | head -n 5', (o) => /^top - /.test(o)],
  ['free', 'free -m', (o) => /^\s+total/.test(o)],
  ['symlink to a system file', `ln -sf /etc/os-release ${W}/osr && ls -l ${W}/osr && head -n 1 ${W}/osr`, (o) => /PRETTY_NAME|Debian/.test(o)],
  ['touch and chmod', `touch ${W}/t && chmod 640 ${W}/t && stat -c %a ${W}/t`, (o) => o === '640\n'],
  ['a small python3 script', `printf 'import json\\nprint(json.dumps({"sum": sum(range(10))}))\\n' > ${W}/s.py && python3 ${W}/s.py`,
    (o) => o === '{"sum": 45}\n'],
  ['python3 -m venv with pip', `python3 -m venv ${W}/venv && ${W}/venv/bin/pip --version`, (o) => /^pip /.test(o)],
  ['git init and commit', `cd ${W} && git init -q repo && cd repo && echo x > f && git add f && ` +
    'git -c user.name=Agent -c user.email=agent@example.com commit -q -m first && git log --oneline | wc -l', (o) => o === '1\n'],
  ['jq', `echo '{"a":[1,2,3]}' | jq -c '.a | length'`, (o) => o === '3\n'],
  ['zip and unzip', `cd ${W} && zip -qr src.zip src && unzip -qo src.zip -d unz && cat unz/src/a.txt`, (o) => o === 'hello\n'],
  ['file', `file /usr/bin/python3 ${W}/src/a.txt`, (o) => /ELF|symbolic link/.test(o) && /ASCII text/.test(o)],
  ['less, nano and vi are there', 'less -FX /etc/hostname </dev/null >/dev/null && nano --version | head -n 1 && vi --version | head -n 1',
    (o) => /nano/.test(o) && /VIM/.test(o)],
  ['xdotool on the display', 'xdotool getmouselocation', (o) => /^x:\d+ y:\d+/.test(o)],
  ['xclip round trip', 'printf clip-ok | xclip -selection clipboard -i && xclip -o -selection clipboard', (o) => o === 'clip-ok'],
  ['CJK and emoji fonts', 'fc-list :lang=zh family | head -n 1 && fc-list | grep -ci emoji', (o) => /Noto/.test(o)],
];
if (args.web) {
  const want = args['web-text'] || '';
  commands.push(['curl through the egress proxy', `curl -sS -m 20 ${args.web}`, (o) => o.includes(want)]);
  commands.push(['wget through the egress proxy', `wget -q -O - ${args.web}`, (o) => o.includes(want)]);
}

for (const [what, command, check] of commands) {
  await tap.step(what, async () => {
    const t0 = Date.now();
    const r = await call(client, 'run_command', { command, timeout_ms: 120000 });
    const s = sc(r);
    const good = !r.isError && s.exit_code === 0 && s.stderr === '' && (!check || check(s.stdout || ''));
    tap.check(good, `${what} (${Date.now() - t0} ms)`,
      `exit ${s.exit_code}; stderr: ${(s.stderr || '').slice(0, 200)}; stdout: ${(s.stdout || '').slice(0, 200)}`);
  });
}
await call(client, 'run_command', { command: `rm -rf ${W}` });
await client.close();
tap.exit();
