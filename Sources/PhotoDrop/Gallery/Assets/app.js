'use strict';
// couchlite photos: sign in, databases, a grid newest first, upload, view, delete, live.
// Every element is made with DOM calls; names and fields only ever go in as text.
const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;
const state = { user: null, db: null, items: [], byId: new Map(), next: null, loading: false,
  live: 0, open: null, observer: null };

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === 'text') node.textContent = value;
    else if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({ credentials: 'same-origin',
    headers: { 'Accept': 'application/json' } }, options || {}));
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  if (!response.ok) {
    const error = new Error((body && body.reason) || ('HTTP ' + response.status));
    error.status = response.status;
    throw error;
  }
  return body;
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const dbPath = (db) => '/_photos/api/db/' + enc(db);
const attPath = (db, id, name) => '/' + enc(db) + '/' + enc(id) + '/' + enc(name);

function humanSize(bytes) {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = bytes, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
  return (unit ? value.toFixed(1) : String(value)) + ' ' + units[unit];
}

function mainAttachment(item) {
  const atts = item.attachments || [];
  const name = item.fields && item.fields.name;
  return atts.find((a) => a.name === name) || atts[0] || null;
}

function displayName(item) {
  const att = mainAttachment(item);
  const name = item.fields && typeof item.fields.name === 'string' ? item.fields.name : null;
  return name || (att && att.name) || item.id;
}

function kindOf(att, item) {
  if (item && item.kind === 'video') return 'video';
  const type = (att && att.content_type || '').toLowerCase();
  if (type.startsWith('video/')) return 'video';
  if (type.startsWith('image/')) return 'image';
  return 'file';
}

// MARK: dates taken
// A photo's day is the camera's local day: the date as `taken` writes it in its own offset (a photo taken at
// 23:30 in Tokyo belongs to that evening wherever it is looked at), as phone photo apps show it. A time without
// an offset, or in UTC ("Z", a file's time rather than the camera's), is placed in this browser's time zone.

function takenOf(item) {
  if (typeof item.taken === 'string') return item.taken;
  const taken = item.fields && item.fields.taken;
  return typeof taken === 'string' ? taken : null;
}

function instantOf(item) {
  const time = Date.parse(takenOf(item) || '');
  return isNaN(time) ? -Infinity : time;
}

const pad2 = (n) => String(n).padStart(2, '0');
const localDay = (date) => date.getFullYear() + '-' + pad2(date.getMonth() + 1) + '-' + pad2(date.getDate());

/// The camera's local date and time written in `taken` ("2026-05-12", "14:03"), or the browser's for UTC.
function localParts(taken) {
  const written = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?([+-]\d{2}:?\d{2})$/.exec(taken || '');
  if (written) return { day: written[1], time: written[2], offset: written[3] };
  const date = new Date(taken || '');
  if (isNaN(date)) return null;
  return { day: localDay(date), time: pad2(date.getHours()) + ':' + pad2(date.getMinutes()), offset: null };
}

function dayKey(item) {
  const parts = localParts(takenOf(item));
  return parts ? parts.day : 'undated';
}

/// "Saturday, 12 May 2026" in the browser's language, for a "YYYY-MM-DD" day.
function longDate(day) {
  const [year, month, date] = day.split('-').map(Number);
  const utc = new Date(Date.UTC(year, month - 1, date));
  const name = (options) => utc.toLocaleDateString(undefined, Object.assign({ timeZone: 'UTC' }, options));
  return name({ weekday: 'long' }) + ', ' + date + ' ' + name({ month: 'long' }) + ' ' + year;
}

function dayTitle(day) {
  if (day === 'undated') return 'No date';
  const now = new Date();
  if (day === localDay(now)) return 'Today';
  if (day === localDay(new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1))) return 'Yesterday';
  return longDate(day);
}

function duration(seconds) {
  const total = Math.round(Number(seconds));
  if (!isFinite(total) || total < 0) return '';
  const h = Math.floor(total / 3600), m = Math.floor(total / 60) % 60, s = total % 60;
  return (h ? h + ':' + pad2(m) : String(m)) + ':' + pad2(s);
}

/// Whether this device has a mouse or trackpad (drag and drop makes sense); a phone or tablet has only touch.
const finePointer = () => window.matchMedia('(any-pointer: fine)').matches;

/// A file name that stays whole where there is room and loses its middle where there is not: its head shrinks
/// with an ellipsis, its tail (the last characters, with the extension) always shows; the full name is the title.
function nameNode(name) {
  const chars = Array.from(name);
  const keep = Math.min(12, Math.floor(chars.length / 2));
  return el('span', { class: 'name', title: name },
    el('span', { class: 'head', text: chars.slice(0, chars.length - keep).join('') }),
    el('span', { class: 'tail', text: chars.slice(chars.length - keep).join('') }));
}

function cameraName(camera) {
  if (!camera) return '';
  const make = typeof camera.make === 'string' ? camera.make.trim() : '';
  const model = typeof camera.model === 'string' ? camera.model.trim() : '';
  return model.toLowerCase().startsWith(make.toLowerCase()) ? model : [make, model].filter(Boolean).join(' ');
}

// MARK: routing

async function route() {
  closeViewer(false);
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  try {
    const session = await api('/_session');
    state.user = session.userCtx && session.userCtx.name ? session.userCtx : null;
  } catch (e) { state.user = null; }
  $('signout').hidden = !state.user;
  if (!state.user) {
    $('who').textContent = '';
    // Signed in before and no longer: the receiving session ended (its sign-in ends with it).
    if (state.drop && !state.signedOut) state.notice = 'The receiving session has ended: nothing more can be sent.';
    state.drop = undefined;
    return showSignIn();
  }
  try {
    if (state.drop === undefined) state.drop = (await api('/_photos/api/dbs')).drop || null;
    // A drop's one-time name means nothing to a person: the page says what it is instead.
    $('who').textContent = state.drop ? '' : state.user.name;
    if (state.drop) return showDrop(state.drop);
    if (parts[0] === 'db' && parts[1]) {
      if (state.db !== parts[1]) await showGrid(parts[1]);
      if (parts[2] === 'photo' && parts[3]) await openPhoto(parts[3]);
      return;
    }
    await showDatabases();
  } catch (e) {
    stopGrid();
    const text = e.status === 403 || e.status === 401 ? 'You may not read this database.' : e.message;
    setMain(el('p', { class: 'error', id: 'page-error', role: 'alert', text }),
      el('p', null, el('a', { href: '#/', text: 'Back to the albums' })));
  }
}

function setMain(...children) {
  const main = $('main');
  main.replaceChildren(...children.filter(Boolean));
  main.className = '';
}

// MARK: sign in

function showSignIn() {
  stopGrid();
  $('crumb').textContent = '';
  const error = el('p', { class: 'error', id: 'signin-error', role: 'alert', text: state.notice || '' });
  state.notice = '';
  const form = el('form', { class: 'signin', id: 'signin' },
    el('h1', { text: 'Sign in' }),
    el('input', { name: 'name', id: 'name', placeholder: 'User name', autocomplete: 'username',
      required: '' }),
    el('input', { name: 'password', id: 'password', type: 'password', placeholder: 'Password',
      autocomplete: 'current-password', required: '' }),
    el('button', { class: 'primary', type: 'submit', text: 'Sign in' }), error,
    el('p', { class: 'hint', id: 'signin-hint', text: 'Sending photos to a computer running couchlite receive? ' +
      'Scan the QR code on its screen with this ' + (finePointer() ? 'device' : 'phone') + '\u2019s camera: ' +
      'you are signed in at once. Or type the name and password it shows.' }));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    try {
      await api('/_session', { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: form.name.value, password: form.password.value }) });
      state.signedOut = false;
      route();
    } catch (e) { error.textContent = e.status === 401 ? 'Wrong name or password.' : e.message; }
  });
  setMain(form);
  // No keyboard popping up over the hint on a phone: focus only where typing is the way in.
  if (finePointer()) form.name.focus();
}

$('signout').addEventListener('click', async () => {
  try { await api('/_session', { method: 'DELETE' }); } catch (e) { /* already out */ }
  if (state.drop) {
    state.notice = 'Signed out. To send more, scan the QR code on the receiving screen again.';
    try { sessionStorage.removeItem(DROP_FACTS); } catch (e) { /* nothing kept */ }
  }
  state.signedOut = true;
  state.drop = undefined;
  location.hash = '#/';
  route();
});

// MARK: databases

async function showDatabases() {
  stopGrid();
  const token = state.live;
  $('crumb').textContent = '';
  let reply = await api('/_photos/api/dbs');
  setMain(el('h1', { text: 'Albums' }), reply.databases.length ? albumList(reply)
    : el('p', { text: 'There is no database you may read.' }));
  // A huge album is counted over several requests: ask again until every count is complete.
  for (let round = 0; round < 30 && (reply.albums || []).some((a) => !a.complete); round++) {
    await sleep(1000);
    if (state.live !== token) return;
    reply = await api('/_photos/api/dbs');
    if (state.live !== token) return;
    $('dbs').replaceWith(albumList(reply));
  }
}

function albumList(reply) {
  const list = el('ul', { class: 'dbs', id: 'dbs' });
  const albums = new Map((reply.albums || []).map((album) => [album.name, album]));
  for (const name of reply.databases) {
    const album = albums.get(name);
    const cover = el('span', { class: 'cover' });
    if (album && album.cover) {
      cover.append(el('img', { alt: '', loading: 'lazy', src: dbPath(name) + '/thumb/' + enc(album.cover.id) + '/' +
        enc(album.cover.name) + '?size=320&v=' + enc(album.cover.digest) }));
    }
    const counts = album ? [plural(album.photos, 'photo'), album.videos ? plural(album.videos, 'video') : '']
      .filter(Boolean).join(' · ') + (album.complete ? '' : ' so far') : '';
    list.append(el('li', { 'data-name': name }, el('a', { href: '#/db/' + enc(name) }, cover,
      el('span', { class: 'album-name', text: name }),
      el('span', { class: 'album-counts', text: counts }),
      el('span', { class: 'album-dates', text: album ? dateRange(album.first, album.last) : '' }))));
  }
  return list;
}

const plural = (n, noun) => n + ' ' + noun + (n === 1 ? '' : 's');

function dateRange(first, last) {
  const from = localParts(first), to = localParts(last);
  if (!from || !to) return '';
  const short = (day) => longDate(day).replace(/^[^,]*, /, '');
  return from.day === to.day ? short(from.day) : short(from.day) + ' – ' + short(to.day);
}

// MARK: drop (one-time credentials of `couchlite receive`: send only, nothing to read back)

const DROP_FACTS = 'couchlite-drop';

/// What the sign-in by token answered (when the session ends, the certificate to compare), kept for reloads.
function dropFacts() {
  try { return JSON.parse(sessionStorage.getItem(DROP_FACTS) || 'null') || {}; } catch (e) { return {}; }
}

function showDrop(db) {
  stopGrid();
  state.db = db;
  state.dropOnly = true;
  $('crumb').textContent = '/ ' + db;
  const input = el('input', { type: 'file', id: 'files', multiple: '', accept: 'image/*,video/*' });
  input.addEventListener('change', () => { upload(Array.from(input.files)); input.value = ''; });
  const facts = dropFacts();
  const ends = facts.expires && !isNaN(Date.parse(facts.expires))
    ? ' It ends at ' + new Date(facts.expires).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) +
      ', or when the receiver stops.' : '';
  const fine = finePointer();
  setMain(el('h1', { text: 'Send photos' }),
    el('p', { id: 'drop-note', text: 'What you send here is saved on the receiving machine. ' +
      'This sign-in can only send: nothing can be read back with it.' + ends }),
    facts.fingerprint_sha256 ? el('p', { class: 'fingerprint', id: 'drop-fingerprint' },
      el('span', { text: 'The receiving screen\u2019s certificate, SHA-256 (your browser\u2019s certificate details ' +
        'for this page must show the same): ' }),
      el('code', { text: facts.fingerprint_sha256 })) : null,
    el('div', { class: 'toolbar' },
      el('label', { class: 'button primary', for: 'files', id: 'choose',
        text: fine ? 'Choose photos…' : 'Choose photos and videos' }), input,
      fine ? el('span', { class: 'count', id: 'drop-hint', text: 'or drop files here' }) : null),
    el('ul', { class: 'uploads', id: 'uploads' }));
}

/// The QR code's link, `#signin=TOKEN`: the token leaves the address bar (and history) at once, then is traded for
/// a drop session (an HttpOnly cookie). - Returns: why it did not sign in, or '' (signed in, or no token).
async function signInByToken() {
  const match = /^#signin=([0-9a-fA-F]*)$/.exec(location.hash);
  if (!match) return '';
  history.replaceState(null, '', location.pathname + location.search + '#/');
  try {
    const reply = await api('/_photos/api/signin', { method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Accept': 'application/json' },
      body: JSON.stringify({ token: match[1] }) });
    try { sessionStorage.setItem(DROP_FACTS, JSON.stringify(reply)); } catch (e) { /* shown without them */ }
    return '';
  } catch (e) { return e.message; }
}

// MARK: grid

function stopGrid() {
  state.live++;
  state.db = null;
  state.dropOnly = false;
  if (state.observer) state.observer.disconnect();
}

async function showGrid(db) {
  stopGrid();
  state.db = db;
  state.items = [];
  state.byId = new Map();
  state.next = null;
  $('crumb').textContent = '/ ' + db;
  const input = el('input', { type: 'file', id: 'files', multiple: '' });
  input.addEventListener('change', () => { upload(Array.from(input.files)); input.value = ''; });
  const grid = el('div', { class: 'timeline', id: 'grid' });
  const more = el('div', { class: 'more', id: 'more' });
  setMain(el('div', { class: 'toolbar' },
    el('label', { class: 'button primary', for: 'files', text: 'Upload…' }), input,
    el('span', { class: 'count', id: 'count' }),
    finePointer() ? el('span', { class: 'count', text: 'or drop files anywhere' }) : null),
  el('ul', { class: 'uploads', id: 'uploads' }), grid, more);
  const first = await loadPage();
  state.observer = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) loadPage();
  }, { rootMargin: '800px' });
  state.observer.observe(more);
  live(db, first ? first.update_seq : 'now', state.live);
}

async function loadPage() {
  if (state.loading || (state.items.length && state.next === null)) return null;
  state.loading = true;
  const db = state.db;
  try {
    const query = '?limit=60' + (state.next !== null ? '&before=' + state.next : '');
    const page = await api(dbPath(db) + '/photos' + query);
    if (db !== state.db) return null;
    for (const item of page.rows) addItem(item);
    state.next = page.next;
    $('more').textContent = page.next === null ? (state.items.length ? '' : 'No photos yet.') : 'Loading…';
    updateCount();
    return page;
  } finally { state.loading = false; }
}

function updateCount() {
  const n = state.items.length;
  $('count').textContent = n + (state.next !== null ? '+' : '') + (n === 1 ? ' file' : ' files');
}

function tile(item) {
  const att = mainAttachment(item);
  const kind = kindOf(att, item);
  const name = displayName(item);
  const link = el('a', { class: 'tile ' + kind, href: '#/db/' + enc(state.db) + '/photo/' + enc(item.id),
    'data-id': item.id, title: name });
  if (att && kind !== 'file') {
    // A video's thumbnail is its poster frame.
    const src = dbPath(state.db) + '/thumb/' + enc(item.id) + '/' + enc(att.name) + '?size=320&v=' +
      enc(att.digest);
    link.append(el('img', { src, alt: name, loading: 'lazy', decoding: 'async' }));
  } else {
    link.append(el('span', { class: 'kind', text: '📄' }));
  }
  if (kind === 'video') {
    link.append(el('span', { class: 'duration', text: '▶ ' + (item.duration ? duration(item.duration) : '') }));
  }
  link.append(el('span', { class: 'label', text: name }));
  return link;
}

/// Newest taken first; the same moment by arrival, newest first.
const before = (a, b) => instantOf(a) > instantOf(b) || (instantOf(a) === instantOf(b) && a.seq > b.seq);

/// The day's section of the grid, made in its place (newest day first, undated last) when missing.
function daySection(day) {
  const grid = $('grid');
  const existing = grid.querySelector('section[data-day="' + CSS.escape(day) + '"]');
  if (existing) return existing.querySelector('.tiles');
  const section = el('section', { class: 'day', 'data-day': day },
    el('h2', { class: 'day-title', text: dayTitle(day) }), el('div', { class: 'tiles' }));
  const later = Array.from(grid.children).find((other) =>
    day !== 'undated' && (other.dataset.day === 'undated' || other.dataset.day < day));
  grid.insertBefore(section, later || null);
  return section.querySelector('.tiles');
}

function tileNode(id) {
  return $('grid') && $('grid').querySelector('.tile[data-id="' + CSS.escape(id) + '"]');
}

function addItem(item) {
  if (!$('grid')) return;
  if (state.byId.has(item.id)) removeItem(item.id, true);
  let index = state.items.findIndex((other) => before(item, other));
  if (index < 0) index = state.items.length;
  state.items.splice(index, 0, item);
  state.byId.set(item.id, item);
  const day = dayKey(item);
  const tiles = daySection(day);
  const next = state.items.slice(index + 1).find((other) => dayKey(other) === day);
  tiles.insertBefore(tile(item), (next && tileNode(next.id)) || null);
}

function removeItem(id, replacing) {
  const item = state.byId.get(id);
  if (!item) return;
  state.items.splice(state.items.indexOf(item), 1);
  state.byId.delete(id);
  const node = tileNode(id);
  if (node) {
    const section = node.closest('section');
    node.remove();
    if (section && !section.querySelector('.tile')) section.remove();
  }
  if (replacing) return;
  updateCount();
  if (state.open === id) closeViewer(true);
}

// MARK: live

async function live(db, since, token) {
  while (state.live === token) {
    try {
      const reply = await api('/' + enc(db) + '/_changes?feed=longpoll&timeout=25000&since=' + enc(since));
      if (state.live !== token) return;
      since = reply.last_seq;
      for (const change of reply.results) {
        if (change.id.startsWith('_design/')) continue;
        if (change.deleted) { removeItem(change.id); continue; }
        try { addItem(await api(dbPath(db) + '/photo/' + enc(change.id))); updateCount(); }
        catch (e) { if (e.status === 404) removeItem(change.id); }
      }
    } catch (e) { await sleep(2000); }
  }
}

// MARK: upload

document.addEventListener('dragover', (event) => {
  if (!state.db) return;
  event.preventDefault();
  $('main').classList.add('drop');
});
document.addEventListener('dragleave', () => $('main').classList.remove('drop'));
document.addEventListener('drop', (event) => {
  if (!state.db) return;
  event.preventDefault();
  $('main').classList.remove('drop');
  upload(Array.from(event.dataTransfer.files));
});

async function upload(files) {
  const db = state.db;
  const rows = files.map((file) => {
    const bar = el('progress', { max: '100', value: '0' });
    const status = el('span', { class: 'state', text: 'waiting' });
    const row = el('li', { 'data-name': file.name }, nameNode(file.name), bar, status);
    $('uploads').append(row);
    return { file, bar, status, row };
  });
  // Two at a time: the link stays busy, and one huge video does not hold up the photos.
  let nextIndex = 0;
  const worker = async () => {
    while (nextIndex < rows.length) await uploadOne(db, rows[nextIndex++]);
  };
  await Promise.all([worker(), worker()]);
}

// Resumable: the file is announced with its length and SHA-256, then sent from the byte the server has. A cut
// connection is retried (waiting longer each time) from the server's offset, and so is the same file picked again
// later (remembered by name, size and time, and found by the server by its digest).

const MAX_ATTEMPTS = 40;

async function uploadOne(db, job) {
  const { file, bar, status, row } = job;
  const key = 'couchlite-upload:' + db + ':' + file.name + ':' + file.size + ':' + file.lastModified;
  let saved = null;
  try { saved = JSON.parse(localStorage.getItem(key) || 'null'); } catch (e) { saved = null; }
  const sha256 = saved && saved.sha256 || await digestFile(file, (done) => {
    status.textContent = 'checking ' + Math.floor(done * 100 / Math.max(file.size, 1)) + ' %';
  });
  for (let attempt = 0; ; attempt++) {
    try {
      const upload = await resumeOrCreate(db, file, sha256, saved && saved.id);
      saved = { id: upload.id, sha256 };
      try { localStorage.setItem(key, JSON.stringify(saved)); } catch (e) { /* private mode: no resume later */ }
      if (upload.offset > 0) row.dataset.resumedFrom = (row.dataset.resumedFrom ? row.dataset.resumedFrom + ',' : '') +
        upload.offset;
      const reply = await sendFrom(db, upload, file, job);
      localStorage.removeItem(key);
      bar.value = 100;
      status.textContent = reply.existing ? 'already there' : 'done';
      row.className = 'done';
      if (state.db === db && !state.dropOnly) {
        try { addItem(await api(dbPath(db) + '/photo/' + enc(reply.id))); updateCount(); }
        catch (e) { /* the live feed will bring it */ }
      }
      return;
    } catch (e) {
      // A refusal is final (a wrong digest, no room, not allowed); a lost connection or a busy server is not.
      const final = e.status && e.status !== 404 && e.status !== 409 && e.status !== 429 && e.status < 500;
      if (final || attempt + 1 >= MAX_ATTEMPTS) {
        if (e.status === 400 || e.status === 415) localStorage.removeItem(key);
        // 415: its bytes are no photo or video (a text file renamed .jpg): listed as not sent, and why.
        status.textContent = e.status === 415 ? 'not sent: not a photo or video' : 'failed: ' + e.message;
        if (e.status === 415) status.title = e.message;
        row.className = e.status === 415 ? 'failed not-media' : 'failed';
        return;
      }
      if (e.status === 404) saved = { sha256 };
      row.className = 'retrying';
      status.textContent = 'connection lost, retrying…';
      // 409: the server still holds the cut-off append (it lets go when it notices the connection is gone).
      await sleep(e.status === 409 ? 2000 : Math.min(30000, 1000 * 2 ** Math.min(attempt, 5)));
    }
  }
}

/// The upload to continue: the one remembered for this file if the server still has it, else a new one (the
/// server answers with the offset of its own if this user already started the same bytes).
async function resumeOrCreate(db, file, sha256, id) {
  if (id) {
    const response = await fetch(dbPath(db) + '/uploads/' + enc(id), { method: 'HEAD', credentials: 'same-origin',
      cache: 'no-store' });
    if (response.ok) return { id, offset: Number(response.headers.get('Upload-Offset')) };
    if (response.status !== 404) throw Object.assign(new Error('HTTP ' + response.status), { status: response.status });
  }
  const query = '?name=' + enc(file.name) + '&type=' + enc(file.type || 'application/octet-stream') +
    '&modified=' + enc(String(file.lastModified || Date.now())) + '&length=' + file.size + '&sha256=' + sha256;
  return api(dbPath(db) + '/uploads' + query, { method: 'POST' });
}

/// Sends the file from `upload.offset` to its end; resolves with the photo's `{id, rev}` once the server has
/// verified it, rejects with a status (409: the server has another offset) or as a lost connection.
function sendFrom(db, upload, file, job) {
  return new Promise((resolve, reject) => {
    const { bar, status } = job;
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', dbPath(db) + '/uploads/' + enc(upload.id));
    xhr.setRequestHeader('Content-Type', 'application/offset+octet-stream');
    xhr.setRequestHeader('Upload-Offset', String(upload.offset));
    const show = (sent) => {
      bar.value = Math.floor(sent * 100 / Math.max(file.size, 1));
      status.textContent = humanSize(sent);
    };
    xhr.upload.addEventListener('progress', (event) => show(upload.offset + event.loaded));
    xhr.addEventListener('load', () => {
      let reply = null;
      try { reply = JSON.parse(xhr.responseText); } catch (e) { reply = null; }
      if ((xhr.status === 201 || xhr.status === 200) && reply && reply.rev) return resolve(reply);
      const error = new Error((reply && reply.reason) || ('HTTP ' + xhr.status));
      // 200 without a photo: the server kept less than was sent; ask it where to go on.
      error.status = xhr.status === 200 ? 409 : xhr.status;
      reject(error);
    });
    const lost = () => reject(new Error('network'));
    xhr.addEventListener('error', lost);
    xhr.addEventListener('abort', lost);
    xhr.addEventListener('timeout', lost);
    show(upload.offset);
    xhr.send(file.slice(upload.offset));
  });
}

/// The file's SHA-256 as hex, read a slice at a time (WebCrypto has no streaming digest, and none at all on a
/// plain-HTTP LAN address, where the drop page is used).
async function digestFile(file, progress) {
  const sha = new Sha256();
  const step = 4 * 1024 * 1024;
  for (let offset = 0; offset < file.size; offset += step) {
    progress(offset);
    sha.update(new Uint8Array(await file.slice(offset, offset + step).arrayBuffer()));
  }
  return sha.hex();
}

/// SHA-256 (FIPS 180-4), incremental.
class Sha256 {
  constructor() {
    this.h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c,
      0x1f83d9ab, 0x5be0cd19]);
    this.w = new Uint32Array(64);
    this.pending = new Uint8Array(64);
    this.pendingLength = 0;
    this.length = 0;
  }

  update(bytes) {
    this.length += bytes.length;
    let i = 0;
    if (this.pendingLength) {
      i = Math.min(64 - this.pendingLength, bytes.length);
      this.pending.set(bytes.subarray(0, i), this.pendingLength);
      this.pendingLength += i;
      if (this.pendingLength < 64) return;
      this.block(this.pending, 0);
      this.pendingLength = 0;
    }
    for (; i + 64 <= bytes.length; i += 64) this.block(bytes, i);
    this.pending.set(bytes.subarray(i), 0);
    this.pendingLength = bytes.length - i;
  }

  block(bytes, at) {
    const w = this.w, k = Sha256.K;
    for (let t = 0; t < 16; t++) {
      const j = at + 4 * t;
      w[t] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
    }
    for (let t = 16; t < 64; t++) {
      const x = w[t - 15], y = w[t - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
    }
    let [a, b, c, d, e, f, g, h] = this.h;
    for (let t = 0; t < 64; t++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + s1 + ((e & f) ^ (~e & g)) + k[t] + w[t]) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    const H = this.h;
    H[0] += a; H[1] += b; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
  }

  hex() {
    const bits = this.length * 8;
    const tail = new Uint8Array((this.pendingLength < 56 ? 64 : 128) - this.pendingLength);
    tail[0] = 0x80;
    const view = new DataView(tail.buffer);
    view.setUint32(tail.length - 8, Math.floor(bits / 0x100000000));
    view.setUint32(tail.length - 4, bits >>> 0);
    this.update(tail);
    return Array.from(this.h, (word) => word.toString(16).padStart(8, '0')).join('');
  }
}

Sha256.K = new Uint32Array([0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
  0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7,
  0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
  0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
  0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c,
  0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
  0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);

// MARK: viewer

// Browsers show these themselves. Anything else (HEIC and HEIF from iPhones, AVIF, which not every browser shows)
// is shown as the server's full-size JPEG preview, made once and cached; Download still gives the original bytes.
const BROWSER_IMAGES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

function viewerSource(db, id, att) {
  const type = (att.content_type || '').toLowerCase();
  return BROWSER_IMAGES.has(type) ? attPath(db, id, att.name)
    : dbPath(db) + '/preview/' + enc(id) + '/' + enc(att.name);
}

// A Live Photo (a still and its video in one document): the still, and a button that plays the moment.
function liveButton(stage, still, videoSrc) {
  return el('button', { type: 'button', class: 'live', text: 'LIVE', title: 'Play the Live Photo', id: 'live',
    onclick: () => stage.replaceChildren(el('video', { src: videoSrc, poster: still.src, controls: '',
      autoplay: '', playsinline: '', id: 'player' })) });
}

async function openPhoto(id) {
  let item = state.byId.get(id);
  if (!item) {
    try { item = await api(dbPath(state.db) + '/photo/' + enc(id)); } catch (e) { return; }
  }
  state.open = id;
  const att = mainAttachment(item);
  const kind = kindOf(att, item);
  const stage = $('stage');
  stage.replaceChildren();
  if (att && kind === 'image') {
    const still = el('img', { src: viewerSource(state.db, id, att), alt: displayName(item), id: 'full' });
    stage.append(still);
    if (typeof item.live === 'string') stage.append(liveButton(stage, still, attPath(state.db, id, item.live)));
  } else if (att && kind === 'video') {
    stage.append(el('video', { src: attPath(state.db, id, att.name), controls: '', preload: 'metadata',
      id: 'player', playsinline: '' }));
  } else {
    stage.append(el('div', { class: 'file', text: '📄' }));
  }
  $('v-name').textContent = displayName(item);
  $('v-meta').textContent = [att ? humanSize(att.length) : '', att ? att.content_type : '']
    .filter(Boolean).join(' · ');
  const taken = localParts(takenOf(item));
  const info = [
    ['Taken', taken ? longDate(taken.day) + ', ' + taken.time + (taken.offset ? ' (UTC' + taken.offset + ')' : '') : ''],
    ['Camera', cameraName(item.camera)],
    ['Size', item.width > 0 && item.height > 0 ? item.width + ' × ' + item.height : ''],
    ['Length', item.duration ? duration(item.duration) : ''],
  ].filter(([, value]) => value);
  $('v-info').replaceChildren(...info.flatMap(([key, value]) =>
    [el('dt', { text: key }), el('dd', { text: value, 'data-field': key.toLowerCase() })]));
  const rows = [['id', item.id], ['rev', item.rev]];
  for (const [key, value] of Object.entries(item.fields || {})) {
    rows.push([key, typeof value === 'string' ? value : JSON.stringify(value)]);
  }
  $('v-fields').replaceChildren(...rows.map(([key, value]) =>
    el('tr', null, el('td', { text: key }), el('td', { text: value }))));
  const download = $('download');
  if (att) {
    download.hidden = false;
    download.href = dbPath(state.db) + '/download/' + enc(id) + '/' + enc(att.name);
  } else download.hidden = true;
  const index = state.items.indexOf(item);
  $('prev').disabled = index <= 0;
  $('next').disabled = index < 0 || (index >= state.items.length - 1 && state.next === null);
  $('viewer').hidden = false;
}

function closeViewer(navigate) {
  const video = $('player');
  if (video) video.pause();
  $('stage').replaceChildren();
  $('viewer').hidden = true;
  state.open = null;
  if (navigate && state.db) history.replaceState(null, '', '#/db/' + enc(state.db));
}

async function step(delta) {
  if (!state.open) return;
  let index = state.items.indexOf(state.byId.get(state.open)) + delta;
  if (index >= state.items.length && state.next !== null) await loadPage();
  if (index < 0 || index >= state.items.length) return;
  location.hash = '#/db/' + enc(state.db) + '/photo/' + enc(state.items[index].id);
}

$('close').addEventListener('click', () => closeViewer(true));
$('prev').addEventListener('click', () => step(-1));
$('next').addEventListener('click', () => step(1));
document.addEventListener('keydown', (event) => {
  if ($('viewer').hidden || $('confirm').open) return;
  if (event.key === 'Escape') closeViewer(true);
  else if (event.key === 'ArrowLeft') step(-1);
  else if (event.key === 'ArrowRight') step(1);
});

$('delete').addEventListener('click', () => {
  const item = state.byId.get(state.open);
  if (!item) return;
  $('confirm-text').textContent = 'Delete “' + displayName(item) + '”? This cannot be undone.';
  $('confirm').returnValue = '';
  $('confirm').showModal();
});

$('confirm').addEventListener('close', async () => {
  if ($('confirm').returnValue !== 'ok') return;
  const item = state.byId.get(state.open);
  if (!item) return;
  try {
    await api(dbPath(state.db) + '/doc/' + enc(item.id) + '?rev=' + enc(item.rev), { method: 'DELETE' });
    removeItem(item.id);
    closeViewer(true);
  } catch (e) { $('v-meta').textContent = 'Could not delete: ' + e.message; }
});

window.addEventListener('hashchange', route);
signInByToken().then((problem) => { state.notice = problem; route(); });
