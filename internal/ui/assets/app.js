// Voda's dashboard. It follows GET /api/v1/events, a server-sent event
// stream read with fetch so that a bearer token can go with it, keeps the
// live jobs, nodes and schedulers it announces, lists finished jobs page
// by page from GET /api/v1/jobs when a view needs them, and draws the
// view the address names: #/ (cluster), #/jobs, #/finished,
// #/jobs/<name>, #/timeline, #/settings.
'use strict';

const palette = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#000000', '#F0E442'];
const textOn = ['#fff', '#000', '#000', '#000', '#000', '#000', '#fff', '#000'];
const timelineSteps = 300;
// The jobs tables show this many rows at first, and this many more on
// each "show more": drawing thousands of rows on every change would keep
// a browser busy. The finished jobs are fetched as many at a time.
const pageRows = 100;
// A page of GET /api/v1/jobs of every status may hold live jobs, which
// the stream shows already: "show more" fetches pages until it has
// pageRows finished ones, the list ends, or it fetched this many pages.
const maxPagesPerClick = 10;
// Changes that arrive in a burst are drawn at most every renderEvery ms,
// or ten times as long as the last drawing took (its script, style and
// layout), whichever is longer, so that drawing takes a bounded share of
// the page's time however busy the cluster or the viewer's machine; what
// the viewer does is drawn at once. A hidden page draws nothing until it
// is shown again.
const renderEvery = 500;
const week = 7 * 24 * 3600e3;
// The timeline's spans; 0 is from the oldest change kept (at most a week).
const windows = [['since the oldest change kept', 0], ['last hour', 3600e3], ['last 6 h', 6 * 3600e3], ['last 24 h', 24 * 3600e3], ['last 7 days', week]];

const state = {
  jobs: new Map(),        // name -> live job's view (as GET /api/v1/jobs/{name})
  // finished jobs: name -> view, from the pages of GET /api/v1/jobs, or
  // seen finishing in the stream (the stream sends no finished job).
  finished: new Map(),
  // The listing of finished jobs: the status it asks for ('' for every
  // one), the continue token of its next page ('' once it ended, null
  // before its first page), whether a fetch is under way, its last error.
  listing: { status: '', next: null, busy: false, error: '' },
  // Jobs looked up by name for their page (neither live nor finished
  // here): name -> 'pending' or 'missing'.
  lookups: new Map(),
  nodes: new Map(),       // GPU type -> nodes
  schedulers: new Map(),  // GPU type -> scheduler view
  keys: new Map(),        // job -> legend key (A, B, ...), stable while the page lives
  clock: { now: Date.now(), wall: Date.now(), rate: 1 }, // the server's time at a wall time, and its rate
  window: 0,              // the timeline's span (windows)
  token: sessionStorage.getItem('voda-token') || '',
  // Each jobs table's order, rows shown and filter.
  tables: {
    live: { sort: { key: 'submitTime', dir: -1 }, limit: pageRows, filter: { text: '', status: '' } }, // newest first
    finished: { sort: { key: 'finishTime', dir: -1 }, limit: pageRows, filter: { text: '', status: '' } }, // last finished first
  },
  flash: '',
  // loaded is false until the first snapshot is drawn: until then the
  // views say "Loading…" rather than that there are no jobs, nodes or
  // schedulers, or that a job does not exist.
  loaded: false,
};

// ---- the stream ----------------------------------------------------------

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (state.token) h.Authorization = `Bearer ${state.token}`;
  return h;
}

// setConnection says in the header how the stream is: kind is 'loading'
// (connecting, or waiting for the snapshot), 'live' (the snapshot is
// drawn and changes follow) or 'down'.
function setConnection(text, kind) {
  const el = document.getElementById('connection');
  el.textContent = text;
  el.className = kind;
}

async function follow() {
  let delay = 500;
  for (;;) {
    try {
      const res = await fetch('/api/v1/events', { headers: headers({ Accept: 'text/event-stream' }) });
      // 403: the token may list no jobs (one that only reads the
      // metrics): another is needed as much as for a 401.
      if (res.status === 401 || res.status === 403) {
        setConnection(res.status === 401 ? 'sign-in needed' : 'not allowed', 'down');
        await signIn(await errorText(res));
        continue;
      }
      if (!res.ok || !res.body) throw new Error(await errorText(res));
      // Live only once the snapshot is drawn (handle): a big snapshot
      // takes a while to arrive after the headers.
      setConnection('loading…', 'loading');
      delay = 500;
      await readEvents(res.body);
      setConnection('reconnecting…', 'down');
    } catch (e) {
      setConnection(`disconnected: ${e.message}; retrying`, 'down');
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 10000);
  }
}

async function readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let name = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const c = line.indexOf(':');
        const field = c < 0 ? line : line.slice(0, c);
        const val = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
        if (field === 'event') name = val;
        else if (field === 'data') data.push(val);
      }
      if (data.length) handle(name, JSON.parse(data.join('\n')));
    }
  }
}

function handle(name, data) {
  const now = Date.now();
  switch (name) {
    case 'snapshot':
      state.clock = { now: Date.parse(data.now) || now, wall: now, rate: data.clockRate > 0 ? data.clockRate : 1 };
      state.jobs.clear();
      for (const j of data.jobs || []) { noteJob(j); state.jobs.set(j.name, j); }
      state.nodes.clear();
      for (const g of data.nodes || []) state.nodes.set(g.gpuType, g.nodes || []);
      state.schedulers.clear();
      for (const s of data.schedulers || []) state.schedulers.set(s.gpuType, s);
      state.loaded = true;
      scheduleRender(true);
      setConnection('live', 'live');
      return;
    case 'job':
      // {"job": Job}, or {"name", "namespace", "deleted": true} when its
      // record left. A job's event with a final status is its last: it
      // moves to the finished jobs.
      if (data.deleted || !data.job) {
        state.jobs.delete(data.name);
        state.finished.delete(data.name);
      } else if (doneStatuses.has(data.job.status)) {
        finish(data.job);
      } else {
        noteJob(data.job);
        state.jobs.set(data.job.name, data.job);
      }
      break;
    case 'nodes':
      state.nodes.set(data.gpuType, data.nodes || []);
      break;
    case 'scheduler':
      state.schedulers.set(data.gpuType, data);
      break;
    default:
      return;
  }
  scheduleRender();
}

// finish keeps j, a finished job's view, among the finished jobs, and
// drops it from the live ones.
function finish(j) {
  noteJob(j);
  state.jobs.delete(j.name);
  state.finished.set(j.name, j);
}

// listFinished fetches the next pages of finished jobs (status
// state.listing.status, or every final status) from GET /api/v1/jobs:
// until pageRows more came, the list ended, or maxPagesPerClick pages. A
// fetch under way, or a list that ended, makes it do nothing; a listing
// replaced meanwhile (another status chosen) is abandoned. It draws the
// view when done; its caller, when it starts (the view may be drawing).
async function listFinished() {
  const l = state.listing;
  if (l.busy || l.next === '') return;
  l.busy = true;
  l.error = '';
  let added = 0;
  try {
    for (let n = 0; added < pageRows && n < maxPagesPerClick && l.next !== ''; n++) {
      const q = new URLSearchParams({ limit: String(pageRows) });
      if (l.status) q.set('status', l.status);
      if (l.next) q.set('continue', l.next);
      const res = await fetch(`/api/v1/jobs?${q}`, { headers: headers() });
      if (state.listing !== l) return;
      if (res.status === 410) {
        // The list's place expired: the next fetch starts it again
        // (the jobs already here are kept, not shown twice).
        l.next = null;
        throw new Error(`${await errorText(res)}; the list starts again from its first page`);
      }
      if (!res.ok) throw new Error(await errorText(res));
      const body = await res.json();
      if (state.listing !== l) return;
      for (const j of body.items || []) {
        if (!doneStatuses.has(j.status) || state.finished.has(j.name)) continue;
        finish(j);
        added++;
      }
      l.next = (body.metadata && body.metadata.continue) || '';
    }
  } catch (e) {
    l.error = `Finished jobs: ${e.message}`;
  } finally {
    l.busy = false;
    scheduleRender(true);
  }
}

// listStatus makes the finished jobs' listing ask for status ('' for
// every final status) from its first page.
function listStatus(status) {
  state.tables.finished.filter.status = status;
  if (state.listing.status !== status) {
    state.listing = { status, next: null, busy: false, error: '' };
    listFinished();
  }
  scheduleRender(true);
}

// listFinishedOnce fetches the first pages of finished jobs unless a view
// already asked for them.
function listFinishedOnce() {
  const l = state.listing;
  if (state.loaded && l.next === null && !l.busy && !l.error) listFinished();
}

// Voda names a job NAME-YYYYMMDD-hhmmss (-N): an address naming anything
// else names no job, and is not looked up.
const jobName = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?-\d{8}-\d{6}(-\d+)?$/;

// lookUp fetches a job neither live nor finished here (a bookmark, a
// link): the view shows it once it came.
async function lookUp(name) {
  state.lookups.set(name, 'pending');
  try {
    const res = await fetch(`/api/v1/jobs/${encodeURIComponent(name)}`, { headers: headers() });
    if (!res.ok) throw new Error(await errorText(res));
    const j = await res.json();
    if (doneStatuses.has(j.status)) finish(j);
    else if (!state.jobs.has(j.name)) { noteJob(j); state.jobs.set(j.name, j); }
    state.lookups.delete(name);
  } catch (e) {
    state.lookups.set(name, 'missing');
  }
  scheduleRender(true);
}

// noteJob gives a job its legend key, and its allocations their times in
// milliseconds.
function noteJob(j) {
  j.allocationTimes = (j.allocations || []).map((a) => Date.parse(a.time));
  if (!state.keys.has(j.name)) state.keys.set(j.name, legendKey(state.keys.size));
}

// serverNow is the server's time now: the snapshot's, advanced at the
// server's clock rate (faster than real time on a simulated cluster).
function serverNow() {
  const c = state.clock;
  return c.now + (Date.now() - c.wall) * c.rate;
}

// doneStatuses are the final statuses, spelled as api.Status spells them
// (internal/ui's TestStatusesMatchAPI checks).
const doneStatuses = new Set(['Completed', 'Failed', 'Canceled']);

// times returns a job's waiting, running and total seconds now: as of its
// view's asOf, advanced by the server's time since, on the side the job
// is on (none once it finished).
function times(j) {
  let d = 0;
  if (!doneStatuses.has(j.status) && !j.finishTime && j.asOf) d = Math.max(0, (serverNow() - Date.parse(j.asOf)) / 1000);
  const running = j.workers > 0;
  return {
    waiting: (j.waitingSeconds || 0) + (running ? 0 : d),
    running: (j.runningSeconds || 0) + (running ? d : 0),
    total: (j.totalSeconds || 0) + d,
  };
}

// tick advances the shown times (cells marked .tick) once a second
// without drawing the view again.
function tick() {
  if (document.hidden) return;
  for (const e of document.querySelectorAll('.tick')) {
    const j = anyJob(e.dataset.job);
    if (j) e.textContent = dur(times(j)[e.dataset.f]);
  }
}

// anyJob is the view of the job named name, live or finished; undefined
// if the page has none.
function anyJob(name) {
  return state.jobs.get(name) || state.finished.get(name);
}

function ticking(j, f) {
  return el('span', { class: 'tick', 'data-job': j.name, 'data-f': f, text: dur(times(j)[f]) });
}

function legendKey(i) {
  let s = '';
  i += 1;
  while (i > 0) { i -= 1; s = String.fromCharCode(65 + (i % 26)) + s; i = Math.floor(i / 26); }
  return s;
}

function colourIndex(name) {
  const k = state.keys.get(name);
  let n = 0;
  for (const ch of k || name) n = n * 26 + ch.charCodeAt(0);
  return n % palette.length;
}

async function errorText(res) {
  try {
    const body = await res.json();
    if (body && body.error) return `${res.status} ${body.error.reason}: ${body.error.message}`;
  } catch (e) { /* not JSON */ }
  return `${res.status} ${res.statusText}`;
}

function signIn(message) {
  const dlg = document.getElementById('login');
  const form = document.getElementById('login-form');
  document.getElementById('login-error').textContent = state.token ? message : '';
  return new Promise((resolve) => {
    form.onsubmit = (ev) => {
      ev.preventDefault();
      state.token = document.getElementById('login-token').value.trim();
      sessionStorage.setItem('voda-token', state.token);
      dlg.close();
      resolve();
    };
    if (!dlg.open) dlg.showModal();
  });
}

// ---- rendering -----------------------------------------------------------

let pending = false;
let lastRender = 0;
let renderMs = 0;
// scheduleRender draws the view again soon: at the next frame when now
// is true (the viewer did something), else at most every renderEvery ms.
function scheduleRender(now) {
  if (now) { pending = false; render(); return; }
  if (pending) return;
  pending = true;
  if (document.hidden) return;
  const wait = Math.max(0, lastRender + Math.max(renderEvery, 10 * renderMs) - Date.now());
  setTimeout(() => requestAnimationFrame(() => { if (pending) { pending = false; render(); } }), wait);
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k === 'style') {
      // Through the CSSOM: the page's Content-Security-Policy refuses style attributes.
      for (const decl of v.split(';')) {
        const c = decl.indexOf(':');
        if (c > 0) e.style.setProperty(decl.slice(0, c).trim(), decl.slice(c + 1).trim());
      }
    }
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

function svg(tag, attrs, ...children) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) if (c) e.append(c);
  return e;
}

const dateFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const timeShort = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });
const timeMedium = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });
const dayShort = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
const dateShort = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'short' });
function when(s) { return s ? dateFmt.format(new Date(s)) : '—'; }
// whenShort is when for a table cell: the time alone on the server's
// today, the day and time within its year, else a short date; the full
// date is the cell's tooltip.
function whenShort(s) {
  if (!s) return '—';
  const d = new Date(s);
  const now = new Date(serverNow());
  let fmt = dateShort;
  if (d.getFullYear() === now.getFullYear()) fmt = d.getMonth() === now.getMonth() && d.getDate() === now.getDate() ? timeShort : dayShort;
  return el('time', { datetime: s, title: dateFmt.format(d), text: fmt.format(d) });
}
function dur(sec) {
  if (sec === undefined || sec === null || Number.isNaN(sec)) return '—';
  const s = Math.round(sec);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  // No-break spaces keep each number with its unit where a cell wraps.
  return h ? `${h}\u00a0h ${m}\u00a0min` : m ? `${m}\u00a0min ${s % 60}\u00a0s` : `${s}\u00a0s`;
}
// measuredNow is the job's measured throughput at its current GPUs (its
// reports count training processes, one per GPU), or the last one
// measured; null if none.
function measuredNow(j) {
  const t = j.measured && j.measured.throughput;
  if (!t || !t.length) return null;
  return t.find((x) => x.workers === gpusHeld(j)) || t[t.length - 1];
}
function throughput(j) {
  const cur = measuredNow(j);
  return cur ? `${cur.epochsPerHour.toFixed(2)} epochs/h @${cur.workers}` : '—';
}
// throughputCell is throughput for the jobs table, whose header gives the
// unit.
function throughputCell(j) {
  const cur = measuredNow(j);
  if (!cur) return '—';
  return el('span', { title: throughput(j) }, `${cur.epochsPerHour.toFixed(2)} @${cur.workers}`);
}

// perWorker is a job's GPUs per worker (G): 1 from a server that does not
// say, one older than workers of several GPUs.
function perWorker(j) { return j.gpusPerWorker || 1; }
// gpusHeld is the GPUs a job holds now; a server that does not say G held
// one GPU per worker.
function gpusHeld(j) { return j.gpusPerWorker ? (j.gpus || 0) : (j.workers || 0); }
// allocationGPUs is the GPUs a job held in one of its allocations.
function allocationGPUs(j, a) { return a.gpus === undefined ? (a.workers || 0) * perWorker(j) : a.gpus; }
// workersCell is a jobs table's workers cell: the counts, and for workers
// of several GPUs what each holds (and, live, the GPUs held now) on a line
// of their own.
function workersCell(j, counts, live) {
  const g = perWorker(j);
  if (g === 1) return counts;
  return el('span', {}, counts, el('span', { class: 'per-worker', text: live ? `${gpusHeld(j)} GPUs, ${g} per worker` : `${g} GPUs per worker` }));
}
function plural(n, one, many) { return `${n} ${n === 1 ? one : many}`; }

function jobLink(name) {
  return el('a', { href: `#/jobs/${encodeURIComponent(name)}`, text: name });
}

function swatch(name) {
  const i = colourIndex(name);
  return el('span', { class: 'swatch', style: `background:${palette[i]};color:${textOn[i]}`, 'aria-hidden': 'true', text: state.keys.get(name) || '' });
}

function render() {
  const started = performance.now();
  try {
    draw();
    void document.body.offsetHeight; // style and layout now, to count them
  } catch (e) {
    // A view that fails to draw must not stop the page: the stream goes
    // on and the other views still work. The console keeps the error for
    // whoever debugs it (and fails the browser tests).
    console.error(e);
    document.getElementById('main').replaceChildren(el('h2', { text: 'This view failed' }),
      el('p', { class: 'error', text: String(e && e.message ? e.message : e) }), viewLinks());
  } finally {
    renderMs = performance.now() - started;
    lastRender = Date.now();
  }
}

// decode is decodeURIComponent for an address anyone may have written or
// cut short: a malformed percent escape leaves the text as it is.
function decode(s) {
  try {
    return decodeURIComponent(s);
  } catch (e) {
    return s;
  }
}

// route returns the view the address names: its path and, for a job's
// page, the job's name.
function route() {
  const path = location.hash.replace(/^#/, '') || '/';
  if (path.startsWith('/jobs/')) return { path, view: 'job', name: decode(path.slice(6)) };
  const views = { '/': 'cluster', '/jobs': 'jobs', '/finished': 'finished', '/timeline': 'timeline', '/settings': 'settings' };
  return { path, view: Object.hasOwn(views, path) ? views[path] : 'unknown' };
}

function draw() {
  const r = route();
  const path = r.path;
  for (const a of document.querySelectorAll('nav a')) {
    const target = a.getAttribute('href').slice(1);
    const current = target === '/' ? path === '/' : path === target || path.startsWith(`${target}/`);
    if (current) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  const main = document.getElementById('main');
  const active = document.activeElement;
  const keep = active && active.id && main.contains(active) ? { id: active.id, start: active.selectionStart } : null;
  let view;
  switch (r.view) {
    case 'job': view = jobView(r.name); break;
    case 'jobs': view = jobsView(); break;
    case 'finished': view = finishedView(); break;
    case 'timeline': view = timelineView(); break;
    case 'settings': view = settingsView(); break;
    case 'cluster': view = clusterView(); break;
    default: view = notFoundView(decode(path));
  }
  main.replaceChildren(...view);
  if (keep) {
    const again = document.getElementById(keep.id);
    if (again) { again.focus(); if (keep.start !== undefined && again.setSelectionRange) again.setSelectionRange(keep.start, keep.start); }
  }
}

// loading stands in for a view's data until the first snapshot is drawn.
function loading() {
  return el('p', { class: 'loading', text: 'Loading…' });
}

function viewLinks() {
  return el('p', {}, 'The views: ', el('a', { href: '#/', text: 'Cluster' }), ', ', el('a', { href: '#/jobs', text: 'Jobs' }), ', ',
    el('a', { href: '#/finished', text: 'Finished' }), ', ', el('a', { href: '#/timeline', text: 'Timeline' }), ', ',
    el('a', { href: '#/settings', text: 'Settings' }), '.');
}

// notFoundView answers an address that names no view, such as a link cut
// short or mistyped; the address is shown as text, never as markup.
function notFoundView(path) {
  return [el('h2', { text: 'Not found' }), el('p', { class: 'address' }, 'There is no view at ', el('code', { text: `#${path}` }), '.'), viewLinks()];
}

function clusterView() {
  const out = [el('h2', { text: 'Cluster' })];
  if (!state.loaded) return [...out, loading()];
  if (!state.nodes.size) out.push(el('p', { text: 'No GPU nodes yet.' }));
  const shown = new Set();
  for (const [gpuType, nodes] of [...state.nodes.entries()].sort()) {
    const total = nodes.reduce((n, x) => n + (x.gpus || 0), 0);
    const used = nodes.reduce((n, x) => n + holders(x).reduce((m, h) => m + h.gpus, 0), 0);
    out.push(el('h3', { text: `${gpuType}: ${used} of ${total} GPUs in use on ${nodes.length} nodes` }));
    const grid = el('div', { class: 'nodes', role: 'list', 'aria-label': `${gpuType} nodes` });
    for (const n of nodes) {
      const cls = ['node', n.cordoned ? 'cordoned' : '', n.ready === false ? 'notready' : ''].join(' ');
      const cells = [];
      for (const h of holders(n)) {
        for (let k = 0; k < h.gpus; k++) {
          if (h.job) {
            shown.add(h.job);
            const i = colourIndex(h.job);
            cells.push(el('a', { class: 'gpu', href: `#/jobs/${encodeURIComponent(h.job)}`, title: h.job, 'aria-label': `GPU of ${h.job}`, style: `background:${palette[i]};color:${textOn[i]}`, text: state.keys.get(h.job) || '' }));
          } else {
            cells.push(el('span', { class: 'gpu busy', title: 'in use by a job you may not see', 'aria-label': 'GPU in use', text: '·' }));
          }
        }
      }
      while (cells.length < (n.gpus || 0)) cells.push(el('span', { class: 'gpu free', title: 'free', 'aria-label': 'free GPU' }));
      grid.append(el('div', { class: cls, role: 'listitem', 'data-node': n.name },
        el('h3', { text: n.name },
          n.cordoned ? el('span', { class: 'badge cordoned', text: 'cordoned' }) : null,
          n.ready === false ? el('span', { class: 'badge notready', text: 'not ready' }) : null),
        el('div', { class: 'gpus' }, cells)));
    }
    out.push(grid);
  }
  if (shown.size) {
    out.push(el('ul', { class: 'legend', 'aria-label': 'Jobs holding GPUs' },
      [...shown].sort().map((name) => el('li', {}, swatch(name), jobLink(name)))));
  }
  out.push(...teamsPanel());
  out.push(...jobsView(true));
  return out;
}

// teamState says, in words, how a team's GPUs stand against its quota:
// borrowing when it holds more than its guarantee, owed when it holds
// less than min(demand, guarantee) while some of its jobs wait, else ''.
// n is how many GPUs it borrows or is owed.
function teamState(t) {
  const inUse = t.gpusInUse || 0;
  const guarantee = t.guarantee || 0;
  if (inUse > guarantee) {
    return { state: 'borrowing', n: inUse - guarantee, why: `holds ${plural(inUse, 'GPU', 'GPUs')}, ${inUse - guarantee} beyond its guarantee of ${guarantee}` };
  }
  const due = Math.min(t.demand || 0, guarantee);
  if (inUse < due && (t.waiting || 0) > 0) {
    return { state: 'owed', n: due - inUse, why: `holds ${plural(inUse, 'GPU', 'GPUs')} of the ${due} its guarantee gives it, with ${plural(t.waiting, 'job', 'jobs')} waiting` };
  }
  return { state: '', n: 0, why: '' };
}

// teamBar draws a team's GPUs in use against its entitlement (the grey
// track), with a mark at its guarantee; the numbers are its title and
// are in the table beside it.
function teamBar(t) {
  const W = 80; const H = 12;
  const inUse = t.gpusInUse || 0;
  const scale = Math.max(t.entitled || 0, inUse, t.guarantee || 0, 1);
  const x = (g) => (g / scale) * W;
  const label = `${plural(inUse, 'GPU', 'GPUs')} in use, entitled to ${t.entitled || 0}, guaranteed ${t.guarantee || 0}`;
  return svg('svg', { class: 'team-bar', width: W + 2, height: H + 2, viewBox: `-1 -1 ${W + 2} ${H + 2}`, role: 'img', 'aria-label': label },
    svg('title', { text: label }),
    svg('rect', { x: 0, y: 0, width: x(t.entitled || 0), height: H, fill: '#ddd' }),
    svg('rect', { x: 0, y: 3, width: x(inUse), height: H - 6, fill: palette[0], 'data-in-use': inUse }),
    svg('line', { x1: x(t.guarantee || 0), y1: -1, x2: x(t.guarantee || 0), y2: H + 1, stroke: '#000', 'stroke-width': 2, 'data-guarantee': t.guarantee || 0 }));
}

// The teams table's columns; the first is the team, with its state.
const teamColumns = [
  { label: 'in use', cell: (t) => [teamBar(t), ` ${t.gpusInUse || 0}`] },
  { label: 'guarantee', cell: (t) => String(t.guarantee || 0) },
  { label: 'entitled', cell: (t) => String(t.entitled || 0) },
  { label: 'limit', cell: (t) => (t.limit ? String(t.limit) : 'none') },
  // An admin's weight may be any fraction: four significant digits.
  { label: 'weight', cell: (t) => String(Number((t.weight ?? 1).toPrecision(4))) },
  { label: 'demand', cell: (t) => String(t.demand || 0) },
  { label: 'running', cell: (t) => String(t.running || 0) },
  { label: 'waiting', cell: (t) => String(t.waiting || 0) },
];

// teamsPanel draws, for each GPU type whose scheduler lists its teams,
// every team's GPUs against its quota, from the scheduler's last cycle.
// It draws nothing when no scheduler does: the server lists teams only to
// those who may see them.
function teamsPanel() {
  const types = [...state.schedulers.values()].filter((s) => s.teams && s.teams.length)
    .sort((a, b) => (a.gpuType < b.gpuType ? -1 : 1));
  if (!types.length) return [];
  const out = [el('h2', { text: 'Teams' })];
  for (const s of types) {
    const rows = s.teams.map((t) => {
      const st = teamState(t);
      const name = el('th', { scope: 'row', class: 'text' }, t.team,
        st.state ? [' ', el('span', { class: `badge ${st.state}`, title: st.why, text: `${st.state} ${st.n}` })] : null,
        t.quota ? null : el('span', { class: 'sub', text: 'default quota' }));
      return el('tr', { 'data-team': t.team, 'data-state': st.state }, name, teamColumns.map((c) => el('td', {}, c.cell(t))));
    });
    out.push(el('div', { class: 'scroll' }, el('table', { class: 'teams-table', 'data-teams': s.gpuType },
      el('caption', { text: `${s.gpuType}: ${plural(s.teams.length, 'team', 'teams')}, ${s.gpusInUse || 0} of ${s.gpus || 0} GPUs in use at the last cycle` }),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col', class: 'text', text: 'team' }), teamColumns.map((c) => el('th', { scope: 'col', text: c.label })))),
      el('tbody', {}, rows))));
  }
  out.push(el('p', { class: 'note', text: 'GPUs in use against entitlement (the grey track) and guarantee (the mark). Borrowing: more GPUs than its guarantee; owed: fewer than min(demand, guarantee) while its jobs wait.' }));
  return out;
}

// holders lists who holds a node's GPUs: [{job, gpus}], job empty when the
// viewer may not see it; a server that does not say a holder's GPUs gave
// each worker one.
function holders(n) {
  return (n.jobs || []).map((h) => ({ job: h.busy ? '' : (h.name || ''), gpus: (h.gpus === undefined ? h.workers : h.gpus) || 0 }));
}

// The jobs table's columns. Each cell has the class col-<key>, by which
// the style sheet hides the less useful columns on narrow screens (the
// job's page shows everything); the namespace then folds under the name.
const columns = [
  { key: 'name', label: 'job', text: true, cell: (j) => [swatch(j.name), jobLink(j.name), el('span', { class: 'fold', text: j.namespace })] },
  { key: 'namespace', label: 'namespace', text: true },
  { key: 'status', label: 'status', text: true, cell: statusCell },
  { key: 'workers', label: 'workers min/now/max', cell: (j) => workersCell(j, `${j.minWorkers}/${j.workers}/${j.maxWorkers}`, true) },
  { key: 'waitingSeconds', label: 'waiting', cell: (j) => ticking(j, 'waiting') },
  { key: 'runningSeconds', label: 'running', cell: (j) => ticking(j, 'running') },
  { key: 'totalSeconds', label: 'total', cell: (j) => ticking(j, 'total') },
  { key: 'queuePosition', label: 'queue', cell: (j) => (j.queuePosition ? String(j.queuePosition) : '—') },
  { key: 'estimatedStart', label: 'est. start', cell: (j) => whenShort(j.estimatedStart) },
  { key: 'estimatedFinish', label: 'est. finish', cell: (j) => whenShort(j.estimatedFinish) },
  { key: 'throughput', label: 'measured epochs/h', cell: throughputCell },
  { key: 'progress', label: 'progress', cell: (j) => `${Math.round((j.progress || 0) * 100)} %` },
];

// The finished jobs table's columns: what is over for good, and when.
const finishedColumns = [
  ...columns.slice(0, 3),
  { key: 'maxWorkers', label: 'workers min/max', cell: (j) => workersCell(j, `${j.minWorkers}/${j.maxWorkers}`, false) },
  { key: 'submitTime', label: 'submitted', cell: (j) => whenShort(j.submitTime) },
  { key: 'finishTime', label: 'finished', cell: (j) => whenShort(j.finishTime) },
  ...columns.slice(4, 7),
  columns[columns.length - 1],
];

// statusCell shows a job's status and, where there is one, its reason; the
// reason's tooltip is the message (what the job needs, what there is),
// which the job's page shows in full.
function statusCell(j) {
  if (!j.reason) return j.status;
  return el('span', {}, `${j.status} `, el('span', { class: 'reason', title: j.message || j.reason, text: j.reason }));
}

function sortValue(j, key) {
  switch (key) {
    case 'throughput': { const cur = measuredNow(j); return cur ? cur.epochsPerHour : undefined; }
    case 'waitingSeconds': return times(j).waiting;
    case 'runningSeconds': return times(j).running;
    case 'totalSeconds': return times(j).total;
    case 'submitTime': case 'finishTime': return j[key] ? Date.parse(j[key]) : undefined;
    default: return j[key];
  }
}

// jobsView shows the live jobs (compact: under the cluster view, with
// controls of their own).
function jobsView(compact) {
  const out = [el('h2', { text: 'Jobs' })];
  if (!state.loaded) return [...out, loading()];
  const conf = state.tables.live;
  const jobs = [...state.jobs.values()];
  out.push(...jobsTable({
    jobs, conf, id: 'jobs', suffix: compact ? '-c' : '', cols: columns, noun: 'jobs',
    statuses: [...new Set(jobs.map((j) => j.status))].sort(),
    onStatus: (v) => { conf.filter.status = v; scheduleRender(true); },
  }));
  out.push(el('p', { class: 'note' }, 'Submitted, waiting and running jobs; those that finished are under ', el('a', { href: '#/finished', text: 'Finished' }), '.'));
  return out;
}

// finishedView shows the finished jobs the page has: listed from the
// server page by page as the viewer asks, and those seen finishing.
function finishedView() {
  const out = [el('h2', { text: 'Finished jobs' })];
  if (!state.loaded) return [...out, loading()];
  listFinishedOnce();
  const l = state.listing;
  const conf = state.tables.finished;
  out.push(...jobsTable({
    jobs: [...state.finished.values()], conf, id: 'finished', suffix: '-f', cols: finishedColumns, noun: 'finished jobs here',
    statuses: [...doneStatuses], onStatus: listStatus,
    // "Show more" shows more of the rows here, and past them fetches
    // the next page.
    more: (shown, rows) => (shown >= rows && l.next === '' ? null : el('p', { class: 'more' }, `Showing ${shown}. `,
      el('button', {
        type: 'button', id: 'more-f', disabled: l.busy, text: 'Show more',
        // Drawn at once: the rows, or "Loading…" and no second click.
        onclick: () => { conf.limit = shown + pageRows; if (shown >= rows) listFinished(); scheduleRender(true); },
      }))),
  }));
  if (l.busy) out.push(el('p', { class: 'loading', text: 'Loading finished jobs…' }));
  if (l.error) out.push(el('p', { class: 'error', role: 'alert', text: l.error }));
  if (l.next === '' && !l.busy) out.push(el('p', { class: 'note', id: 'finished-end', text: 'Every finished job the server keeps is here.' }));
  return out;
}

// jobsTable draws jobs as a table under its filters and returns them:
// conf is its state.tables entry (order, rows shown, filter), id the
// table's, suffix that of its controls, cols its columns, noun what its
// caption counts, statuses the status filter's choices and onStatus what
// choosing one does; more, if given, draws what follows rows shown of
// rows, in place of the buttons that show the rest.
function jobsTable({ jobs, conf, id, suffix, cols, noun, statuses, onStatus, more }) {
  const out = [el('div', { class: 'filters' },
    el('label', {}, 'Filter ', el('input', { id: `filter${suffix}`, type: 'search', value: conf.filter.text, placeholder: 'name, namespace, application', oninput: (e) => { conf.filter.text = e.target.value; scheduleRender(true); } })),
    el('label', {}, 'Status ', el('select', { id: `status${suffix}`, onchange: (e) => onStatus(e.target.value) },
      el('option', { value: '', text: 'all' }), statuses.map((s) => el('option', { value: s, text: s, selected: s === conf.filter.status })))))];
  const text = conf.filter.text.toLowerCase();
  const rows = jobs.filter((j) =>
    (!conf.filter.status || j.status === conf.filter.status) &&
    (!text || [j.name, j.namespace, j.application].some((v) => v && v.toLowerCase().includes(text))));
  const { key, dir } = conf.sort;
  const keyed = rows.map((j) => ({ j, v: sortValue(j, key) }));
  keyed.sort((a, b) => {
    const va = a.v;
    const vb = b.v;
    if (va === vb) return a.j.name < b.j.name ? -1 : 1;
    if (va === undefined || va === null) return 1;
    if (vb === undefined || vb === null) return -1;
    return (va < vb ? -1 : 1) * dir;
  });
  const shown = keyed.slice(0, conf.limit).map((k) => k.j);
  const cls = (c) => `col-${c.key}${c.text ? ' text' : ''}`;
  const head = el('tr', {}, cols.map((c) => el('th', { scope: 'col', class: cls(c), 'aria-sort': c.key === key ? (dir > 0 ? 'ascending' : 'descending') : false },
    el('button', { type: 'button', text: c.label, onclick: () => { conf.sort = { key: c.key, dir: c.key === key ? -dir : 1 }; scheduleRender(true); } }))));
  const body = shown.map((j) => el('tr', { 'data-job': j.name }, cols.map((c, i) => {
    const v = c.cell ? c.cell(j) : (j[c.key] ?? '');
    return i === 0 ? el('th', { scope: 'row', class: cls(c) }, v) : el('td', { class: cls(c) }, v);
  })));
  out.push(el('div', { class: 'scroll' }, el('table', { id, class: 'jobs-table' },
    el('caption', { text: `${rows.length} of ${jobs.length} ${noun}` }), el('thead', {}, head), el('tbody', {}, body))));
  if (more) {
    out.push(more(shown.length, rows.length));
  } else if (shown.length < rows.length) {
    out.push(el('p', { class: 'more' }, `Showing the first ${shown.length}. `,
      el('button', { type: 'button', id: `more${suffix}`, text: `Show ${Math.min(pageRows, rows.length - shown.length)} more`, onclick: () => { conf.limit += pageRows; scheduleRender(true); } }), ' ',
      el('button', { type: 'button', id: `all${suffix}`, text: `Show all ${rows.length}`, onclick: () => { conf.limit = Infinity; scheduleRender(true); } })));
  }
  return out;
}

function jobView(name) {
  const j = anyJob(name);
  if (!j) {
    // Neither live nor finished here: looked up once, if it can be a
    // job's name.
    const look = state.lookups.get(name);
    if (state.loaded && look === undefined && jobName.test(name)) lookUp(name);
    const missing = state.loaded && (state.lookups.get(name) || 'missing') === 'missing';
    return [el('h2', { text: name }), missing ? el('p', { text: 'No such job, or not one you may see.' }) : loading()];
  }
  const out = [el('h2', {}, swatch(name), name)];
  const rows = [
    ['status', j.status + (j.reason ? ` (${j.reason})` : '')], ...(j.message ? [['message', j.message]] : []), ['namespace', j.namespace], ['kind', j.kind], ['GPU type', j.gpuType],
    ['workers', `${j.workers} (min ${j.minWorkers}, max ${j.maxWorkers}, requested ${j.requestedWorkers})`],
    ...(perWorker(j) > 1 ? [['GPUs per worker', String(perWorker(j))]] : []),
    ['GPUs held', perWorker(j) > 1 ? `${gpusHeld(j)} (${plural(j.workers, 'worker', 'workers')} × ${perWorker(j)})` : String(gpusHeld(j))],
    ['application', j.application || '—'], ['submitted', when(j.submitTime)], ['first start', when(j.firstStart)],
    ['waiting / running / total', [ticking(j, 'waiting'), ' / ', ticking(j, 'running'), ' / ', ticking(j, 'total')]],
    ['queue position', j.queuePosition ? String(j.queuePosition) : '—'], ['estimated start', when(j.estimatedStart)],
    ['estimated finish', when(j.estimatedFinish)], ['remaining (one GPU)', dur(j.remainingSeconds)],
    ['restarts', String(j.restarts)], ['measured', throughput(j)],
  ];
  out.push(el('dl', { class: 'details' }, rows.map(([k, v]) => [el('dt', { text: k }), typeof v === 'string' ? el('dd', { text: v }) : el('dd', {}, v)])));
  out.push(el('p', {}, el('label', {}, 'Progress ', el('progress', { max: '1', value: String(j.progress || 0) })), ` ${Math.round((j.progress || 0) * 100)} %`));
  out.push(el('h3', { text: 'Placement' }));
  const pl = Object.entries(j.placement || {}).sort();
  const g = perWorker(j);
  out.push(pl.length ? el('table', {}, el('caption', { text: 'Workers per node now' }),
    el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'node' }), el('th', { scope: 'col', text: 'workers' }), el('th', { scope: 'col', text: 'GPUs' }))),
    el('tbody', {}, pl.map(([n, w]) => el('tr', {}, el('th', { scope: 'row', class: 'text', text: n }), el('td', { text: String(w) }), el('td', { text: String(w * g) })))))
    : el('p', { text: 'No GPUs now.' }));
  const hist = j.allocations || [];
  out.push(el('h3', { text: 'Placement history' }));
  if (!hist.length) out.push(el('p', { text: 'It never held GPUs.' }));
  else {
    if (hist.length >= 64) out.push(el('p', { text: 'The newest 64 changes; older ones are not kept.' }));
    out.push(el('ol', { id: 'placement-history' }, hist.map((a, i) => el('li', {},
      el('time', { datetime: a.time, text: when(a.time) }),
      `: ${a.workers ? `${allocationHeld(j, a)} (${Object.entries(a.placement || {}).sort().map(([n, w]) => `${n}×${w}`).join(', ')})` : 'no GPUs'}`,
      i + 1 < hist.length ? ` for ${dur((j.allocationTimes[i + 1] - j.allocationTimes[i]) / 1000)}` : ''))));
  }
  out.push(el('h3', { text: 'Estimated speedup' }));
  out.push(speedupChart(j.speedup || []));
  return out;
}

// allocationHeld says what a job held in one allocation: its GPUs, and its
// workers when each holds several.
function allocationHeld(j, a) {
  const gpus = plural(allocationGPUs(j, a), 'GPU', 'GPUs');
  return perWorker(j) > 1 ? `${gpus}, ${plural(a.workers, 'worker', 'workers')}` : gpus;
}

function speedupChart(s) {
  if (s.length < 2) return el('p', { text: 'No estimate yet.' });
  const W = 420; const H = 220; const L = 40; const B = 30;
  const maxK = s.length - 1; const maxS = Math.max(...s, maxK * 0.25, 1);
  const x = (k) => L + (k / maxK) * (W - L - 10);
  const y = (v) => H - B - (v / maxS) * (H - B - 10);
  const pts = s.map((v, k) => `${x(k)},${y(v)}`).join(' ');
  return svg('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'speedup-title' },
    svg('title', { id: 'speedup-title', text: `Estimated speedup over one GPU for 1 to ${maxK} GPUs; at ${maxK}: ${s[maxK].toFixed(2)}` }),
    svg('line', { x1: L, y1: H - B, x2: W - 10, y2: H - B, stroke: '#555' }),
    svg('line', { x1: L, y1: 10, x2: L, y2: H - B, stroke: '#555' }),
    svg('line', { x1: x(0), y1: y(0), x2: x(maxK), y2: y(Math.min(maxK, maxS)), stroke: '#999', 'stroke-dasharray': '4 4' }),
    svg('polyline', { points: pts, fill: 'none', stroke: palette[0], 'stroke-width': 2 }),
    svg('text', { x: W / 2, y: H - 5, 'text-anchor': 'middle', text: 'GPUs' }),
    svg('text', { x: 5, y: 12, text: `speedup (max ${maxS.toFixed(1)})` }),
    svg('text', { x: x(maxK), y: H - B + 14, 'text-anchor': 'end', text: String(maxK) }));
}

// timelineView draws the GPUs each job held over the chosen span, stacked
// as the simulator's plot is, from the jobs' allocation histories: the
// span is cut into timelineSteps steps and each job drawn with what it
// held at each step's start.
function timelineView() {
  const out = [el('h2', { text: 'GPUs per job over time' }),
    el('div', { class: 'filters' }, el('label', {}, 'Span ', el('select', { id: 'span', onchange: (e) => { state.window = Number(e.target.value); scheduleRender(true); } },
      windows.map(([label, ms]) => el('option', { value: String(ms), text: label, selected: ms === state.window })))))];
  if (!state.loaded) return [...out, loading()];
  // The live jobs and the finished ones here: the first page of those
  // is fetched for the timeline, and more under Finished.
  listFinishedOnce();
  const all = [...state.jobs.values(), ...state.finished.values()];
  const t1 = serverNow();
  let t0 = t1 - state.window;
  if (!state.window) {
    t0 = t1 - 60e3;
    for (const j of all) if (j.allocationTimes && j.allocationTimes.length) t0 = Math.min(t0, j.allocationTimes[0]);
    t0 = Math.max(t0, t1 - week);
  }
  const step = (t1 - t0) / timelineSteps;
  const totalGPUs = Math.max(1, [...state.nodes.values()].flat().reduce((n, x) => n + (x.gpus || 0), 0));
  const jobs = [];
  let truncated = 0;
  for (const j of all.sort((a, b) => (a.submitTime < b.submitTime ? -1 : a.submitTime > b.submitTime ? 1 : a.name < b.name ? -1 : 1))) {
    const ts = j.allocationTimes || [];
    const as = j.allocations || [];
    if (!as.length || (ts[ts.length - 1] < t0 && !allocationGPUs(j, as[as.length - 1]))) continue;
    if (as.length >= 64 && ts[0] > t0) truncated++;
    const w = new Array(timelineSteps).fill(0);
    let k = 0;
    let held = false;
    for (let i = 0; i < timelineSteps; i++) {
      const t = t0 + i * step;
      while (k < ts.length && ts[k] <= t) k++;
      w[i] = k > 0 ? allocationGPUs(j, as[k - 1]) : 0;
      held = held || w[i] > 0;
    }
    if (held) jobs.push({ name: j.name, w });
  }
  if (!jobs.length) { out.push(el('p', { text: 'No job held GPUs in this span.' }), finishedNote()); return out; }
  const W = 900; const H = 320; const L = 50; const B = 30;
  const x = (i) => L + (i / timelineSteps) * (W - L - 10);
  const base = new Array(timelineSteps).fill(0);
  let hi = 0;
  const shapes = jobs.map((job) => {
    const lo = base.slice();
    for (let i = 0; i < timelineSteps; i++) base[i] += job.w[i];
    return { job, lo, up: base.slice() };
  });
  for (const v of base) hi = Math.max(hi, v);
  const top = Math.max(totalGPUs, hi);
  const y = (g) => H - B - (g / top) * (H - B - 10);
  const g = svg('svg', { width: '100%', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'timeline-title', id: 'timeline' },
    svg('title', { id: 'timeline-title', text: `GPUs held per job from ${when(t0)} to ${when(t1)}: ${jobs.length} jobs, at most ${hi} of ${totalGPUs} GPUs at once` }),
    svg('line', { x1: L, y1: H - B, x2: W - 10, y2: H - B, stroke: '#555' }),
    svg('line', { x1: L, y1: 10, x2: L, y2: H - B, stroke: '#555' }),
    svg('line', { x1: L, y1: y(totalGPUs), x2: W - 10, y2: y(totalGPUs), stroke: '#999', 'stroke-dasharray': '4 4' }),
    svg('text', { x: 5, y: y(totalGPUs) - 3, text: `${totalGPUs} GPUs` }),
    svg('text', { x: L, y: H - 8, text: when(t0) }),
    svg('text', { x: W - 10, y: H - 8, 'text-anchor': 'end', text: when(t1) }));
  const timeFmt = t1 - t0 < 2 * 3600e3 ? timeMedium : timeShort;
  for (const q of [1, 2, 3]) {
    const xq = x((q * timelineSteps) / 4);
    g.append(svg('line', { x1: xq, y1: H - B, x2: xq, y2: H - B + 4, stroke: '#555' }),
      svg('text', { x: xq, y: H - B + 15, 'text-anchor': 'middle', text: timeFmt.format(new Date(t0 + ((t1 - t0) * q) / 4)) }));
  }
  for (const { job, lo, up } of shapes) {
    // One polygon per job: its upper edge forwards, its lower edge back,
    // as steps.
    const pts = [];
    for (let i = 0; i < timelineSteps; i++) pts.push(`${x(i)},${y(up[i])}`, `${x(i + 1)},${y(up[i])}`);
    for (let i = timelineSteps - 1; i >= 0; i--) pts.push(`${x(i + 1)},${y(lo[i])}`, `${x(i)},${y(lo[i])}`);
    const i = colourIndex(job.name);
    g.append(svg('polygon', { points: pts.join(' '), fill: palette[i], stroke: '#fff', 'stroke-width': 0.5, 'data-job': job.name },
      svg('title', { text: `${job.name}: up to ${Math.max(...job.w)} GPUs` })));
  }
  out.push(g);
  out.push(el('p', { class: 'note', text: `Drawn at ${timelineSteps} steps of ${dur(step / 1000)}; a change shows from the step after it. Each band is one job, oldest at the bottom.` +
    (truncated ? ` ${truncated} jobs changed more than 64 times; their older changes are not kept and are not drawn.` : '') }));
  out.push(finishedNote());
  out.push(el('ul', { class: 'legend', 'aria-label': 'Jobs in the timeline' }, jobs.map((j) => el('li', {}, swatch(j.name), jobLink(j.name)))));
  return out;
}

// finishedNote says which finished jobs a view drew: those here, listed
// page by page under Finished.
function finishedNote() {
  const l = state.listing;
  const more = l.next === '' ? '' : ' (more under Finished)';
  return el('p', { class: 'note' }, `From the ${state.jobs.size} live jobs and the ${state.finished.size} finished ones here${more}${l.busy ? '; loading finished jobs…' : ''}. `,
    el('a', { href: '#/finished', text: 'Finished jobs' }));
}

let algorithms = null;
function settingsView() {
  const out = [el('h2', { text: 'Schedulers' })];
  if (state.flash) out.push(el('p', { role: 'alert', class: state.flash.startsWith('Saved') ? 'ok' : 'error', id: 'settings-result', text: state.flash }));
  if (!algorithms) {
    algorithms = [];
    fetch('/api/v1/algorithms', { headers: headers() }).then((r) => r.json()).then((b) => { algorithms = (b.items || []).map((a) => a.name); scheduleRender(); }).catch(() => {});
  }
  for (const [gpuType, s] of [...state.schedulers.entries()].sort()) {
    const algo = el('select', { id: `algo-${gpuType}`, 'aria-label': `algorithm of ${gpuType}` },
      (algorithms.length ? algorithms : [s.algorithm]).map((a) => el('option', { value: a, text: a, selected: a === s.algorithm })));
    const rate = el('input', { id: `rate-${gpuType}`, type: 'number', min: '0', step: '1', value: String(s.rateLimitSeconds), 'aria-label': `rate limit of ${gpuType} in seconds` });
    out.push(el('section', { 'data-scheduler': gpuType },
      el('h3', { text: gpuType }),
      el('p', {}, `Algorithm ${s.algorithm}, at most one cycle every ${s.rateLimitSeconds} s; last cycle ${when(s.lastCycle)}.`),
      el('p', {}, el('label', {}, 'Algorithm ', algo), ' ',
        el('button', { type: 'button', id: `set-algo-${gpuType}`, onclick: () => put(`/api/v1/schedulers/${encodeURIComponent(gpuType)}/algorithm`, { algorithm: algo.value }) , text: 'Set algorithm' })),
      el('p', {}, el('label', {}, 'Rate limit (s) ', rate), ' ',
        el('button', { type: 'button', id: `set-rate-${gpuType}`, onclick: () => put(`/api/v1/schedulers/${encodeURIComponent(gpuType)}/ratelimit`, { seconds: Number(rate.value) }), text: 'Set rate limit' }))));
  }
  if (!state.schedulers.size) out.push(state.loaded ? el('p', { text: 'No schedulers yet.' }) : loading());
  return out;
}

async function put(url, body) {
  try {
    const res = await fetch(url, { method: 'PUT', headers: headers({ 'Content-Type': 'application/json' }), body: JSON.stringify(body) });
    state.flash = res.ok ? 'Saved.' : `Refused: ${await errorText(res)}`;
  } catch (e) {
    state.flash = `Failed: ${e.message}`;
  }
  scheduleRender();
}

document.addEventListener('visibilitychange', () => { if (!document.hidden) scheduleRender(true); });
window.addEventListener('hashchange', () => { state.flash = ''; render(); document.getElementById('main').focus(); });
follow();
render();
setInterval(tick, 1000);
// The timeline's right edge is now: it moves on between events.
setInterval(() => { if (location.hash === '#/timeline') scheduleRender(); }, 10000);
