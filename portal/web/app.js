// The cloche dashboard: plain JS against the portal's REST API (/sbv1), with
// the API key as a Bearer header.  The key lives in this tab's
// sessionStorage only.  Thumbnails are fetched only for cards on screen, in
// a visible tab, every few seconds; the portal caches them so several
// dashboards cost the sandbox one picture.
'use strict';

const $ = (s) => document.querySelector(s);
const LIST_MS = 4000;
const THUMB_MS = 3000;
const LIVE = ['queued', 'placing', 'starting', 'ready', 'hibernating', 'hibernated', 'offloading', 'offloaded', 'waking', 'releasing'];
const state = { key: sessionStorage.getItem('cloche.key') || '', admin: false, view: 'sandboxes',
  cards: new Map(), visible: new Set(), timers: [], detail: null };

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${state.key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json;
  try { json = text ? JSON.parse(text) : {}; } catch { json = {}; }
  if (!res.ok) {
    const m = json.error && (json.error.message || json.error);
    throw new ApiError(res.status, `${res.status}: ${m || res.statusText}`);
  }
  return json;
}

function when(iso) {
  if (!iso) return '';
  const d = (Date.parse(iso) - Date.now()) / 1000;
  const a = Math.abs(d);
  const s = a < 90 ? `${Math.round(a)} s` : a < 5400 ? `${Math.round(a / 60)} min` : `${(a / 3600).toFixed(1)} h`;
  return d >= 0 ? `in ${s}` : `${s} ago`;
}

// --- login ------------------------------------------------------------------
async function login(key) {
  state.key = key;
  try {
    await api('GET', '/sbv1/sandboxes?limit=1');
  } catch (e) {
    state.key = '';
    sessionStorage.removeItem('cloche.key');
    throw e.status === 401 ? new Error('This key is not valid (unknown or revoked).') : e;
  }
  sessionStorage.setItem('cloche.key', key);
  try { await api('GET', '/sbv1/nodes'); state.admin = true; } catch { state.admin = false; }
  $('#who').textContent = `${key.split('_').slice(0, 2).join('_')} (${state.admin ? 'admin' : 'user'})`;
  $('#tab-nodes').hidden = !state.admin;
  $('#login').hidden = true;
  $('#nav').hidden = false;
  show('sandboxes');
  start();
}

function logout() {
  sessionStorage.removeItem('cloche.key');
  state.key = '';
  state.timers.forEach(clearInterval);
  state.timers = [];
  for (const c of state.cards.values()) if (c.url) URL.revokeObjectURL(c.url);
  state.cards.clear();
  $('#grid').textContent = '';
  $('#nav').hidden = true;
  $('#sandboxes').hidden = true;
  $('#nodes').hidden = true;
  $('#login').hidden = false;
  $('#key').value = '';
}

function show(view) {
  state.view = view;
  for (const b of document.querySelectorAll('.tab')) b.classList.toggle('on', b.dataset.view === view);
  $('#sandboxes').hidden = view !== 'sandboxes';
  $('#nodes').hidden = view !== 'nodes';
  if (view === 'nodes') refreshNodes();
}

function start() {
  refreshList();
  state.timers.push(setInterval(() => { if (!document.hidden) refreshList(); }, LIST_MS));
  state.timers.push(setInterval(() => { if (!document.hidden) refreshThumbs(); }, THUMB_MS));
  state.timers.push(setInterval(() => { if (!document.hidden && state.view === 'nodes') refreshNodes(); }, LIST_MS));
}

// --- sandboxes ------------------------------------------------------------------
const seen = new IntersectionObserver((entries) => {
  for (const e of entries) {
    const id = e.target.dataset.id;
    if (e.isIntersecting) { state.visible.add(id); thumb(id); } else state.visible.delete(id);
  }
});

async function refreshList() {
  const f = $('#filter').value;
  let list;
  try {
    list = (await api('GET', `/sbv1/sandboxes?limit=200${f ? `&state=${f}` : ''}`)).sandboxes || [];
    $('#error').textContent = '';
  } catch (e) {
    if (e.status === 401) { logout(); $('#login-error').textContent = 'The key stopped working (revoked?).'; return; }
    $('#error').textContent = `Cannot list sandboxes: ${e.message}`;
    return;
  }
  if (!f) list = list.filter((s) => LIVE.includes(s.state));
  const ids = new Set(list.map((s) => s.id));
  for (const [id, c] of state.cards) {
    if (!ids.has(id)) {
      seen.unobserve(c.el);
      c.el.remove();
      if (c.url) URL.revokeObjectURL(c.url);
      state.cards.delete(id);
      state.visible.delete(id);
    }
  }
  for (const s of list) render(s);
  const ready = list.filter((s) => s.state === 'ready').length;
  $('#summary').textContent = `${list.length} sandbox${list.length === 1 ? '' : 'es'}, ${ready} ready`;
  $('#empty').hidden = list.length > 0;
  if (state.detail && ids.has(state.detail)) fillDetail(state.cards.get(state.detail).sb, false);
}

function button(label, fn, cls) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = label;
  if (cls) b.className = cls;
  b.addEventListener('click', async (ev) => {
    ev.stopPropagation();
    b.disabled = true;
    try { await fn(); } finally { b.disabled = false; }
  });
  return b;
}

// What one can do with a sandbox in its state: [label, action, class].
function actionsFor(s, errBox) {
  const act = (name, body) => async () => {
    try {
      await api('POST', `/sbv1/sandboxes/${s.id}/${name}`, body);
      errBox.textContent = '';
    } catch (e) { errBox.textContent = `${name}: ${e.message}`; }
    refreshList();
  };
  const out = [];
  if (s.state === 'ready') {
    out.push(button('Open desktop', () => openDesktop(s.id, errBox), 'primary'));
    out.push(button('Keep alive', act('keepalive')));
    out.push(button('Hibernate', act('hibernate')));
    out.push(button('Share', () => shareDesktop(s.id, errBox)));
    out.push(button('Fork', async () => {
      const n = prompt('Fork into how many (1-8)?', '1');
      if (n === null) return;
      await act('fork', { count: Number(n) })();
    }));
  }
  if (s.state === 'hibernated' || s.state === 'offloaded') {
    out.push(button('Wake', act('wake')));
    out.push(button('Keep alive', act('keepalive')));
  }
  if (s.state !== 'released' && s.state !== 'releasing' && s.state !== 'failed') {
    out.push(button('Release', async () => {
      if (confirm(`Release ${s.id}? Its processes and files are gone for good.`)) await act('release')();
    }, 'danger'));
  }
  return out;
}

// A link to the desktop for someone else: view-only unless control is
// asked for, for so many minutes; the link is shown to copy.
async function shareDesktop(id, errBox) {
  const mins = prompt('Share the desktop for how many minutes? (view only; end the number with "c" to let the viewer control it, e.g. "30c")', '60');
  if (mins === null) return;
  const m = /^\s*(\d+)\s*(c?)\s*$/i.exec(mins);
  if (!m) { errBox.textContent = 'share: a number of minutes, e.g. 60 or 30c'; return; }
  try {
    const sh = await api('POST', `/sbv1/sandboxes/${id}/shares`,
      { ttl: Number(m[1]) * 60, mode: m[2] ? 'control' : 'view' });
    errBox.textContent = '';
    prompt(`${sh.mode === 'control' ? 'Control' : 'View-only'} link until ${sh.expires_at} (copy it):`, sh.url);
  } catch (e) { errBox.textContent = `share: ${e.message}`; }
  if (state.detail === id) fillShares(id);
}

async function fillShares(id) {
  const ul = $('#d-shares');
  let list;
  try { list = (await api('GET', `/sbv1/sandboxes/${id}/shares`)).shares || []; } catch (e) {
    ul.textContent = `shares: ${e.message}`;
    return;
  }
  ul.textContent = '';
  const active = list.filter((x) => x.state === 'active');
  if (!active.length) { ul.textContent = 'none'; return; }
  for (const x of active) {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = x.url;
    a.target = '_blank';
    a.rel = 'noopener';
    a.textContent = `${x.mode}${x.label ? ` (${x.label})` : ''}, until ${x.expires_at}`;
    li.append(a, ' ', button('Revoke', async () => {
      try { await api('DELETE', `/sbv1/sandboxes/${id}/shares/${x.id}`); } catch (e) { $('#d-error').textContent = `revoke: ${e.message}`; }
      fillShares(id);
    }, 'danger'));
    ul.appendChild(li);
  }
}

// Recordings of the screen and the action trace (docs/recording.md).  The
// files need the key, so a download is fetched here and handed to the
// browser as a blob.
async function download(path, name) {
  const res = await fetch(path, { headers: { authorization: `Bearer ${state.key}` } });
  if (!res.ok) {
    let m = res.statusText;
    try { const j = await res.json(); m = (j.error && j.error.message) || m; } catch { /* not JSON */ }
    throw new Error(`${res.status}: ${m}`);
  }
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

async function fillRecordings(s) {
  const id = s.id, ul = $('#d-recordings'), box = $('#d-rec-actions');
  const err = (what) => (e) => { $('#d-error').textContent = `${what}: ${e.message}`; };
  let list = [];
  box.textContent = '';
  ul.textContent = '';
  if (s.state !== 'ready') { ul.textContent = 'reached while the sandbox runs'; return; }
  try { list = (await api('GET', `/sbv1/sandboxes/${id}/recordings`)).recordings || []; } catch (e) {
    ul.textContent = `recordings: ${e.message}`;
    return;
  }
  const running = list.find((r) => r.state === 'recording');
  box.appendChild(running
    ? button('Stop recording', async () => {
      await api('POST', `/sbv1/sandboxes/${id}/recordings/${running.id}/stop`).catch(err('stop'));
      fillRecordings(s);
    }, 'danger')
    : button('Record screen', async () => {
      await api('POST', `/sbv1/sandboxes/${id}/recordings`).catch(err('record'));
      fillRecordings(s);
    }, 'primary'));
  box.appendChild(button('Action trace', () =>
    download(`/sbv1/sandboxes/${id}/trace`, `${id}-trace.jsonl`).catch(err('trace'))));
  if (!list.length) { ul.textContent = 'none'; return; }
  for (const r of list.slice().reverse()) {
    const li = document.createElement('li');
    const secs = r.duration_ms ? `${(r.duration_ms / 1000).toFixed(0)} s` : '';
    const size = !r.bytes ? '' : r.bytes < 1e6 ? `${Math.ceil(r.bytes / 1e3)} kB` : `${(r.bytes / 1e6).toFixed(1)} MB`;
    li.append(`${r.started} ${r.state} ${secs} ${size} `.replace(/ +/g, ' '));
    if (r.state === 'done')
      li.append(button('Download', () =>
        download(`/sbv1/sandboxes/${id}/recordings/${r.id}`, `${id}-${r.id}.mp4`).catch(err('download'))));
    ul.appendChild(li);
  }
}

// noVNC needs the sandbox's token, which only the single view carries.
async function openDesktop(id, errBox) {
  const w = window.open('', '_blank');
  try {
    const s = await api('GET', `/sbv1/sandboxes/${id}`);
    if (!s.urls || !s.urls.novnc) throw new Error('no desktop URL');
    if (w) { w.opener = null; w.location = s.urls.novnc; } else location.href = s.urls.novnc;
  } catch (e) {
    if (w) w.close();
    errBox.textContent = `Open desktop: ${e.message}`;
  }
}

function render(s) {
  let c = state.cards.get(s.id);
  if (!c) {
    const el = $('#card').content.firstElementChild.cloneNode(true);
    el.dataset.id = s.id;
    el.querySelector('.shot').addEventListener('click', () => openDetail(s.id));
    $('#grid').appendChild(el);
    c = { el, sb: s, url: null, key: '' };
    state.cards.set(s.id, c);
    seen.observe(el);
  }
  c.sb = s;
  const el = c.el;
  el.querySelector('.id').textContent = s.id;
  const st = el.querySelector('.state');
  st.textContent = s.state;
  st.className = `state ${s.state}`;
  el.querySelector('.template').textContent = s.template || '';
  el.querySelector('.node').textContent = s.node || 'no node';
  el.querySelector('.owner').textContent = state.admin ? `owner ${s.owner}` : '';
  el.querySelector('.expires').textContent = s.expires_at ? `lease ends ${when(s.expires_at)}` : '';
  // What the desktop said with its latest thumbnail: a person driving it,
  // or the agent asking for one (request_human_help).
  const desk = el.querySelector('.desk');
  const d = s.desktop_state;
  const asks = d && d.help ? d.help.map((h) => h.reason) : [];
  desk.hidden = !(asks.length || (d && d.control === 'person'));
  desk.classList.toggle('help', asks.length > 0);
  desk.textContent = asks.length ? `The agent asks for help: ${asks.join(' / ')}`
    : d && d.control === 'person' ? `A person has control since ${when(d.since)}` : '';
  el.querySelector('.placeholder').textContent = s.state === 'ready' ? (c.url ? '' : 'loading…') : s.state;
  if (s.state !== 'ready' && c.url) {
    URL.revokeObjectURL(c.url);
    c.url = null;
    el.querySelector('.thumb').removeAttribute('src');
  }
  // The buttons change only with the state (so a click is not lost to a redraw).
  if (c.key !== s.state) {
    c.key = s.state;
    const box = el.querySelector('.actions');
    box.textContent = '';
    for (const b of actionsFor(s, $('#error'))) box.appendChild(b);
  }
}

async function thumbBlob(id, width) {
  const res = await fetch(`/sbv1/sandboxes/${id}/thumbnail?width=${width}`, { headers: { authorization: `Bearer ${state.key}` } });
  if (!res.ok || !(res.headers.get('content-type') || '').startsWith('image/')) return null;
  return res.blob();
}

async function thumb(id) {
  const c = state.cards.get(id);
  if (!c || c.sb.state !== 'ready' || c.busy) return;
  c.busy = true;
  try {
    const blob = await thumbBlob(id, 320);
    if (!blob || !state.cards.has(id)) return;
    const url = URL.createObjectURL(blob);
    const img = c.el.querySelector('.thumb');
    img.src = url;
    img.alt = `screen of ${id}`;
    if (c.url) URL.revokeObjectURL(c.url);
    c.url = url;
    c.el.querySelector('.placeholder').textContent = '';
  } catch { /* the next round tries again */ } finally { c.busy = false; }
}

function refreshThumbs() {
  for (const id of state.visible) thumb(id);
  if (state.detail) detailThumb();
}

// --- one sandbox ----------------------------------------------------------------
async function openDetail(id) {
  state.detail = id;
  const c = state.cards.get(id);
  fillDetail(c.sb, true);
  $('#detail').showModal();
  detailThumb();
}

let detailUrl = null;
async function detailThumb() {
  const c = state.cards.get(state.detail);
  const img = $('#d-thumb');
  if (!c || c.sb.state !== 'ready') { img.removeAttribute('src'); return; }
  const blob = await thumbBlob(state.detail, 800).catch(() => null);
  if (!blob) return;
  if (detailUrl) URL.revokeObjectURL(detailUrl);
  detailUrl = URL.createObjectURL(blob);
  img.src = detailUrl;
  img.alt = `screen of ${state.detail}`;
}

async function fillDetail(s, events) {
  $('#d-title').textContent = s.id;
  const facts = [['state', s.state], ['template', s.template], ['node', s.node || '-'], ['owner', s.owner],
    ['lease ends', s.expires_at ? `${s.expires_at} (${when(s.expires_at)})` : '-'],
    ['created', s.created_at], ['labels', s.labels ? JSON.stringify(s.labels) : '-']];
  if (s.forked_from) facts.push(['forked from', s.forked_from]);
  const dl = $('#d-facts');
  dl.textContent = '';
  for (const [k, v] of facts) {
    const dt = document.createElement('dt'); dt.textContent = k;
    const dd = document.createElement('dd'); dd.textContent = v == null ? '-' : String(v);
    dl.append(dt, dd);
  }
  const box = $('#d-actions');
  if (box.dataset.state !== s.state || events) {
    box.dataset.state = s.state;
    box.textContent = '';
    for (const b of actionsFor(s, $('#d-error'))) box.appendChild(b);
  }
  if (events) fillShares(s.id);
  if (events || $('#d-recordings').dataset.state !== s.state) {
    $('#d-recordings').dataset.state = s.state;
    fillRecordings(s);
  }
  try {
    const ev = (await api('GET', `/sbv1/sandboxes/${s.id}/events`)).events || [];
    const ol = $('#d-events');
    ol.textContent = '';
    for (const e of ev.slice().reverse()) {
      const li = document.createElement('li');
      li.textContent = `${e.at} ${e.from ? `${e.from} → ` : ''}${e.to || ''} ${e.reason || ''}`;
      ol.appendChild(li);
    }
  } catch (e) { $('#d-error').textContent = `events: ${e.message}`; }
}

// --- nodes --------------------------------------------------------------------------
const gib = (b) => (b / 1073741824).toFixed(1);
async function refreshNodes() {
  if (!state.admin) return;
  let nodes;
  try { nodes = (await api('GET', '/sbv1/nodes')).nodes || []; } catch (e) { $('#queue').textContent = e.message; return; }
  const tb = $('#node-rows');
  tb.textContent = '';
  for (const n of nodes) {
    const c = n.capacity || {};
    const mem = c.memory || {};
    const disk = c.disk || {};
    const warm = (c.warm || []).map((w) => `${w.template} ${w.ready}/${w.target}${w.starting ? ` (+${w.starting} starting)` : ''}`).join(', ');
    const cells = [n.name, n.state, `${n.sandboxes}${c.max_sandboxes ? ` / ${c.max_sandboxes}` : ''}`,
      mem.total ? `${gib(mem.available)} of ${gib(mem.total)} GiB` : '-', c.cpus || '-',
      disk.total ? `${gib(disk.free)} of ${gib(disk.total)} GiB` : '-', warm || '-', when(n.last_heartbeat)];
    const tr = document.createElement('tr');
    tr.className = `node ${n.state}`;
    for (const v of cells) { const td = document.createElement('td'); td.textContent = String(v); tr.appendChild(td); }
    tb.appendChild(tr);
  }
  try {
    const m = await (await fetch('/metrics')).text();
    const q = /^cloche_portal_queue_depth (\d+)/m.exec(m);
    $('#queue').textContent = `${nodes.length} node${nodes.length === 1 ? '' : 's'}; queue depth ${q ? q[1] : '?'}`;
  } catch { $('#queue').textContent = `${nodes.length} nodes`; }
}

// --- wiring ---------------------------------------------------------------------------
document.addEventListener('DOMContentLoaded', () => {
  $('#login').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('#login-error').textContent = '';
    try { await login($('#key').value.trim()); } catch (e) { $('#login-error').textContent = e.message; }
  });
  $('#logout').addEventListener('click', logout);
  for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => show(b.dataset.view));
  $('#filter').addEventListener('change', () => refreshList());
  $('#detail').addEventListener('close', () => { state.detail = null; });
  document.addEventListener('visibilitychange', () => { if (!document.hidden && state.key) { refreshList(); refreshThumbs(); } });
  if (state.key) login(state.key).catch(() => { $('#login').hidden = false; });
  else $('#login').hidden = false;
});
