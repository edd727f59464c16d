// The Digipology table page (docs/table.md). Plain JavaScript, no build
// step, nothing from the network but this server's own API. The page is
// never authoritative: it draws the viewer's observation, shows the
// expected result of the actions seed 000 marks "predict initially", and
// takes whatever the server says next.
'use strict';

/** Action types shown at once, before the server answers (seed 000). */
const PREDICTED = new Set([
  'entity.grab', 'entity.drop', 'entity.flip', 'button.press',
  'counter.add', 'counter.set', 'prompt.respond',
]);
/** A card's size in table units. */
const CARD = { w: 1.6, h: 2.2 };
/** Log entries kept on the page. */
const LOG_MAX = 400;
/** How far a pointer moves before a press becomes a drag (px). */
const DRAG_PX = 5;
/** Two clicks on one piece within this many milliseconds are a double click. */
const DOUBLE_CLICK_MS = 500;
/** How long a rolled-back piece stays marked (ms). */
const FLASH_MS = 1500;

/** What the browser tests read: redraw times after an event arrived. */
const probe = (window.__digipology = { frames: [], fetchMs: [], renderMs: [] });
/** Measurements kept (the latest). */
const PROBE_MAX = 1000;

function measure(list, ms) {
  list.push(ms);
  if (list.length > PROBE_MAX) list.splice(0, list.length - PROBE_MAX);
}

// ---- small helpers -------------------------------------------------------

function el(tag, attrs, ...kids) {
  return fill(document.createElement(tag), attrs, kids);
}

function sv(tag, attrs, ...kids) {
  return fill(document.createElementNS('http://www.w3.org/2000/svg', tag), attrs, kids);
}

function fill(node, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    node.append(kid instanceof Node ? kid : String(kid));
  }
  return node;
}

/** Calls the API; a refusal throws an Error with the server's code. */
async function api(method, path, { token, body } = {}) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    const err = new Error('the server cannot be reached');
    err.code = 'network';
    throw err;
  }
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch (_) { /* not JSON */ }
  if (!res.ok) {
    const err = new Error((json && json.message) || `${res.status} ${res.statusText}`);
    err.code = (json && json.code) || String(res.status);
    throw err;
  }
  return json;
}

/** How a canonical value reads on the page. */
function show(v) {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The match has ended (a running match's result is the seat's status). */
function over(result) {
  return !!result && (result.status === 'match_over' || result.status === 'match_aborted');
}

function seconds(ms) {
  return ms === null || ms === undefined ? '—' : `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
}

/** A piece's name on the table: its label, name or rank and suit. */
function labelOf(e) {
  const p = e.props || {};
  if (p.label !== undefined) return show(p.label);
  if (p.name !== undefined) return show(p.name);
  if (p.rank !== undefined) return `${show(p.rank)}${p.suit !== undefined ? ` ${show(p.suit)}` : ''}`;
  if (p.value !== undefined) return show(p.value);
  return e.id;
}

/** Seat tokens this browser holds, per match (localStorage). */
const seats = {
  all(matchId) {
    try { return JSON.parse(localStorage.getItem(`digipology.seats.${matchId}`)) || {}; } catch (_) { return {}; }
  },
  put(matchId, seat, token) {
    const all = seats.all(matchId);
    all[seat] = token;
    localStorage.setItem(`digipology.seats.${matchId}`, JSON.stringify(all));
  },
};

function myName() {
  return localStorage.getItem('digipology.name') || '';
}

// ---- routing ---------------------------------------------------------------

let current = null;

function hashParams() {
  return new URLSearchParams(location.hash.replace(/^#/, ''));
}

function go(params) {
  location.hash = new URLSearchParams(params).toString();
}

function route() {
  if (current) current.close();
  current = null;
  const p = hashParams();
  // A seat link (`#match=…&seat=…&token=…`): keep the token, drop it from
  // the address bar and the history.
  // A token this browser already holds for the seat is kept: a link
  // cannot swap it for another.
  if (p.get('match') && p.get('seat') && p.get('token')) {
    if (!seats.all(p.get('match'))[p.get('seat')]) seats.put(p.get('match'), p.get('seat'), p.get('token'));
    p.delete('token');
    history.replaceState(null, '', `#${p.toString()}`);
  }
  const app = document.getElementById('app');
  app.replaceChildren();
  if (p.get('match')) current = new Table(app, p);
  else lobby(app).catch((e) => app.append(el('p', { class: 'notice bad', text: `The lobby failed: ${e.message}` })));
}

window.addEventListener('hashchange', route);
window.addEventListener('DOMContentLoaded', route);

// ---- the lobby -------------------------------------------------------------

async function lobby(app) {
  document.title = 'Digipology';
  const name = el('input', {
    id: 'name', value: myName(), placeholder: 'your name', 'aria-label': 'Your name', maxlength: 40,
    oninput: (e) => localStorage.setItem('digipology.name', e.target.value),
  });
  app.append(el('header', { class: 'bar' }, el('h1', { text: 'Digipology' }),
    el('label', {}, 'Name ', name)),
  el('div', { class: 'notice bad', id: 'lobby-error', role: 'alert', hidden: true }));
  const list = el('main', { class: 'games' });
  app.append(list);
  const games = await api('GET', '/games');
  for (const g of games) list.append(gameCard(g));
}

function gameCard(g) {
  const matches = el('ul', { 'aria-label': `${g.name || g.id} matches` });
  const card = el('section', { class: 'game', 'data-game': g.id },
    el('h2', { text: g.name || g.id }),
    el('p', { class: 'muted', text: `${g.seats.length} seats: ${g.seats.join(', ')}` }),
    el('div', { class: 'buttons' },
      el('button', { onclick: tryIt(() => seatMe(`/games/${g.id}/enqueue`, { name: myName() || undefined })) }, 'Join a match'),
      el('button', { onclick: tryIt(() => seatMe(`/games/${g.id}/enqueue`, { name: myName() || undefined, bots: true })) }, 'Play the bots'),
      el('button', { onclick: tryIt(() => designerTable(g)) }, 'Designer table')),
    matches);
  api('GET', `/games/${g.id}/matches?limit=10`).then((rows) => {
    for (const m of rows) matches.append(matchRow(m));
    if (!rows.length) matches.append(el('li', { class: 'muted', text: 'no matches yet' }));
  }).catch(() => {});
  return card;
}

function matchRow(m) {
  const row = el('li', {}, el('span', { text: `${m.matchId} · ${m.status}` }));
  const mine = seats.all(m.matchId);
  for (const s of m.seats) {
    if (mine[s.seat]) row.append(el('button', { onclick: () => go({ match: m.matchId, seat: s.seat }) }, `Play as ${s.seat}`));
    else if (m.status === 'open' && !s.taken && !m.designer) {
      row.append(el('button', { onclick: tryIt(() => seatMe(`/matches/${m.matchId}/join`, { name: myName() || undefined, seat: s.seat })) }, `Take seat ${s.seat}`));
    }
  }
  if (m.status !== 'open') row.append(el('button', { onclick: () => go({ match: m.matchId, watch: '' }) }, 'Watch'));
  if (m.status === 'finished') row.append(el('button', { onclick: () => go({ match: m.matchId, replay: '' }) }, 'Replay'));
  return row;
}

/** Runs a lobby button's work; a refusal shows at the top of the page. */
function tryIt(work) {
  return () => work().catch((e) => {
    const box = document.getElementById('lobby-error');
    if (box) { box.hidden = false; box.textContent = `${e.code}: ${e.message}`; }
  });
}

async function seatMe(path, body) {
  const j = await api('POST', path, { body });
  seats.put(j.matchId, j.seat, j.token);
  go({ match: j.matchId, seat: j.seat });
}

/** A designer's table: a match of its own, this page holding every seat
 * (the seat switcher shows each seat's own view). */
async function designerTable(g) {
  const m = await api('POST', `/games/${g.id}/matches`, { body: {} });
  let first = null;
  for (const seat of g.seats) {
    const j = await api('POST', `/matches/${m.matchId}/join`, { body: { name: `${myName() || 'designer'} (${seat})`, seat } });
    seats.put(j.matchId, j.seat, j.token);
    first = first || j.seat;
  }
  go({ match: m.matchId, seat: first });
}

// ---- predictions -----------------------------------------------------------

/** The view as it will be once `p` is accepted (seed 000's prediction). */
function predict(view, p, me) {
  const e = p.payload.entityId !== undefined ? view.entities[p.payload.entityId] : null;
  const c = e && e.components ? e.components : {};
  switch (p.type) {
    case 'entity.grab':
      if (e) e.heldBy = me;
      break;
    case 'entity.drop':
      if (!e) break;
      e.heldBy = null;
      c.transform = p.payload.transform;
      for (const other of Object.values(view.entities)) {
        const items = other.components && other.components.container && other.components.container.items;
        if (Array.isArray(items) && items.includes(e.id)) other.components.container.items = items.filter((i) => i !== e.id);
      }
      for (const st of Object.values(view.stacks || {})) st.items = (st.items || []).filter((i) => i !== e.id);
      break;
    case 'entity.flip':
      if (c.flippable) c.flippable.flipped = !c.flippable.flipped;
      break;
    case 'counter.add':
    case 'counter.set':
      if (c.counter) {
        const k = c.counter;
        let v = p.type === 'counter.add' ? k.value + p.payload.amount : p.payload.value;
        if (k.min !== null && k.min !== undefined) v = Math.max(k.min, v);
        if (k.max !== null && k.max !== undefined) v = Math.min(k.max, v);
        k.value = v;
      }
      break;
    case 'button.press':
      if (e) e.pressed = true;
      break;
    case 'prompt.respond': {
      const pr = view.prompts && view.prompts[p.payload.promptId];
      if (pr) { pr.status = 'answered'; pr.response = p.payload.response; }
      break;
    }
    default:
  }
}

/** What kind of piece an entity is drawn as. */
function kindOf(e) {
  const c = e.components || {};
  if (c.zone) return 'zone';
  if (c.snap_point) return 'snap';
  if (c.deck || (c.container && c.transform)) return 'deck';
  if (c.die) return 'die';
  if (c.counter) return 'counter';
  if (c.button) return 'button';
  if (c.text) return 'textent';
  if (c.flippable || c.stackable) return 'card';
  return 'token';
}

function actionLabel(a) {
  const p = a.payload || {};
  switch (a.type) {
    case 'entity.flip': return 'Flip';
    case 'entity.grab': return 'Pick up';
    case 'die.roll': return 'Roll';
    case 'button.press': return 'Press';
    case 'deck.shuffle': return 'Shuffle';
    case 'counter.add': return p.amount > 0 ? `+${p.amount}` : String(p.amount);
    case 'counter.set': return `Set ${p.value}`;
    case 'prompt.respond': return show(p.response);
    default: {
      const extra = Object.entries(p).filter(([k]) => !['entityId', 'deckId', 'stackId'].includes(k));
      return `${a.type}${extra.length ? ` ${extra.map(([k, v]) => `${k}=${show(v)}`).join(' ')}` : ''}`;
    }
  }
}

/** A container's items as the viewer sees them: ids, or `null` for an
 * item it cannot look at (another seat's hand, a hidden pile shows only
 * how many it holds, and which items were revealed to the viewer — not
 * where they lie, so they are drawn first). */
function contents(container) {
  if (Array.isArray(container.items)) return container.items;
  const list = new Array(container.count || 0).fill(null);
  (container.shown || []).forEach((id, i) => { if (i < list.length) list[i] = id; });
  return list;
}

/** Runs `draw` (which rebuilds `box`), keeping the keyboard focus on the
 * control of the same id or piece when it had it. */
function keepFocus(box, draw) {
  const a = document.activeElement;
  const key = a && box.contains(a) ? (a.id ? `#${CSS.escape(a.id)}` : a.dataset && a.dataset.id ? `[data-id="${CSS.escape(a.dataset.id)}"]` : null) : null;
  draw();
  if (key) {
    const again = box.querySelector(key);
    if (again) again.focus({ preventScroll: true });
  }
}

/** Puts `nodes` in `box` unless it shows the same already: a control is
 * not replaced under the pointer (a click pressed on one node and
 * released on its replacement is lost) when nothing about it changed. */
function swap(box, nodes) {
  const html = nodes.map((n) => n.outerHTML).join('');
  if (box.drawn === html) return;
  box.drawn = html;
  box.replaceChildren(...nodes);
}

/** Shows (or hides) a log line's event as JSON. */
function showRaw(li, on) {
  const pre = li.querySelector('pre');
  if (!on) { if (pre) pre.remove(); return; }
  if (!pre && li.raw !== undefined) li.append(el('pre', { class: 'raw', text: li.raw }));
}

function targets(a) {
  const p = a.payload || {};
  return p.entityId || p.deckId || p.stackId || null;
}

/** Actions that handle a piece rather than play it: each has its own
 * gesture (drag, double-click, `f`, `g`), so they are never a card's play. */
const HANDLING = new Set(['entity.grab', 'entity.drop', 'entity.flip']);

/** The units of free text, as the kernel reads them (docs/observations.md,
 * Text a game writes): a run of letters, digits and `_`, or any single
 * other character. */
const UNIT = /[\p{Alphabetic}\p{N}_]+|[^]/gu;

/** The entity ids named in `v` (a canonical value: every string in it,
 * object keys too), found as the kernel finds them: whole units, the
 * leftmost first, then the longest of at most `most` units. */
function idsIn(v, known, most, out = new Set()) {
  if (typeof v === 'string') {
    const units = v.match(UNIT) || [];
    for (let i = 0; i < units.length;) {
      let hit = 0;
      let span = '';
      for (let n = 1; n <= most && i + n <= units.length; n += 1) {
        span += units[i + n - 1];
        if (known.has(span)) hit = n;
      }
      if (hit) { out.add(units.slice(i, i + hit).join('')); i += hit; } else i += 1;
    }
  } else if (Array.isArray(v)) {
    for (const x of v) idsIn(x, known, most, out);
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) { idsIn(k, known, most, out); idsIn(x, known, most, out); }
  }
  return out;
}

/** How many units an id reads as. */
function unitsOf(id) {
  return (id.match(UNIT) || []).length;
}

// ---- a match ---------------------------------------------------------------

class Table {
  constructor(app, p) {
    this.app = app;
    this.matchId = p.get('match');
    this.tokens = seats.all(this.matchId);
    // A replay without a seat is the spectators' replay.
    this.seat = p.get('seat') || (p.has('replay') ? null : Object.keys(this.tokens)[0] || null);
    this.mode = p.has('replay') ? 'replay' : (p.has('watch') || !this.tokens[this.seat]) ? 'watch' : 'seat';
    this.token = this.mode !== 'watch' ? this.tokens[this.seat] || null : null;
    // A still picture (`&still`): the table and its log as they are now,
    // not followed — what a headless browser's screenshot waits for.
    this.still = p.has('still');
    this.obs = null;
    this.pending = [];
    this.n = 0;
    this.arrivals = [];
    this.flash = new Map();
    this.selected = null;
    this.press = null;
    this.dragAt = null;
    this.bounds = null;
    this.promptShown = null;
    this.closed = false;
    this.outbox = Promise.resolve();
    this.layout();
    this.start().catch((e) => this.say('bad', `could not open the match: ${e.message}`));
    this.ticker = setInterval(() => this.drawClocks(), 200);
    this.onMove = (e) => this.pointerMove(e);
    this.onUp = (e) => this.pointerUp(e);
    // A press anywhere but the play menu closes it.
    this.onDown = (e) => { if (this.menuBox && !this.menuBox.contains(e.target)) this.closeMenu(); };
    document.addEventListener('pointerdown', this.onDown, true);
    document.addEventListener('pointermove', this.onMove);
    document.addEventListener('pointerup', this.onUp);
    document.addEventListener('pointercancel', this.onUp);
    window.addEventListener('blur', this.onUp);
  }

  close() {
    this.closed = true;
    this.closeMenu();
    this.dropLift();
    clearInterval(this.ticker);
    if (this.stream) this.stream.close();
    document.removeEventListener('pointerdown', this.onDown, true);
    document.removeEventListener('pointermove', this.onMove);
    document.removeEventListener('pointerup', this.onUp);
    document.removeEventListener('pointercancel', this.onUp);
    window.removeEventListener('blur', this.onUp);
  }

  get me() {
    return this.obs && this.obs.view && this.obs.view.seats ? this.obs.view.seats[this.seat] || null : null;
  }

  layout() {
    this.title = el('h1', { text: this.matchId });
    this.status = el('span', { class: 'muted', id: 'status', text: 'connecting…' });
    const switcher = el('select', { id: 'seat-switcher', 'aria-label': 'Seat' });
    for (const s of Object.keys(this.tokens)) switcher.append(el('option', { value: s, selected: s === this.seat && !!this.token, text: `seat ${s}` }));
    switcher.append(el('option', { value: '', selected: !this.token, text: 'watch (public)' }));
    // In a replay the switcher changes whose replay it is.
    const where = this.mode === 'replay' ? { replay: '' } : {};
    switcher.addEventListener('change', () => (switcher.value
      ? go({ match: this.matchId, ...where, seat: switcher.value })
      : go({ match: this.matchId, ...(this.mode === 'replay' ? where : { watch: '' }) })));
    this.replayLink = el('a', { href: `#match=${encodeURIComponent(this.matchId)}&replay=${this.seat && this.tokens[this.seat] ? `&seat=${encodeURIComponent(this.seat)}` : ''}`, hidden: true, text: 'Replay' });
    // The seat's own link, to hand the seat to another browser.
    const seatLink = this.mode === 'seat' ? el('a', {
      id: 'seat-link', title: 'Open this link in another browser to play this seat there',
      href: `#match=${encodeURIComponent(this.matchId)}&seat=${encodeURIComponent(this.seat)}&token=${encodeURIComponent(this.token)}`,
      text: 'seat link',
    }) : null;
    this.app.append(el('header', { class: 'bar' },
      el('a', { href: '#', text: '← Lobby' }), this.title, this.status,
      el('label', {}, this.mode === 'replay' ? 'View ' : 'Seat ', switcher), seatLink, this.replayLink));
    this.noticeBox = el('div', { class: 'notice', hidden: true, role: 'alert', id: 'notice' });
    this.resultBox = el('div', { class: 'result', hidden: true, id: 'result' });
    this.svg = sv('svg', { class: 'table', id: 'table', role: 'group', 'aria-label': 'The table', viewBox: '-8 -6 16 12' });
    this.handsBox = el('div', { class: 'hands', id: 'hands' });
    this.scrubber = el('div', { class: 'scrubber', hidden: true });
    this.clocksBox = el('section', { class: 'clocks', id: 'clocks' }, el('h2', { text: 'Clocks' }));
    this.controlsBox = el('section', { class: 'controls', id: 'controls' });
    this.selectionBox = el('section', { class: 'selection', id: 'selection', hidden: true });
    this.logList = el('ol', { class: 'log', id: 'log', 'aria-label': 'Event log' });
    this.logJson = false;
    const jsonToggle = el('button', { id: 'log-json', class: 'small', 'aria-pressed': 'false', title: 'Show each event as the server sent it' }, 'JSON');
    jsonToggle.addEventListener('click', () => {
      this.logJson = !this.logJson;
      jsonToggle.setAttribute('aria-pressed', String(this.logJson));
      for (const li of this.logList.children) showRaw(li, this.logJson);
    });
    // The prompt sits between the table and the hands: it never covers a
    // card you may answer it with (docs/table.md).
    this.promptBox = el('div', { class: 'prompt', id: 'prompt', role: 'dialog', 'aria-modal': 'false', hidden: true });
    this.hintBox = el('p', { class: 'hint', id: 'hand-hint', role: 'status', hidden: true });
    this.app.append(this.noticeBox, this.resultBox,
      el('main', { class: 'layout' },
        el('div', { class: 'board' }, this.scrubber, this.svg, this.promptBox, this.hintBox, this.handsBox),
        el('aside', { class: 'side' }, this.selectionBox, this.clocksBox, this.controlsBox,
          el('section', {}, el('div', { class: 'head' }, el('h2', { text: 'Events' }), jsonToggle), this.logList))));
    this.svg.addEventListener('pointerdown', (e) => this.pointerDown(e));
    this.svg.addEventListener('keydown', (e) => this.key(e));
  }

  async start() {
    const summary = await api('GET', `/matches/${this.matchId}`);
    const game = await api('GET', `/games/${summary.gameId}`).catch(() => ({}));
    this.title.textContent = `${game.name || summary.gameId} · ${this.matchId}`;
    document.title = `${game.name || summary.gameId} — Digipology`;
    if (summary.status === 'finished') this.replayLink.hidden = false;
    if (summary.status === 'open') {
      const free = summary.seats.filter((s) => !s.taken).map((s) => s.seat);
      this.status.textContent = `waiting for players (seat${free.length === 1 ? '' : 's'} ${free.join(', ')} free)…`;
    }
    if (this.mode === 'replay') {
      this.setupScrubber();
      if (this.still) await this.readLog(); else this.openStream();
      return;
    }
    // The stream opens once the match has started (before, the server
    // refuses it, and a browser does not retry a refused stream).
    await this.refresh();
    if (this.closed) return;
    if (this.still) await this.readLog(); else this.openStream();
  }

  /** The stream path for the viewer. */
  streamPath(q) {
    if (this.mode !== 'watch' && this.token) q.set('token', this.token);
    // Each event with its sentence (docs/server.md, Follow the events).
    q.set('text', 'true');
    return `/matches/${encodeURIComponent(this.matchId)}/${this.mode === 'watch' || !this.token ? 'spectate/events' : 'events'}?${q}`;
  }

  /** A still picture's log: the stream up to now, read once. */
  async readLog() {
    const res = await fetch(this.streamPath(new URLSearchParams({ follow: 'false' })));
    const body = await res.text();
    if (this.closed) return;
    for (const msg of body.split('\n\n')) {
      if (!/^event: ?events$/m.test(msg)) continue;
      for (const line of msg.split('\n')) {
        if (!line.startsWith('data:')) continue;
        try { this.logEvent(JSON.parse(line.slice(5))); } catch (_) { /* a line the page cannot read */ }
      }
    }
  }

  // ---- observations and the stream ----

  observationPath() {
    return this.mode === 'watch' ? `/matches/${this.matchId}/spectate` : `/matches/${this.matchId}/observation`;
  }

  /** Fetches the observation (one request at a time; a newer event while
   * one is out asks again when it comes back), then redraws. */
  async refresh() {
    if (this.mode === 'replay') return;
    if (this.fetching) { this.again = true; return; }
    this.fetching = true;
    try {
      do {
        this.again = false;
        const waiting = this.arrivals.splice(0);
        const query = this.obs ? '' : '?after=0&wait_ms=20000';
        let obs;
        const asked = performance.now();
        try {
          obs = await api('GET', this.observationPath() + query, { token: this.token });
        } catch (e) {
          if (e.code === 'not_started') {
            this.status.textContent = 'waiting for players…';
            await new Promise((ok) => { setTimeout(ok, 250); });
            this.again = true;
            continue;
          }
          throw e;
        }
        if (this.closed) return;
        this.lastFailure = null;
        if (!this.obs || obs.seq >= this.obs.seq) {
          this.obs = obs;
          this.obsAt = performance.now();
        }
        const got = performance.now();
        this.settle();
        this.render();
        if (waiting.length) {
          measure(probe.fetchMs, got - asked);
          measure(probe.renderMs, performance.now() - got);
          requestAnimationFrame(() => {
            const t = performance.now();
            for (const t0 of waiting) measure(probe.frames, t - t0);
          });
        }
      } while (this.again && !this.closed);
    } catch (e) {
      // Said once per kind of failure; tried again in a moment (a busy
      // room, the rate limit, a restart).
      const why = `observation failed: ${e.code}: ${e.message}`;
      if (why !== this.lastFailure) this.say('bad', why);
      this.lastFailure = why;
      this.status.textContent = `${e.code} — trying again`;
      if (!this.closed) setTimeout(() => this.refresh(), 1000);
    } finally {
      this.fetching = false;
    }
  }

  openStream(after) {
    const q = new URLSearchParams();
    if (after) q.set('after', after);
    const es = new EventSource(this.streamPath(q));
    es.lastId = after || '';
    this.stream = es;
    es.addEventListener('events', (e) => {
      es.lastId = e.lastEventId;
      if (this.mode !== 'replay') this.arrivals.push(performance.now());
      for (const line of e.data.split('\n')) {
        try { this.logEvent(JSON.parse(line)); } catch (_) { /* a line the page cannot read */ }
      }
      this.refresh();
    });
    es.addEventListener('over', () => {
      this.ended = true;
      es.close();
      this.replayLink.hidden = false;
      this.refresh();
    });
    es.addEventListener('reload', (e) => {
      let n;
      try { n = JSON.parse(e.data); } catch (_) { return; }
      this.say(n.ok ? 'reload' : 'bad', n.message);
      this.noticeBox.hidden = false;
      this.noticeBox.className = `notice ${n.ok ? 'ok' : 'bad'}`;
      this.noticeBox.textContent = n.ok ? `Reloaded: ${n.message}` : n.message;
      this.refresh();
    });
    // (Re)connected: the match may have moved meanwhile (a server restart).
    es.addEventListener('open', () => { this.retry = 0; this.refresh(); });
    es.addEventListener('error', () => {
      if (this.closed || this.ended) return;
      this.status.textContent = 'reconnecting…';
      // The browser retries a dropped stream itself; one the server
      // refused is closed, so open it again, from the last id it got.
      if (es.readyState === EventSource.CLOSED) {
        this.retry = Math.min((this.retry || 0) + 1, 6);
        setTimeout(() => { if (!this.closed && this.stream === es) this.openStream(es.lastId); }, 500 * 2 ** this.retry);
      }
    });
  }

  // ---- acting ----

  /** Sends an action; a predicted one shows its expected result at once.
   * Actions go one at a time, in the order they were made. */
  act(type, payload, playing) {
    if (this.mode !== 'seat' || !this.obs) return;
    const id = `${this.seat}-${Date.now().toString(36)}-${(this.n += 1)}`;
    const p = { id, type, payload, predicted: PREDICTED.has(type), seq: null, playing };
    this.pending.push(p);
    this.render();
    this.outbox = this.outbox.then(async () => {
      try {
        const ans = await api('POST', `/matches/${this.matchId}/actions`, {
          token: this.token, body: { clientActionId: id, action: { type, payload } },
        });
        if (ans.accepted) p.seq = ans.seq;
        else this.rollback(p, ans.message ? `${ans.code}: ${ans.message}` : ans.code);
      } catch (e) {
        this.rollback(p, `${e.code}: ${e.message}`);
      }
      if (this.closed) return;
      this.settle();
      this.render();
      if (p.seq !== null && this.obs.seq < p.seq) this.refresh();
    }).catch((e) => this.say('bad', `the page failed: ${e.message}`));
  }

  actOn(id, type) {
    const a = this.legal(id).find((x) => x.type === type);
    if (a) this.act(a.type, a.payload);
  }

  rollback(p, why) {
    this.pending = this.pending.filter((x) => x !== p);
    const target = p.payload.entityId;
    const now = performance.now();
    for (const [id, until] of this.flash) if (until < now) this.flash.delete(id);
    if (target) this.flash.set(target, now + FLASH_MS);
    this.say('bad', `${p.type}${target ? ` ${target}` : ''} ${p.predicted ? 'rolled back' : 'refused'}: ${why}`);
    setTimeout(() => this.render(), FLASH_MS + 20);
  }

  /** Drops the predictions the observation now includes. */
  settle() {
    if (!this.obs) return;
    this.pending = this.pending.filter((p) => p.seq === null || this.obs.seq < p.seq);
  }

  shown() {
    const view = structuredClone(this.obs.view);
    for (const p of this.pending) if (p.predicted) predict(view, p, this.me);
    return view;
  }

  entity(id) {
    return this.view && this.view.entities[id];
  }

  /** What the seat may do to a piece: the observation's legal actions.
   * A face-down card the seat sees under an alias is never in that list
   * (naming it there would tell it apart), so the page offers what its
   * components allow, and the server decides. */
  legal(id) {
    if (this.mode !== 'seat') return [];
    const listed = (this.obs && this.obs.legalActions || []).filter((a) => targets(a) === id);
    const e = this.entity(id);
    if (!e || 'props' in e) return listed;
    const c = e.components || {};
    const physical = [];
    if (c.flippable) physical.push({ type: 'entity.flip', payload: { entityId: id } });
    if (c.grabbable && c.grabbable.enabled !== false && !(c.lockable && c.lockable.locked) && !e.heldBy) {
      physical.push({ type: 'entity.grab', payload: { entityId: id } });
    }
    return physical;
  }

  // ---- playing a card ----

  /** The seat's open prompts, first by id (as the view has them, so an
   * answer sent a moment ago has closed its prompt already). */
  openPrompts() {
    if (this.mode !== 'seat' || !this.view) return [];
    return Object.entries(this.view.prompts || {})
      .filter(([, p]) => p.status === 'open' && this.me && p.playerId === this.me);
  }

  /** Everything on offer that names pieces: each answer of the seat's
   * open prompts (a choice), and each legal action other than handling a
   * piece; with the ids each names (docs/table.md, Playing a card). */
  allOffers() {
    if (this.offerCache && this.offerCache.view === this.view) return this.offerCache.list;
    const known = new Set(Object.keys(this.view.entities || {}));
    let most = 1;
    for (const k of known) most = Math.max(most, unitsOf(k));
    const list = [];
    const seen = new Set();
    const add = (type, payload, label, names) => {
      const key = type === 'prompt.respond' ? `${payload.promptId}\u0000${JSON.stringify(payload.response)}` : JSON.stringify([type, payload]);
      if (seen.has(key)) return;
      seen.add(key);
      list.push({ type, payload, label, names });
    };
    const open = new Map(this.openPrompts());
    for (const [promptId, p] of open) {
      if (p.kind === 'confirm' || p.kind === 'number' || !Array.isArray(p.choices)) continue;
      for (const c of p.choices) add('prompt.respond', { promptId, response: c }, show(c), idsIn(c, known, most));
    }
    for (const a of (this.obs && this.obs.legalActions) || []) {
      const pl = a.payload || {};
      if (HANDLING.has(a.type) || (a.type === 'prompt.respond' && !open.has(pl.promptId))) continue;
      const { promptId, transform, ...named } = pl;
      add(a.type, pl, a.type === 'prompt.respond' ? show(pl.response) : actionLabel(a), idsIn(named, known, most));
    }
    this.offerCache = { view: this.view, list };
    return list;
  }

  /** What offers to play the piece `id`. */
  offers(id) {
    if (this.mode !== 'seat' || !this.view || !id) return [];
    return this.allOffers().filter((o) => o.names.has(id));
  }

  /** Plays the card `id`: the one offer (of those naming `target`, when
   * it was dropped on a piece some offer names), else a menu of them;
   * with none, a hint. */
  play(id, anchor, target) {
    const all = this.offers(id);
    const onto = target ? all.filter((o) => o.names.has(target)) : [];
    const list = onto.length ? onto : all;
    if (!list.length) { this.hint(id); return; }
    if (list.length === 1) { this.send(id, list[0]); return; }
    this.menu(id, list, anchor);
  }

  send(id, o) {
    this.closeMenu();
    const e = this.entity(id);
    // A drop the game lists for a card not yet held: pick it up first.
    if (o.type === 'entity.drop' && e && e.heldBy !== this.me) this.act('entity.grab', { entityId: id });
    this.act(o.type, o.payload, id);
  }

  /** A small menu of the offers, above the card (or where it was let go). */
  menu(id, list, anchor) {
    this.closeMenu();
    const card = this.entity(id);
    const box = el('div', { class: 'play-menu', id: 'play-menu', role: 'menu', 'aria-label': `Play ${card ? labelOf(card) : id}` },
      el('div', { class: 'muted', text: `Play ${card ? labelOf(card) : id}:` }),
      ...list.map((o, i) => el('button', { role: 'menuitem', id: `play-${i}`, onclick: () => this.send(id, o) }, o.label)),
      el('button', { class: 'cancel', id: 'play-cancel', onclick: () => this.closeMenu() }, 'Cancel'));
    box.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') { this.closeMenu(); ev.preventDefault(); } });
    document.body.append(box);
    const r = anchor instanceof Element ? anchor.getBoundingClientRect() : { left: anchor.x, top: anchor.y, bottom: anchor.y, width: 0 };
    const w = box.offsetWidth;
    const h = box.offsetHeight;
    const left = Math.max(4, Math.min(window.innerWidth - w - 4, r.left + r.width / 2 - w / 2));
    const top = r.top - h - 6 >= 4 ? r.top - h - 6 : Math.min(window.innerHeight - h - 4, r.bottom + 6);
    box.style.left = `${left}px`;
    box.style.top = `${Math.max(4, top)}px`;
    this.menuFor = id;
    this.menuBox = box;
    box.querySelector('button').focus({ preventScroll: true });
  }

  closeMenu() {
    if (this.menuBox) this.menuBox.remove();
    this.menuBox = null;
    this.menuFor = null;
  }

  /** A gentle hint for a card nothing offers to play. */
  hint(id) {
    const node = this.handsBox.querySelector(`.hcard[data-id="${CSS.escape(id)}"]`);
    if (node) {
      node.classList.remove('nudge');
      void node.offsetWidth; // restarts the animation
      node.classList.add('nudge');
    }
    const acting = this.obs && this.obs.participation === 'acting';
    this.hintBox.textContent = this.mode !== 'seat' ? 'You are watching: nothing to play.'
      : acting ? 'Nothing on offer plays this card now.' : 'Not your move: nothing on offer plays this card now.';
    this.hintBox.hidden = false;
    clearTimeout(this.hintTimer);
    this.hintTimer = setTimeout(() => { this.hintBox.hidden = true; }, 2500);
  }

  /** Whether a play of the card is on its way to the server. */
  isPlaying(id) {
    return this.pending.some((p) => p.playing === id);
  }

  /** Whether the piece is drawn as a card in a row under the table. */
  inRow(id) {
    return !!this.handsBox.querySelector(`.hcard[data-id="${CSS.escape(id)}"]`);
  }

  /** A card from a row follows the pointer (a copy: the row stays put). */
  lift(id, e) {
    const node = this.handsBox.querySelector(`.hcard[data-id="${CSS.escape(id)}"]`);
    if (!node) return;
    const ghost = node.cloneNode(true);
    ghost.removeAttribute('id');
    ghost.removeAttribute('tabindex');
    ghost.classList.add('lifting');
    ghost.setAttribute('aria-hidden', 'true');
    document.body.append(ghost);
    this.ghost = ghost;
    this.moveLift(e);
  }

  moveLift(e) {
    if (!this.ghost) return;
    this.ghost.style.left = `${e.clientX - this.ghost.offsetWidth / 2}px`;
    this.ghost.style.top = `${e.clientY - this.ghost.offsetHeight / 2}px`;
  }

  dropLift() {
    if (this.ghost) this.ghost.remove();
    this.ghost = null;
  }

  /** Where a card from a row was let go: a piece on the table, a row (its
   * container), the table itself (`null`), or nowhere (`undefined`). */
  dropTarget(e) {
    const under = document.elementFromPoint(e.clientX, e.clientY);
    if (!under) return undefined;
    const piece = under.closest('#table [data-id]');
    if (piece) return piece.dataset.id;
    const row = under.closest('[data-container]');
    if (row) return row.dataset.container;
    if (under.closest('#table')) return null;
    return undefined;
  }

  /** The container a card is drawn in (a row under the table). */
  rowOf(id) {
    const node = this.handsBox.querySelector(`.hcard[data-id="${CSS.escape(id)}"]`);
    const row = node && node.closest('[data-container]');
    return row ? row.dataset.container : null;
  }

  // ---- pointer and keys ----

  pointerDown(e) {
    const g = e.target.closest('[data-id]');
    if (!g || e.button !== 0) return;
    this.press = { id: g.dataset.id, x: e.clientX, y: e.clientY, moved: false };
  }

  canDrag(id) {
    const e = this.entity(id);
    if (this.mode !== 'seat' || !e) return false;
    if (e.heldBy === this.me && this.me) return true;
    return this.legal(id).some((a) => a.type === 'entity.grab');
  }

  pointerMove(e) {
    const pr = this.press;
    if (!pr) return;
    if (pr.play) { this.moveLift(e); return; }
    if (!pr.moved) {
      if (Math.hypot(e.clientX - pr.x, e.clientY - pr.y) < DRAG_PX) return;
      // A card in a row that something offers to play is played by
      // dragging it where it goes (docs/table.md, Playing a card).
      if (pr.row && this.offers(pr.id).length) {
        pr.moved = true;
        pr.play = true;
        this.closeMenu();
        this.lift(pr.id, e);
        return;
      }
      if (!this.canDrag(pr.id)) { this.press = null; return; }
      pr.moved = true;
      if (this.entity(pr.id).heldBy !== this.me) this.act('entity.grab', { entityId: pr.id });
    }
    this.dragAt = { id: pr.id, ...this.toWorld(e) };
    this.moveGhost();
  }

  /** The press ends: a click, or the drag's drop. A drag the browser
   * cancelled (a touch taken over, the window left) puts the piece down
   * where it was last drawn, so it is never left held. */
  pointerUp(e) {
    const pr = this.press;
    this.press = null;
    if (!pr) return;
    if (!pr.moved) {
      if (e.type === 'pointerup') this.pointerClick(pr.id);
      return;
    }
    if (pr.play) {
      this.dropLift();
      // Let go where nothing takes it, or back on its own row: it stays.
      const target = e.type === 'pointerup' ? this.dropTarget(e) : undefined;
      if (target === undefined || target === this.rowOf(pr.id)) return;
      this.play(pr.id, { x: e.clientX, y: e.clientY }, target);
      return;
    }
    const at = e.type === 'pointerup' ? this.toWorld(e) : this.dragAt || this.positionOf(this.entity(pr.id));
    this.dragAt = null;
    this.drop(pr.id, at);
  }

  toWorld(e) {
    const pt = this.svg.createSVGPoint();
    pt.x = e.clientX;
    pt.y = e.clientY;
    const m = this.svg.getScreenCTM();
    const w = m ? pt.matrixTransform(m.inverse()) : { x: 0, y: 0 };
    return { x: Math.round(w.x * 100) / 100, z: Math.round(w.y * 100) / 100 };
  }

  /** Puts a held piece down at `at`, kept on the drawn table (a drag let
   * go over the hands lands at the table's edge). */
  drop(id, at) {
    const b = this.bounds;
    if (b) at = { x: Math.min(b.x1 - 0.5, Math.max(b.x0 + 0.5, at.x)), z: Math.min(b.z1 - 0.5, Math.max(b.z0 + 0.5, at.z)) };
    const e = this.entity(id);
    const t = (e && e.components.transform) || {};
    this.act('entity.drop', {
      entityId: id,
      transform: {
        position: { x: at.x, y: (t.position && t.position.y) || 0, z: at.z },
        rotation: t.rotation || { x: 0, y: 0, z: 0, w: 1 },
        scale: t.scale || { x: 1, y: 1, z: 1 },
      },
    });
  }

  /** A click: press a button, roll a die, otherwise select the piece. */
  /** A click with the pointer: a second one on the same piece soon after
   * the first is a double click, which flips it. (Timed here: the first
   * click redraws the table, so the browser's own dblclick never comes.) */
  pointerClick(id) {
    // A card a click plays is not flipped by a second click.
    if (this.inRow(id) && (this.isPlaying(id) || this.offers(id).length)) {
      this.lastClick = null;
      this.click(id);
      return;
    }
    const now = performance.now();
    const last = this.lastClick;
    const flips = this.legal(id).some((a) => a.type === 'entity.flip');
    if (flips && last && last.id === id && now - last.at < DOUBLE_CLICK_MS) {
      this.lastClick = null;
      this.selected = last.selected;
      this.actOn(id, 'entity.flip');
      this.render();
      return;
    }
    this.lastClick = { id, at: now, selected: this.selected };
    this.click(id);
  }

  click(id) {
    const e = this.entity(id);
    if (!e) return;
    const kind = kindOf(e);
    if (kind === 'button' && this.mode === 'seat') { this.act('button.press', { entityId: id }); return; }
    if (kind === 'die' && this.legal(id).some((a) => a.type === 'die.roll')) { this.actOn(id, 'die.roll'); return; }
    // A card in a row: play it, or a hint that nothing plays it now.
    if (this.inRow(id)) {
      if (this.isPlaying(id)) return;
      this.play(id, this.handsBox.querySelector(`.hcard[data-id="${CSS.escape(id)}"]`));
      return;
    }
    this.selected = this.selected === id ? null : id;
    this.render();
  }

  key(e) {
    const g = e.target.closest('[data-id]');
    if (!g || e.ctrlKey || e.metaKey || e.altKey) return;
    const id = g.dataset.id;
    const ent = this.entity(id);
    const held = ent && this.me && ent.heldBy === this.me;
    const step = { ArrowLeft: [-0.5, 0], ArrowRight: [0.5, 0], ArrowUp: [0, -0.5], ArrowDown: [0, 0.5] }[e.key];
    if (held && step) {
      const pos = this.dragAt && this.dragAt.id === id ? this.dragAt : this.positionOf(ent);
      this.dragAt = { id, x: pos.x + step[0], z: pos.z + step[1] };
      this.moveGhost();
      e.preventDefault();
    } else if (e.key === 'Enter' || e.key === ' ') {
      if (held) { const at = this.dragAt || this.positionOf(ent); this.dragAt = null; this.drop(id, at); } else this.click(id);
      e.preventDefault();
    } else if (e.key === 'f') {
      this.actOn(id, 'entity.flip');
    } else if (e.key === 'g') {
      this.actOn(id, 'entity.grab');
    }
  }

  positionOf(e) {
    const t = e && e.components.transform;
    return t ? { x: t.position.x, z: t.position.z } : { x: 0, z: 0 };
  }

  // ---- drawing ----

  render() {
    if (!this.obs || this.closed) return;
    this.view = this.shown();
    this.status.textContent = this.mode === 'replay' ? 'replay'
      : `${this.mode === 'watch' ? 'watching' : `seat ${this.seat}`}${this.still ? ' (still)' : ''} · seq ${this.obs.seq}${this.obs.phase ? ` · phase ${this.obs.phase}` : ''}${this.obs.participation ? ` · ${this.obs.participation}` : ''}`;
    keepFocus(this.svg, () => this.drawTable());
    keepFocus(this.handsBox, () => this.drawHands());
    keepFocus(this.controlsBox, () => this.drawControls());
    keepFocus(this.selectionBox, () => this.drawSelection());
    if (this.menuFor && !this.offers(this.menuFor).length) this.closeMenu();
    this.drawPrompt();
    this.drawClocks();
    this.drawResult();
  }

  /** Which pieces lie on the table, and how many each stands for. */
  placement() {
    const ents = this.view.entities;
    const inside = new Set();
    for (const e of Object.values(ents)) {
      const c = e.components && e.components.container;
      if (c) for (const i of contents(c)) if (i) inside.add(i);
    }
    const under = new Set();
    const counts = new Map();
    for (const st of Object.values(this.view.stacks || {})) {
      const items = st.items || [];
      if (!items.length) continue;
      const top = items[items.length - 1];
      counts.set(top, items.length);
      for (const i of items.slice(0, -1)) under.add(i);
    }
    return { inside, under, counts };
  }

  drawTable() {
    const { inside, under, counts } = this.placement();
    const now = performance.now();
    const order = { zone: 0, snap: 1 };
    const pieces = Object.values(this.view.entities)
      .filter((e) => e.components && e.components.transform && !inside.has(e.id) && !under.has(e.id))
      .sort((a, b) => (order[kindOf(a)] ?? 2) - (order[kindOf(b)] ?? 2) || (a.heldBy ? 1 : 0) - (b.heldBy ? 1 : 0));
    this.fit(pieces);
    const nodes = pieces.map((e) => this.piece(e, counts.get(e.id), now));
    if (this.dragAt && (inside.has(this.dragAt.id) || under.has(this.dragAt.id))) {
      const e = this.view.entities[this.dragAt.id];
      if (e) nodes.push(this.piece(e, undefined, now));
    }
    this.svg.replaceChildren(...nodes);
    this.moveGhost(false);
  }

  /** Grows the drawn area to hold every piece (never shrinks, so pieces
   * do not jump while the table changes). */
  fit(pieces) {
    // A table with nothing on it yet is a strip to drop cards on.
    let b = this.bounds || (pieces.length ? { x0: -6, z0: -4, x1: 6, z1: 4 } : { x0: -8, z0: -1.5, x1: 8, z1: 1.5 });
    for (const e of pieces) {
      const p = e.components.transform.position;
      const c = e.components;
      const rx = c.zone ? c.zone.halfExtents.x : c.snap_point ? c.snap_point.radius : CARD.w;
      const rz = c.zone ? c.zone.halfExtents.z : c.snap_point ? c.snap_point.radius : CARD.h;
      b = { x0: Math.min(b.x0, p.x - rx - 1), z0: Math.min(b.z0, p.z - rz - 1), x1: Math.max(b.x1, p.x + rx + 1), z1: Math.max(b.z1, p.z + rz + 1) };
    }
    this.bounds = b;
    this.svg.setAttribute('viewBox', `${b.x0} ${b.z0} ${b.x1 - b.x0} ${b.z1 - b.z0}`);
  }

  piece(e, count, now) {
    const c = e.components;
    const kind = kindOf(e);
    const at = this.dragAt && this.dragAt.id === e.id ? this.dragAt : this.positionOf(e);
    const held = e.heldBy !== null && e.heldBy !== undefined;
    const flashing = (this.flash.get(e.id) || 0) > now;
    const classes = ['ent', kind,
      held ? 'held' : '', e.id === this.selected ? 'selected' : '', flashing ? 'rolledback' : '',
      c.lockable && c.lockable.locked ? 'locked' : '', e.pressed ? 'pressed' : '',
      kind === 'card' && c.flippable && c.flippable.flipped ? 'down' : ''].filter(Boolean).join(' ');
    const g = sv('g', {
      class: classes, 'data-id': e.id, transform: `translate(${at.x} ${at.z})`,
      tabindex: kind === 'zone' || kind === 'snap' ? undefined : 0, role: 'button',
      'aria-label': this.describe(e, kind, count),
    });
    g.append(...this.shape(e, kind, count));
    if (held && e.heldBy !== this.me) g.append(sv('text', { class: 'label', y: -CARD.h / 2 - 0.3, text: `held by ${this.nameOf(e.heldBy)}` }));
    return g;
  }

  shape(e, kind, count) {
    const c = e.components;
    const badge = (n) => (n > 1 ? [sv('g', { class: 'badge', transform: `translate(${CARD.w / 2} ${-CARD.h / 2})` },
      sv('circle', { r: 0.35 }), sv('text', { text: String(n) }))] : []);
    switch (kind) {
      case 'zone': {
        const h = c.zone.halfExtents;
        return [sv('rect', { x: -h.x, y: -h.z, width: 2 * h.x, height: 2 * h.z, rx: 0.2 }),
          sv('text', { class: 'label', x: -h.x + 0.2, y: -h.z + 0.35, 'text-anchor': 'start', text: labelOf(e) })];
      }
      case 'snap':
        return [sv('circle', { r: c.snap_point.radius }), sv('text', { class: 'label', text: labelOf(e) })];
      case 'deck': {
        const n = c.container ? contents(c.container).length : 0;
        return [sv('rect', { x: -CARD.w / 2, y: -CARD.h / 2, width: CARD.w, height: CARD.h, rx: 0.12 }),
          sv('text', { text: String(n) }), sv('text', { class: 'label', y: CARD.h / 2 + 0.35, text: labelOf(e) })];
      }
      case 'die':
        return [sv('rect', { x: -0.5, y: -0.5, width: 1, height: 1, rx: 0.15 }),
          sv('text', { text: c.die.value === null || c.die.value === undefined ? '–' : show(c.die.value) })];
      case 'counter':
        return [sv('rect', { x: -0.9, y: -0.5, width: 1.8, height: 1, rx: 0.2 }),
          sv('text', { class: 'value', text: String(c.counter.value) }),
          sv('text', { class: 'label', y: 0.8, text: labelOf(e) })];
      case 'button':
        return [sv('rect', { x: -1.1, y: -0.45, width: 2.2, height: 0.9, rx: 0.45 }), sv('text', { text: labelOf(e) })];
      case 'textent':
        return [sv('rect', { x: -2, y: -0.4, width: 4, height: 0.8, fill: 'transparent' }), sv('text', { text: show(c.text.value) })];
      case 'card': {
        const down = c.flippable && c.flippable.flipped;
        return [sv('rect', { class: down ? 'back' : 'face', x: -CARD.w / 2, y: -CARD.h / 2, width: CARD.w, height: CARD.h, rx: 0.12 }),
          sv('text', { text: down ? '' : labelOf(e) }), ...badge(count)];
      }
      default:
        return [sv('circle', { r: 0.6 }), sv('text', { text: labelOf(e) }), ...badge(count)];
    }
  }

  describe(e, kind, count) {
    const c = e.components;
    const bits = [kind === 'textent' ? 'text' : kind, labelOf(e)];
    if (kind === 'card') bits.push(c.flippable && c.flippable.flipped ? 'face down' : 'face up');
    if (kind === 'deck') bits.push(`${c.container ? contents(c.container).length : 0} cards`);
    if (kind === 'die') bits.push(`showing ${show(c.die.value)}`);
    if (kind === 'counter') bits.push(`value ${c.counter.value}`);
    if (count > 1) bits.push(`stack of ${count}`);
    if (e.heldBy) bits.push(`held by ${this.nameOf(e.heldBy)}`);
    return bits.join(', ');
  }

  nameOf(playerId) {
    if (playerId === this.me) return 'you';
    const p = this.view.players && this.view.players[playerId];
    return (p && p.name) || playerId;
  }

  /** Moves the dragged piece without redrawing the table (a piece from a
   * hand is drawn on the table once it is dragged there). */
  moveGhost(redraw = true) {
    if (!this.dragAt) return;
    const g = this.svg.querySelector(`[data-id="${CSS.escape(this.dragAt.id)}"]`);
    if (g) {
      g.setAttribute('transform', `translate(${this.dragAt.x} ${this.dragAt.z})`);
      g.classList.add('ghost');
    } else if (redraw) {
      this.drawTable();
    }
  }

  /** Containers off the table (hands): their cards in rows. */
  drawHands() {
    const rows = [];
    // The viewer's own hands first, then the open ones, then the closed.
    const rank = (e) => { const c = e.components.container; return c.owner === this.seat ? 0 : Array.isArray(c.items) ? 1 : 2; };
    const containers = Object.values(this.view.entities)
      .filter((e) => e.components && e.components.container && !e.components.transform)
      .sort((a, b) => rank(a) - rank(b));
    for (const e of containers) {
      const c = e.components;
      const hand = el('div', { class: 'hand', 'data-container': e.id });
      const items = contents(c.container);
      const playing = new Set(this.pending.map((p) => p.playing).filter(Boolean));
      for (const id of items) {
        const card = (id && this.view.entities[id]) || { id, components: {} };
        const down = card.components.flippable && card.components.flippable.flipped;
        const playable = !!id && !playing.has(id) && this.offers(id).length > 0;
        const node = el('div', {
          class: ['hcard', card.props ? '' : 'back', id && id === this.selected ? 'selected' : '',
            playable ? 'playable' : '', id && playing.has(id) ? 'playing' : ''].filter(Boolean).join(' '),
          'data-id': id || undefined, tabindex: 0, role: 'button',
          title: playable ? 'Click or drag to play' : undefined,
          'aria-label': `card ${card.props ? labelOf(card) : 'hidden'}${down ? ', face down' : ''}${playable ? ', playable' : ''}`,
          text: card.props ? labelOf(card) : '',
        });
        if (id) {
          node.addEventListener('pointerdown', (ev) => {
            if (ev.button === 0) this.press = { id, x: ev.clientX, y: ev.clientY, moved: false, row: true };
          });
          node.addEventListener('keydown', (ev) => this.key(ev));
        }
        hand.append(node);
      }
      if (!items.length) hand.append(el('span', { class: 'muted', text: 'empty' }));
      rows.push(el('section', { 'data-container': e.id, class: c.container.owner === this.seat && this.mode === 'seat' ? 'mine' : undefined },
        el('h2', { text: `${labelOf(e)} (${items.length})` }), hand));
    }
    swap(this.handsBox, rows);
  }

  /** Counters, buttons and text that have no place on the table. */
  drawControls() {
    const rows = [];
    for (const e of Object.values(this.view.entities)) {
      const c = e.components || {};
      if (c.transform) continue;
      const kind = kindOf(e);
      if (kind === 'counter') {
        const row = el('div', { class: 'row', 'data-id': e.id }, el('span', { text: labelOf(e) }),
          el('span', { class: 'value', id: `counter-${e.id}`, text: String(c.counter.value) }));
        this.legal(e.id).filter((x) => x.type.startsWith('counter.')).forEach((a, i) => {
          row.append(el('button', { id: `counter-${e.id}-${i}`, 'aria-label': `${labelOf(e)} ${actionLabel(a)}`, onclick: () => this.act(a.type, a.payload) }, actionLabel(a)));
        });
        rows.push(row);
      } else if (kind === 'button') {
        rows.push(el('div', { class: 'row' }, el('button', {
          id: `button-${e.id}`, class: e.pressed ? 'pressed' : '', disabled: this.mode !== 'seat' || (c.button && c.button.enabled === false),
          onclick: () => this.act('button.press', { entityId: e.id }),
        }, labelOf(e))));
      } else if (kind === 'textent') {
        rows.push(el('div', { class: 'row' }, el('span', { text: show(c.text.value) })));
      }
    }
    swap(this.controlsBox, [el('h2', { text: 'Controls' }), ...(rows.length ? rows : [el('span', { class: 'muted', text: 'none' })])]);
  }

  drawSelection() {
    const id = this.selected;
    const e = id && this.view.entities[id];
    if (!e) { this.selectionBox.hidden = true; return; }
    const legal = this.legal(id).filter((a) => a.type !== 'entity.grab' || !this.me || e.heldBy !== this.me);
    const listed = new Set(legal.map((a) => JSON.stringify([a.type, a.payload])));
    const plays = this.offers(id).filter((o) => !listed.has(JSON.stringify([o.type, o.payload])));
    const buttons = [...legal.map((a) => ({ label: actionLabel(a), go: () => this.act(a.type, a.payload) })),
      ...plays.map((o) => ({ label: o.label, go: () => this.send(id, o) }))]
      .map((b, i) => el('button', { id: `selected-${i}`, onclick: b.go }, b.label));
    if (this.me && e.heldBy === this.me) {
      buttons.push(el('button', { id: 'selected-put-down', onclick: () => { const at = this.dragAt || this.positionOf(e); this.dragAt = null; this.drop(id, at); } }, 'Put down'));
    }
    this.selectionBox.hidden = false;
    swap(this.selectionBox, [el('h2', { text: `Selected: ${this.describe(e, kindOf(e))}` }),
      el('div', { class: 'buttons' }, buttons.length ? buttons : el('span', { class: 'muted', text: 'nothing you can do with it now' }))]);
  }

  drawPrompt() {
    const prompts = Object.entries(this.view.prompts || {})
      .filter(([, p]) => p.status === 'open' && this.me && p.playerId === this.me);
    if (this.mode !== 'seat' || !prompts.length) {
      this.promptBox.hidden = true;
      this.promptShown = null;
      return;
    }
    const [id, p] = prompts[0];
    if (this.promptShown === id) return;
    this.promptShown = id;
    const answer = (response) => this.act('prompt.respond', { promptId: id, response });
    const body = [];
    if (p.kind === 'number') {
      const input = el('input', { type: 'number', min: p.min, max: p.max, step: p.step || 1, value: p.default ?? p.min ?? 0, 'aria-label': 'Your answer' });
      const send = () => { if (input.value !== '' && Number.isFinite(Number(input.value))) answer(Number(input.value)); };
      input.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { send(); ev.preventDefault(); } });
      body.push(input, el('button', { onclick: send }, 'Answer'));
    } else {
      const choices = p.kind === 'confirm' || !Array.isArray(p.choices) ? [true, false] : p.choices;
      for (const choice of choices) {
        const isDefault = JSON.stringify(choice) === JSON.stringify(p.default);
        const text = choice === true ? 'yes' : choice === false ? 'no' : show(choice);
        body.push(el('button', { class: isDefault ? 'default' : '', onclick: () => answer(choice) }, `${text}${isDefault ? ' (default)' : ''}`));
      }
    }
    this.promptBox.replaceChildren(el('h2', { id: 'prompt-title', text: show(p.title) }),
      el('div', { class: 'buttons' }, body), el('p', { class: 'muted', id: 'prompt-clock' }));
    this.promptBox.setAttribute('aria-labelledby', 'prompt-title');
    this.promptBox.hidden = false;
    const first = this.promptBox.querySelector('button, input');
    if (first) first.focus({ preventScroll: true });
  }

  /** The clocks and balances, counting down between observations. */
  drawClocks() {
    if (!this.obs || this.closed) return;
    const clocks = this.obs.clocks || {};
    // A still picture shows the clocks as the observation has them.
    const running = !over(this.obs.result) && this.mode !== 'replay' && !this.still;
    const gone = running ? performance.now() - this.obsAt : 0;
    const left = (ms) => (ms === null || ms === undefined ? null : ms - gone);
    const rows = [el('h2', { text: 'Clocks' })];
    if (clocks.phaseMs !== undefined && clocks.phaseMs !== null) rows.push(el('div', { class: 'row', text: `phase ${this.obs.phase || ''}: ${seconds(left(clocks.phaseMs))}` }));
    for (const [seat, c] of Object.entries(clocks.seats || {})) {
      const decision = left(c.decisionMs);
      const total = c.running ? left(c.totalMs) : c.totalMs;
      const row = el('div', { class: `row ${seat === this.seat && this.obs.participation === 'acting' ? 'acting' : ''} ${decision !== null && decision < 3000 ? 'low' : ''}`, 'data-seat': seat,
        text: `${seat}: decision ${seconds(decision)} · total ${seconds(total)}` });
      rows.push(row);
    }
    for (const [seat, balances] of Object.entries(this.obs.resources || {})) {
      rows.push(el('div', { class: 'row', text: `${seat}: ${Object.entries(balances).map(([k, v]) => `${k} ${v}`).join(' · ')}` }));
    }
    if (rows.length === 1) rows.push(el('span', { class: 'muted', text: 'no clocks' }));
    this.clocksBox.replaceChildren(...rows);
    const mine = clocks.seats && clocks.seats[this.seat];
    const pc = document.getElementById('prompt-clock');
    if (pc && mine) pc.textContent = `time to answer: ${seconds(left(mine.decisionMs))}`;
  }

  drawResult() {
    const r = this.obs.result;
    this.resultBox.hidden = !over(r);
    if (!over(r)) return;
    const scores = r.scores ? Object.entries(r.scores).map(([s, v]) => `${s} ${v}`).join(' · ') : '';
    this.resultBox.textContent = `Match over (${r.status}${r.reason ? `: ${r.reason}` : ''})${scores ? ` — ${scores}` : ''}`;
  }

  // ---- the log ----

  /** An event as a sentence — the server's, made from the seat's own
   * event (`digipology run --format text` prints the same) — with its
   * JSON a click away. */
  logEvent(ev) {
    const d = ev.data || {};
    const kind = ev.type === 'action.rejected' || ev.type === 'script.error' ? 'bad' : '';
    const { text: said, ...raw } = ev;
    let text = typeof said === 'string' ? said : `${ev.type} ${JSON.stringify(ev.data)}`;
    // A script error's file, line and message reach a designer's table only.
    if (ev.type === 'script.error' && !d.message) text += ' Its file, line and message show at a designer table.';
    this.say(kind, `#${ev.seq} ${text}`, ev.type, ev.seq, JSON.stringify(raw));
  }

  say(kind, text, type, seq, raw) {
    const li = el('li', { class: kind === 'bad' ? 'bad' : kind === 'reload' ? 'reload' : type ? '' : 'local', 'data-type': type || 'page', 'data-seq': seq },
      el('span', { class: 'said', text }));
    if (raw !== undefined) {
      li.raw = raw;
      li.title = `${type}: click for its JSON`;
      li.addEventListener('click', () => showRaw(li, !li.querySelector('pre')));
      if (this.logJson) showRaw(li, true);
    }
    if (this.mode === 'replay' && seq !== undefined && this.frameSeq !== undefined) li.hidden = seq > this.frameSeq;
    const stick = this.logList.scrollTop + this.logList.clientHeight >= this.logList.scrollHeight - 4;
    this.logList.append(li);
    while (this.logList.children.length > LOG_MAX) this.logList.firstChild.remove();
    if (stick) this.logList.scrollTop = this.logList.scrollHeight;
  }

  // ---- replay ----

  setupScrubber() {
    const range = el('input', { type: 'range', min: 0, max: 0, value: 0, id: 'scrub', 'aria-label': 'Sequence' });
    const label = el('span', { id: 'scrub-label', text: 'loading…' });
    const stepBy = (d) => { range.value = String(Number(range.value) + d); this.frame(Number(range.value)); };
    range.addEventListener('input', () => this.frame(Number(range.value)));
    this.scrubber.replaceChildren(el('button', { onclick: () => stepBy(-1), 'aria-label': 'Previous sequence' }, '◀'), range,
      el('button', { onclick: () => stepBy(1), 'aria-label': 'Next sequence' }, '▶'), label);
    this.scrubber.hidden = false;
    this.range = range;
    this.rangeLabel = label;
    this.frame(null);
  }

  /** Shows the match at a sequence (the latest request wins). */
  async frame(seq) {
    this.wantFrame = seq;
    if (this.loadingFrame) return;
    this.loadingFrame = true;
    try {
      while (this.wantFrame !== undefined) {
        const want = this.wantFrame;
        this.wantFrame = undefined;
        this.lastWant = want;
        const q = want === null ? '' : `?seq=${want}`;
        const f = await api('GET', `/matches/${this.matchId}/frames${q}`, { token: this.token });
        if (this.closed) return;
        this.range.max = String(f.last);
        if (want === null) this.range.value = String(f.last);
        this.rangeLabel.textContent = `sequence ${f.seq} of ${f.last}`;
        // The log as it stood then.
        this.frameSeq = f.seq;
        for (const li of this.logList.children) if (li.dataset.seq) li.hidden = Number(li.dataset.seq) > f.seq;
        this.obs = f.observation;
        this.obsAt = performance.now();
        this.render();
      }
    } catch (e) {
      this.say('bad', `replay failed: ${e.code}: ${e.message}`);
      // The server replays a few matches at once: ask again shortly.
      if (e.code === 'room_busy' && !this.closed) setTimeout(() => this.frame(this.wantFrame === undefined ? this.lastWant : this.wantFrame), 500);
    } finally {
      this.loadingFrame = false;
    }
  }
}
