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

function kindOf(att) {
  const type = (att && att.content_type || '').toLowerCase();
  if (type.startsWith('video/')) return 'video';
  if (type.startsWith('image/')) return 'image';
  return 'file';
}

// MARK: routing

async function route() {
  closeViewer(false);
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  try {
    const session = await api('/_session');
    state.user = session.userCtx && session.userCtx.name ? session.userCtx : null;
  } catch (e) { state.user = null; }
  $('who').textContent = state.user ? state.user.name : '';
  $('signout').hidden = !state.user;
  if (!state.user) return showSignIn();
  try {
    if (state.drop === undefined) state.drop = (await api('/_photos/api/dbs')).drop || null;
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
  main.replaceChildren(...children);
  main.className = '';
}

// MARK: sign in

function showSignIn() {
  stopGrid();
  $('crumb').textContent = '';
  const error = el('p', { class: 'error', id: 'signin-error', role: 'alert' });
  const form = el('form', { class: 'signin', id: 'signin' },
    el('h1', { text: 'Sign in' }),
    el('input', { name: 'name', id: 'name', placeholder: 'User name', autocomplete: 'username',
      required: '' }),
    el('input', { name: 'password', id: 'password', type: 'password', placeholder: 'Password',
      autocomplete: 'current-password', required: '' }),
    el('button', { class: 'primary', type: 'submit', text: 'Sign in' }), error);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    try {
      await api('/_session', { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: form.name.value, password: form.password.value }) });
      route();
    } catch (e) { error.textContent = e.status === 401 ? 'Wrong name or password.' : e.message; }
  });
  setMain(form);
  form.name.focus();
}

$('signout').addEventListener('click', async () => {
  try { await api('/_session', { method: 'DELETE' }); } catch (e) { /* already out */ }
  state.drop = undefined;
  location.hash = '#/';
  route();
});

// MARK: databases

async function showDatabases() {
  stopGrid();
  $('crumb').textContent = '';
  const reply = await api('/_photos/api/dbs');
  const list = el('ul', { class: 'dbs', id: 'dbs' });
  for (const name of reply.databases) {
    list.append(el('li', null, el('a', { href: '#/db/' + enc(name), text: name })));
  }
  setMain(el('h1', { text: 'Albums' }),
    reply.databases.length ? list : el('p', { text: 'There is no database you may read.' }));
}

// MARK: drop (one-time credentials of `couchlite receive`: send only, nothing to read back)

function showDrop(db) {
  stopGrid();
  state.db = db;
  state.dropOnly = true;
  $('crumb').textContent = '/ ' + db;
  const input = el('input', { type: 'file', id: 'files', multiple: '', accept: 'image/*,video/*' });
  input.addEventListener('change', () => { upload(Array.from(input.files)); input.value = ''; });
  setMain(el('h1', { text: 'Send photos' }),
    el('p', { id: 'drop-note', text: 'What you send here is saved on the receiving machine. ' +
      'These credentials can only send: nothing can be read back with them.' }),
    el('div', { class: 'toolbar' },
      el('label', { class: 'button primary', for: 'files', text: 'Choose photos…' }), input,
      el('span', { class: 'count', text: 'or drop files anywhere' })),
    el('ul', { class: 'uploads', id: 'uploads' }));
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
  const grid = el('div', { class: 'grid', id: 'grid' });
  const more = el('div', { class: 'more', id: 'more' });
  setMain(el('div', { class: 'toolbar' },
    el('label', { class: 'button primary', for: 'files', text: 'Upload…' }), input,
    el('span', { class: 'count', id: 'count' }),
    el('span', { class: 'count', text: 'or drop files anywhere' })),
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
    for (const item of page.rows) addItem(item, false);
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
  const kind = kindOf(att);
  const name = displayName(item);
  const link = el('a', { class: 'tile ' + kind, href: '#/db/' + enc(state.db) + '/photo/' + enc(item.id),
    'data-id': item.id, title: name });
  if (att && kind === 'image') {
    const src = dbPath(state.db) + '/thumb/' + enc(item.id) + '/' + enc(att.name) + '?size=320&v=' +
      enc(att.digest);
    link.append(el('img', { src, alt: name, loading: 'lazy', decoding: 'async' }));
  } else {
    link.append(el('span', { class: 'kind', text: kind === 'video' ? '▶' : '📄' }));
  }
  link.append(el('span', { class: 'label', text: name }));
  return link;
}

function addItem(item, atTop) {
  const grid = $('grid');
  if (!grid) return;
  const old = state.byId.get(item.id);
  const node = tile(item);
  if (old) {
    const index = state.items.indexOf(old);
    state.items[index] = item;
    const oldNode = grid.querySelector('[data-id="' + CSS.escape(item.id) + '"]');
    if (oldNode) oldNode.replaceWith(node);
  } else if (atTop) {
    state.items.unshift(item);
    grid.prepend(node);
  } else {
    state.items.push(item);
    grid.append(node);
  }
  state.byId.set(item.id, item);
}

function removeItem(id) {
  const item = state.byId.get(id);
  if (!item) return;
  state.items.splice(state.items.indexOf(item), 1);
  state.byId.delete(id);
  const node = $('grid') && $('grid').querySelector('[data-id="' + CSS.escape(id) + '"]');
  if (node) node.remove();
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
        try { addItem(await api(dbPath(db) + '/photo/' + enc(change.id)), true); updateCount(); }
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
    const row = el('li', { 'data-name': file.name }, el('span', { class: 'name', text: file.name }), bar,
      status);
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

function uploadOne(db, job) {
  return new Promise((done) => {
    const { file, bar, status, row } = job;
    const xhr = new XMLHttpRequest();
    const query = '?name=' + enc(file.name) + '&type=' + enc(file.type || 'application/octet-stream') +
      '&modified=' + enc(String(file.lastModified || Date.now()));
    xhr.open('POST', dbPath(db) + '/upload' + query);
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    xhr.upload.addEventListener('progress', (event) => {
      if (!event.lengthComputable) return;
      bar.value = Math.floor(event.loaded * 100 / event.total);
      status.textContent = humanSize(event.loaded);
    });
    xhr.addEventListener('load', async () => {
      let reply = null;
      try { reply = JSON.parse(xhr.responseText); } catch (e) { reply = null; }
      if (xhr.status === 201 || xhr.status === 200) {
        bar.value = 100;
        status.textContent = xhr.status === 200 ? 'already there' : 'done';
        row.className = 'done';
        if (state.db === db && reply && !state.dropOnly) {
          try { addItem(await api(dbPath(db) + '/photo/' + enc(reply.id)), true); updateCount(); }
          catch (e) { /* the live feed will bring it */ }
        }
      } else {
        status.textContent = 'failed: ' + ((reply && reply.reason) || xhr.status);
        row.className = 'failed';
      }
      done();
    });
    xhr.addEventListener('error', () => { status.textContent = 'failed: network'; row.className = 'failed';
      done(); });
    status.textContent = '0 B';
    xhr.send(file);
  });
}

// MARK: viewer

async function openPhoto(id) {
  let item = state.byId.get(id);
  if (!item) {
    try { item = await api(dbPath(state.db) + '/photo/' + enc(id)); } catch (e) { return; }
  }
  state.open = id;
  const att = mainAttachment(item);
  const kind = kindOf(att);
  const stage = $('stage');
  stage.replaceChildren();
  if (att && kind === 'image') {
    stage.append(el('img', { src: attPath(state.db, id, att.name), alt: displayName(item), id: 'full' }));
  } else if (att && kind === 'video') {
    stage.append(el('video', { src: attPath(state.db, id, att.name), controls: '', preload: 'metadata',
      id: 'player', playsinline: '' }));
  } else {
    stage.append(el('div', { class: 'file', text: '📄' }));
  }
  $('v-name').textContent = displayName(item);
  const taken = item.fields && item.fields.taken ? new Date(item.fields.taken) : null;
  const when = taken && !isNaN(taken) ? taken.toLocaleString() : '';
  $('v-meta').textContent = [att ? humanSize(att.length) : '', when, att ? att.content_type : '']
    .filter(Boolean).join(' · ');
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
route();
