// cloche-vnc's page script (docs/vnc.md, The noVNC page): every .html page
// cloche-vnc serves loads it first thing in <head>, before noVNC's modules.
// Compiled into cloche-vnc as one C string (appliance/vnc/module.mk); lines
// starting with // are left out.
(function () {
  'use strict';
  // noVNC's defaults where the browser never chose: scale the desktop to
  // the window, and a dot at the person's own mouse (the pointer itself is
  // painted into the frames).  noVNC 1.3 has no defaults.json.
  try {
    for (const [k, v] of [['resize', 'scale'], ['show_dot', 'true']])
      if (localStorage.getItem(k) === null) localStorage.setItem(k, v);
  } catch (e) { /* storage off: noVNC's own defaults */ }

  // This tab's viewer key: it goes with the WebSocket (noVNC's path) and
  // with every control call, so cloche-vnc knows which connection is whose.
  // Kept for the tab's life, so a reload or reconnect keeps control.
  let key = null;
  try { key = sessionStorage.getItem('cloche_viewer'); } catch (e) { /* none */ }
  if (!key || !/^[0-9a-f]{32}$/.test(key)) {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    key = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    try { sessionStorage.setItem('cloche_viewer', key); } catch (e) { /* per load */ }
  }
  const here = new URL(location.href);
  let path = here.searchParams.get('path');
  if (path === null) {
    try { path = localStorage.getItem('path'); } catch (e) { /* none */ }
  }
  if (!path) path = 'websockify';
  const at = path.indexOf('?');
  const pq = new URLSearchParams(at < 0 ? '' : path.slice(at + 1));
  pq.set('viewer', key);
  here.searchParams.set('path', (at < 0 ? path : path.slice(0, at)) + '?' + pq.toString());
  history.replaceState(history.state, '', here.toString());

  // The control bar: who drives the desktop, take control / hand back, and
  // the agent's requests for help.
  const auth = new URLSearchParams();
  for (const k of ['secret', 'view']) {
    const v = here.searchParams.get(k);
    if (v) auth.set(k, v);
  }
  const endpoint = (extra) => {
    const q = new URLSearchParams(auth);
    q.set('viewer', key);
    for (const [k, v] of Object.entries(extra || {})) q.set(k, v);
    return 'cloche/control?' + q.toString();
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const hhmm = (iso) => {
    const d = new Date(iso);
    return isNaN(d) ? iso : d.toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'});
  };
  const title = document.title;
  let bar, text, takeBtn, note, backBtn, help, errLine;

  const el = (tag, attrs, kids) => {
    const e = document.createElement(tag);
    Object.assign(e, attrs || {});
    for (const k of kids || []) e.append(k);
    return e;
  };

  function build() {
    const style = el('style', {textContent: `
#cloche-bar{position:fixed;top:0;left:50%;transform:translateX(-50%);z-index:10000;
 background:rgba(24,24,27,.92);color:#f4f4f5;font:13px/1.4 system-ui,sans-serif;
 padding:5px 10px;border-radius:0 0 8px 8px;display:flex;gap:8px;align-items:center;
 flex-wrap:wrap;max-width:92vw;box-shadow:0 2px 8px rgba(0,0,0,.4)}
#cloche-bar[hidden]{display:none}
#cloche-bar button{font:inherit;border:0;border-radius:5px;padding:3px 10px;cursor:pointer;
 background:#2563eb;color:#fff}
#cloche-bar button.back{background:#16a34a}
#cloche-bar input{font:inherit;width:18em;padding:2px 6px;border-radius:4px;border:1px solid #71717a;
 background:#18181b;color:#f4f4f5}
#cloche-help{flex-basis:100%;background:#b45309;color:#fff;padding:4px 8px;border-radius:5px}
#cloche-help[hidden],#cloche-bar [hidden]{display:none}
#cloche-err{flex-basis:100%;color:#fca5a5}`});
    text = el('span', {id: 'cloche-state', textContent: 'Watching'});
    takeBtn = el('button', {id: 'cloche-take', type: 'button', textContent: 'Take control',
      title: 'Drive the desktop yourself; the agent waits until you hand back'});
    note = el('input', {id: 'cloche-note', type: 'text', maxLength: 2000,
      placeholder: 'Note for the agent (optional)'});
    backBtn = el('button', {id: 'cloche-back', type: 'button', className: 'back',
      textContent: 'Hand back', title: 'Let the agent drive again, with your note'});
    help = el('div', {id: 'cloche-help', hidden: true});
    errLine = el('div', {id: 'cloche-err', hidden: true});
    bar = el('div', {id: 'cloche-bar', hidden: true}, [text, takeBtn, note, backBtn, help, errLine]);
    takeBtn.addEventListener('click', () => act({action: 'take'}));
    backBtn.addEventListener('click', () => act({action: 'hand_back', note: note.value}));
    note.addEventListener('keydown', (ev) => {
      ev.stopPropagation(); // typing here is not for the desktop
      if (ev.key === 'Enter') act({action: 'hand_back', note: note.value});
    });
    note.addEventListener('keyup', (ev) => ev.stopPropagation());
    document.head.append(style);
    document.body.append(bar);
  }

  function render(st) {
    window.clocheControl.state = st;
    window.clocheControl.lease = true;
    const h = st.holder;
    const you = !!(h && h.you);
    if (!st.may_control)
      text.textContent = h ? 'Watching (a person has control)' : 'Watching (view only)';
    else if (you)
      text.textContent = 'You have control';
    else if (h && h.implicit)
      text.textContent = 'A VNC client is typing';
    else if (h && h.away)
      text.textContent = 'Watching: the person who had control left';
    else if (h)
      text.textContent = 'Another person has control since ' + hhmm(h.since);
    else
      text.textContent = st.agent_busy ? 'Watching: the agent is acting' : 'Watching';
    takeBtn.hidden = !st.may_control || you;
    takeBtn.textContent = h && !h.away ? 'Take over' : 'Take control';
    note.hidden = backBtn.hidden = !you;
    const asks = st.help || [];
    help.hidden = asks.length === 0;
    help.textContent = asks.length
      ? 'The agent asks for help: ' + asks.map((a) => a.reason).join(' / ')
      : '';
    document.title = (asks.length ? '(help) ' : '') + (you ? '(you have control) ' : '') + title;
    bar.hidden = false;
  }

  async function act(params) {
    errLine.hidden = true;
    try {
      const r = await fetch(endpoint(params), {method: 'POST', cache: 'no-store'});
      const body = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status));
      if (params.action === 'hand_back') note.value = '';
      render(Object.assign(body, {may_control: body.may_control}));
    } catch (e) {
      errLine.textContent = 'Control: ' + e.message;
      errLine.hidden = false;
    }
  }

  async function follow() {
    let since = null;
    for (;;) {
      try {
        const r = await fetch(endpoint(since === null ? {} : {since}), {cache: 'no-store'});
        if (r.status === 404) { // no lease on this desktop: no bar
          window.clocheControl.lease = false;
          return;
        }
        if (!r.ok) throw new Error('HTTP ' + r.status);
        const st = await r.json();
        render(st);
        since = String(st.version);
      } catch (e) {
        since = null;
        await sleep(2000);
      }
    }
  }

  window.clocheControl = {key, state: null, lease: undefined, take: () => act({action: 'take'}),
    handBack: (n) => act({action: 'hand_back', note: n || ''})};
  const start = () => { build(); follow(); };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
