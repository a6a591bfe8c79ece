// The couchlite database console (/_utils/). Every element is built with DOM calls and every piece of data goes
// in as textContent or an attribute value: nothing a database holds is ever parsed as HTML, and the page's CSP
// forbids inline script and style besides. Every request is CouchDB's own API with the `_session` cookie; writes
// carry a JSON body (or are PUT/DELETE), which, with the browser's Origin, is what the server checks them by.
'use strict';

const enc = encodeURIComponent;
const view = () => document.getElementById('view');
let timers = [];
let session = null;
// Aborted when another page is opened: a page still loading must not draw over the one opened after it.
let pageLoads = new AbortController();

// ---- DOM helpers -------------------------------------------------------------------------------------------

/** An element: `attrs` are set as attributes (or `on…` listeners, or `text`), `children` strings become text. */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = String(value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'checked' || key === 'value' || key === 'disabled' || key === 'hidden') node[key] = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  return node;
}

function show(...nodes) {
  const main = view();
  main.replaceChildren(...nodes);
}

function toast(message) {
  const node = document.getElementById('toast');
  node.textContent = message;
  node.classList.add('shown');
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => node.classList.remove('shown'), 2500);
}

function every(ms, fn) {
  fn();
  timers.push(setInterval(fn, ms));
}

function table(headers, rows, id) {
  return el('div', { class: 'scroll' }, el('table', { id },
    el('thead', {}, el('tr', {}, headers.map((h) => el('th', { class: h.cls, text: typeof h === 'string' ? h : h.text })))),
    el('tbody', {}, rows)));
}

function pretty(value) { return JSON.stringify(value, null, 2); }

function bytes(n) {
  if (typeof n !== 'number') return '–';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(n) : n.toFixed(1)) + ' ' + units[i];
}

function errorText(error) {
  if (error && error.body && error.body.error) {
    return error.body.error + (error.body.reason ? ': ' + error.body.reason : '');
  }
  return String(error && error.message ? error.message : error);
}

/** Runs a reload started by a button: a page opened meanwhile aborts its reads (nothing to say), other failures
 * are said in the toast. */
function quietly(promise) {
  promise.catch((error) => { if (!error || error.name !== 'AbortError') toast(errorText(error)); });
}

function errorLine(id) { return el('p', { class: 'error', id, role: 'alert' }); }

// ---- HTTP --------------------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.reason ? body.reason : 'HTTP ' + status);
    this.status = status;
    this.body = body;
  }
}

/** CouchDB's API, as the signed-in user: `body` is sent as JSON unless it is a Blob (an attachment). */
async function api(method, path, body, headers) {
  // no-store: a document's ETag is its winning rev, so a cached copy would hide a conflict just deleted.
  const options = { method, credentials: 'same-origin', cache: 'no-store', headers: Object.assign({ Accept: 'application/json' }, headers) };
  if (method === 'GET') options.signal = pageLoads.signal;
  if (body instanceof Blob) {
    options.body = body;
  } else if (body !== undefined) {
    options.headers['Content-Type'] = 'application/json';
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch (_) { parsed = { error: 'unreadable', reason: text.slice(0, 200) }; }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

function dbPath(db) { return '/' + enc(db); }

function docPath(db, id) {
  for (const prefix of ['_design/', '_local/']) {
    if (id.startsWith(prefix)) return dbPath(db) + '/' + prefix + enc(id.slice(prefix.length));
  }
  return dbPath(db) + '/' + enc(id);
}

function query(params) {
  const parts = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') continue;
    parts.push(enc(key) + '=' + enc(typeof value === 'string' ? value : JSON.stringify(value)));
  }
  return parts.length ? '?' + parts.join('&') : '';
}

/** A key field: JSON when it parses as JSON, else the text as a string (as Fauxton takes `startkey`). */
function keyValue(text) {
  if (text.trim() === '') return undefined;
  try { return JSON.stringify(JSON.parse(text)); } catch (_) { return JSON.stringify(text); }
}

// ---- Routing -----------------------------------------------------------------------------------------------

function link(hash, text, attrs) { return el('a', Object.assign({ href: hash, text }, attrs || {})); }
function dbHash(db, tab) { return '#/db/' + enc(db) + (tab ? '/' + tab : ''); }
function docHash(db, id) { return dbHash(db, 'doc/' + enc(id)); }

async function route() {
  for (const timer of timers) clearInterval(timer);
  timers = [];
  pageLoads.abort();
  pageLoads = new AbortController();
  if (!session) return;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map((p) => { try { return decodeURIComponent(p); } catch (_) { return p; } });
  for (const a of document.querySelectorAll('nav a')) a.classList.remove('current');
  try {
    if (parts[0] === 'db' && parts[1] !== undefined) {
      document.getElementById('nav-databases').classList.add('current');
      const db = parts[1];
      const tab = parts[2] || 'docs';
      if (tab === 'doc') return await documentPage(db, parts.slice(3).join('/'));
      if (tab === 'new') return await documentPage(db, null);
      if (tab === 'find') return await mangoPage(db);
      if (tab === 'indexes') return await indexesPage(db);
      if (tab === 'design') return await designPage(db);
      if (tab === 'view') return await viewPage(db, parts[3], parts.slice(4).join('/'));
      if (tab === 'security') return await securityPage(db);
      return await documentsPage(db);
    }
    if (parts[0] === 'replication') {
      document.getElementById('nav-replication').classList.add('current');
      return await replicationPage();
    }
    if (parts[0] === 'server') {
      document.getElementById('nav-server').classList.add('current');
      return await serverPage();
    }
    document.getElementById('nav-databases').classList.add('current');
    return await databasesPage();
  } catch (error) {
    if (error && error.name === 'AbortError') return;
    if (error instanceof ApiError && error.status === 401) return signInPage('Your session has ended: sign in again.');
    show(el('h1', { text: 'Something went wrong' }), el('p', { class: 'error', id: 'page-error', text: errorText(error) }));
  }
}

// ---- Session -----------------------------------------------------------------------------------------------

async function start() {
  document.getElementById('signout').addEventListener('click', async () => {
    await api('DELETE', '/_session').catch(() => null);
    session = null;
    signInPage();
  });
  window.addEventListener('hashchange', route);
  const info = await api('GET', '/_session').catch(() => null);
  if (info && info.userCtx && info.userCtx.name) {
    signedIn(info.userCtx);
  } else {
    signInPage();
  }
}

function signedIn(userCtx) {
  session = userCtx;
  document.getElementById('who').textContent = userCtx.name + (userCtx.roles.includes('_admin') ? ' (admin)' : '');
  document.getElementById('nav').hidden = false;
  document.getElementById('signout').hidden = false;
  route();
}

function signInPage(message) {
  for (const timer of timers) clearInterval(timer);
  timers = [];
  session = null;
  document.getElementById('who').textContent = '';
  document.getElementById('nav').hidden = true;
  document.getElementById('signout').hidden = true;
  const name = el('input', { id: 'name', name: 'name', autocomplete: 'username', required: true });
  const password = el('input', { id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const error = errorLine('signin-error');
  if (message) error.textContent = message;
  const form = el('form', { class: 'signin', id: 'signin' },
    el('h1', { text: 'Sign in' }),
    el('label', {}, 'Name', name),
    el('label', {}, 'Password', password),
    error,
    el('button', { type: 'submit', class: 'primary', text: 'Sign in' }));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    try {
      await api('POST', '/_session', { name: name.value, password: password.value });
      const info = await api('GET', '/_session');
      signedIn(info.userCtx);
    } catch (e) {
      error.textContent = e.status === 401 ? 'Wrong name or password.' : errorText(e);
    }
  });
  show(form);
  name.focus();
}

// ---- Databases ---------------------------------------------------------------------------------------------

const nameRules = [
  ['starts with a lowercase letter (a-z)', (n) => /^[a-z]/.test(n) || /^_(users|replicator|global_changes)$/.test(n)],
  ['has only a-z, 0-9 and _ $ ( ) + - /', (n) => /^_?[a-z0-9_$()+/-]*$/.test(n)],
  ['is at most 238 characters', (n) => n.length <= 238],
];

function nameProblems(name) {
  return nameRules.filter(([, test]) => !test(name)).map(([text]) => text);
}

const dbList = { page: 0, perPage: 20 };

async function databasesPage() {
  const admin = session.roles.includes('_admin');
  const body = el('div', { id: 'db-list' }, el('p', { class: 'muted', text: 'Loading…' }));
  const nameInput = el('input', { id: 'new-db-name', placeholder: 'new database name', autocomplete: 'off', 'aria-describedby': 'db-name-rules' });
  const rules = el('ul', { class: 'rules', id: 'db-name-rules' });
  const create = el('button', { type: 'submit', class: 'primary', id: 'create-db', text: 'Create', disabled: true });
  const createError = errorLine('create-db-error');
  const checkName = () => {
    const name = nameInput.value;
    rules.replaceChildren(...nameRules.map(([text, test]) =>
      el('li', { class: name === '' ? '' : test(name) ? 'pass' : 'fail', text: (name === '' ? '• ' : test(name) ? '✓ ' : '✗ ') + 'Name ' + text })));
    create.disabled = name === '' || nameProblems(name).length > 0;
  };
  nameInput.addEventListener('input', checkName);
  checkName();
  const form = el('form', { class: 'panel', id: 'create-db-form' }, el('div', { class: 'row' }, nameInput, create), rules, createError);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    createError.textContent = '';
    try {
      await api('PUT', dbPath(nameInput.value));
      toast('Database ' + nameInput.value + ' created');
      location.hash = dbHash(nameInput.value);
    } catch (e) { createError.textContent = errorText(e); }
  });
  show(el('h1', { text: 'Databases' }), admin ? form : null, body);
  await loadDatabases(body);
}

async function loadDatabases(body) {
  const { page, perPage } = dbList;
  let names;
  try {
    names = await api('GET', '/_all_dbs' + query({ skip: String(page * perPage), limit: String(perPage + 1) }));
  } catch (e) {
    if (e.status === 401 || e.status === 403) {
      body.replaceChildren(el('p', { class: 'muted', text: 'Only server admins can list databases. Open one by name:' }), openByName());
      return;
    }
    throw e;
  }
  const more = names.length > perPage;
  names = names.slice(0, perPage);
  const infos = names.length ? await api('POST', '/_dbs_info', { keys: names }) : [];
  const rows = infos.map((entry) => databaseRow(entry, body));
  const pager = el('div', { class: 'pager' },
    el('button', { type: 'button', id: 'dbs-prev', text: '← Previous', disabled: page === 0, onclick: () => { dbList.page--; quietly(loadDatabases(body)); } }),
    el('span', { class: 'muted', id: 'dbs-page', text: 'Page ' + (page + 1) }),
    el('button', { type: 'button', id: 'dbs-next', text: 'Next →', disabled: !more, onclick: () => { dbList.page++; quietly(loadDatabases(body)); } }),
    el('label', {}, 'Per page', el('select', { id: 'dbs-per-page', onchange: (e) => { dbList.perPage = Number(e.target.value); dbList.page = 0; quietly(loadDatabases(body)); } },
      [10, 20, 50, 100].map((n) => el('option', { value: String(n), text: String(n), selected: n === perPage ? 'selected' : null })))));
  body.replaceChildren(
    table([{ text: 'Name' }, { text: 'Documents', cls: 'num' }, { text: 'Deleted', cls: 'num hide-narrow' },
      { text: 'Size (active / file)', cls: 'num' }, { text: 'Update seq', cls: 'hide-narrow' }, { text: '' }], rows, 'dbs'),
    names.length ? null : el('p', { class: 'muted', text: 'No databases yet.' }),
    pager);
}

function openByName() {
  const input = el('input', { id: 'open-db-name', placeholder: 'database name' });
  const form = el('form', { class: 'row' }, input, el('button', { type: 'submit', text: 'Open' }));
  form.addEventListener('submit', (e) => { e.preventDefault(); if (input.value) location.hash = dbHash(input.value); });
  return form;
}

function databaseRow(entry, body) {
  const name = entry.key;
  const info = entry.info;
  if (!info) return el('tr', {}, el('td', { class: 'id', text: name }), el('td', { colspan: '5', class: 'muted', text: entry.error || 'unavailable' }));
  const sizes = info.sizes || {};
  const seq = String(info.update_seq || '');
  const remove = el('button', { type: 'button', class: 'danger small', text: 'Delete', 'data-db': name });
  const row = el('tr', { 'data-db': name },
    el('td', { class: 'id' }, link(dbHash(name), name, { class: 'db-name' })),
    el('td', { class: 'num doc-count', text: String(info.doc_count) }),
    el('td', { class: 'num hide-narrow', text: String(info.doc_del_count) }),
    el('td', { class: 'num', text: bytes(sizes.active) + ' / ' + bytes(sizes.file) }),
    el('td', { class: 'hide-narrow muted', text: seq.length > 14 ? seq.slice(0, 14) + '…' : seq }),
    el('td', {}, remove));
  remove.addEventListener('click', () => confirmDelete(row, name, body));
  return row;
}

function confirmDelete(row, name, body) {
  const typed = el('input', { id: 'confirm-db-name', placeholder: name, autocomplete: 'off' });
  const go = el('button', { type: 'submit', class: 'danger solid', id: 'confirm-delete-db', text: 'Delete for ever', disabled: true });
  const error = errorLine();
  typed.addEventListener('input', () => { go.disabled = typed.value !== name; });
  const form = el('form', { class: 'panel warn', id: 'delete-db-confirm' },
    el('p', {}, 'Delete the database ', el('strong', { text: name }), ' and all its documents? Type its name to confirm.'),
    el('div', { class: 'row' }, typed, go, el('button', { type: 'button', text: 'Cancel', onclick: () => cell.remove() })), error);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await api('DELETE', dbPath(name));
      toast('Database ' + name + ' deleted');
      quietly(loadDatabases(body));
    } catch (e) { error.textContent = errorText(e); }
  });
  const old = document.getElementById('delete-db-confirm');
  if (old) old.closest('tr').remove();
  const cell = el('tr', {}, el('td', { colspan: '6' }, form));
  row.after(cell);
  typed.focus();
}

// ---- One database: tabs ------------------------------------------------------------------------------------

function dbHeader(db, current) {
  const tabs = [['docs', 'Documents'], ['find', 'Mango query'], ['indexes', 'Indexes'], ['design', 'Design documents'], ['security', 'Permissions']];
  return [
    el('h1', {}, link('#/', 'Databases'), ' / ', el('span', { id: 'db-title', text: db })),
    el('nav', { class: 'tabs' }, tabs.map(([tab, text]) => link(dbHash(db, tab === 'docs' ? '' : tab), text, { class: tab === current ? 'current' : null, id: 'tab-' + tab }))),
  ];
}

// ---- Documents ---------------------------------------------------------------------------------------------

const docList = { db: null, page: 0, perPage: 20, startkey: '', endkey: '', keys: '', descending: false, includeDocs: false };

async function documentsPage(db) {
  if (docList.db !== db) Object.assign(docList, { db, page: 0, startkey: '', endkey: '', keys: '', descending: false, includeDocs: false });
  const info = await api('GET', dbPath(db));
  const startkey = el('input', { id: 'opt-startkey', value: docList.startkey, placeholder: 'startkey' });
  const endkey = el('input', { id: 'opt-endkey', value: docList.endkey, placeholder: 'endkey' });
  const keys = el('input', { id: 'opt-keys', value: docList.keys, placeholder: 'keys: ["a","b"]' });
  const descending = el('input', { type: 'checkbox', id: 'opt-descending', checked: docList.descending });
  const includeDocs = el('input', { type: 'checkbox', id: 'opt-include-docs', checked: docList.includeDocs });
  const error = errorLine('docs-error');
  const results = el('div', { id: 'docs-results' });
  const form = el('form', { class: 'panel', id: 'docs-options' },
    el('div', { class: 'grid' },
      el('label', {}, 'Start key', startkey), el('label', {}, 'End key', endkey), el('label', {}, 'Keys (JSON array)', keys)),
    el('div', { class: 'row' },
      el('label', {}, descending, 'Descending'), el('label', {}, includeDocs, 'Include documents'),
      el('button', { type: 'submit', text: 'Apply', id: 'docs-apply' }),
      link(dbHash(db, 'new'), 'New document', { class: 'button primary', id: 'new-doc' })),
    error);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    Object.assign(docList, { page: 0, startkey: startkey.value, endkey: endkey.value, keys: keys.value, descending: descending.checked, includeDocs: includeDocs.checked });
    loadDocuments(db, results, error);
  });
  show(...dbHeader(db, 'docs'),
    el('dl', { class: 'figures' },
      el('dt', { text: 'Documents' }), el('dd', { id: 'db-doc-count', text: String(info.doc_count) }),
      el('dt', { text: 'Deleted' }), el('dd', { text: String(info.doc_del_count) }),
      el('dt', { text: 'Size' }), el('dd', { text: bytes(info.sizes && info.sizes.active) + ' active, ' + bytes(info.sizes && info.sizes.file) + ' on disk' })),
    form, results);
  await loadDocuments(db, results, error);
}

async function loadDocuments(db, results, error) {
  error.textContent = '';
  const { page, perPage } = docList;
  const params = { limit: String(perPage + 1), skip: String(page * perPage), descending: docList.descending ? 'true' : '', include_docs: docList.includeDocs ? 'true' : '' };
  let response;
  try {
    if (docList.keys.trim()) {
      const keys = JSON.parse(docList.keys);
      if (!Array.isArray(keys)) throw new Error('Keys must be a JSON array.');
      response = await api('POST', dbPath(db) + '/_all_docs' + query(params), { keys });
    } else {
      params.startkey = keyValue(docList.startkey);
      params.endkey = keyValue(docList.endkey);
      response = await api('GET', dbPath(db) + '/_all_docs' + query(params));
    }
  } catch (e) {
    error.textContent = errorText(e);
    return;
  }
  const more = response.rows.length > perPage;
  const rows = response.rows.slice(0, perPage).map((row) => el('tr', {},
    el('td', { class: 'id' }, row.id ? link(docHash(db, row.id), row.id, { class: 'doc-id' }) : el('span', { class: 'muted', text: String(row.key) })),
    el('td', { class: 'muted rev', text: row.value ? row.value.rev + (row.value.deleted ? ' (deleted)' : '') : row.error || '' }),
    docList.includeDocs ? el('td', { class: 'json', text: row.doc ? JSON.stringify(row.doc) : '' }) : null));
  const headers = [{ text: 'ID' }, { text: 'Revision' }].concat(docList.includeDocs ? [{ text: 'Document' }] : []);
  results.replaceChildren(
    table(headers, rows, 'docs'),
    el('div', { class: 'pager' },
      el('button', { type: 'button', id: 'docs-prev', text: '← Previous', disabled: page === 0, onclick: () => { docList.page--; loadDocuments(db, results, error); } }),
      el('span', { class: 'muted', text: 'Page ' + (page + 1) + ' · ' + (response.total_rows !== undefined ? response.total_rows + ' rows in all' : '') }),
      el('button', { type: 'button', id: 'docs-next', text: 'Next →', disabled: !more, onclick: () => { docList.page++; loadDocuments(db, results, error); } }),
      el('label', {}, 'Per page', el('select', { onchange: (e) => { docList.perPage = Number(e.target.value); docList.page = 0; loadDocuments(db, results, error); } },
        [10, 20, 50, 100].map((n) => el('option', { value: String(n), text: String(n), selected: n === perPage ? 'selected' : null }))))));
}

// ---- One document: editor, revisions, conflicts, attachments -----------------------------------------------

function withoutMeta(doc) {
  const copy = Object.assign({}, doc);
  delete copy._revs_info;
  delete copy._conflicts;
  delete copy._deleted_conflicts;
  return copy;
}

/** Two JSON texts side by side, the lines of each that the other lacks marked. */
function compareView(titleA, a, titleB, b) {
  const linesA = pretty(a).split('\n');
  const linesB = pretty(b).split('\n');
  const setA = new Set(linesA);
  const setB = new Set(linesB);
  const side = (title, lines, other, cls) => el('div', { class: cls },
    el('h3', { text: title }),
    el('pre', {}, lines.map((line) => el('span', { class: 'diff-line' + (other.has(line) ? '' : ' changed'), text: line + '\n' }))));
  return el('div', { class: 'compare', id: 'compare' }, side(titleA, linesA, setB, 'side-a'), side(titleB, linesB, setA, 'side-b'));
}

async function documentPage(db, id) {
  let doc;
  if (id === null) {
    const uuids = await api('GET', '/_uuids');
    doc = { _id: uuids.uuids[0] };
  } else {
    doc = await api('GET', docPath(db, id) + query({ revs_info: 'true', conflicts: 'true', deleted_conflicts: 'true' }));
  }
  const editor = el('textarea', { class: 'editor', id: 'doc-editor', spellcheck: 'false', 'aria-label': 'Document JSON' });
  editor.value = pretty(withoutMeta(doc));
  const status = el('p', { class: 'muted', id: 'doc-status', text: doc._rev ? 'Revision ' + doc._rev : 'Not saved yet' });
  const error = errorLine('doc-error');
  const conflictBox = el('div', { id: 'conflict-box' });
  const save = el('button', { type: 'button', class: 'primary', id: 'save-doc', text: 'Save' });
  editor.addEventListener('input', () => {
    try { JSON.parse(editor.value); editor.classList.remove('bad'); save.disabled = false; error.textContent = ''; } catch (e) { editor.classList.add('bad'); save.disabled = true; error.textContent = 'Not JSON: ' + e.message; }
  });
  const saveText = async (value) => {
    error.textContent = '';
    conflictBox.replaceChildren();
    if (!value || typeof value !== 'object' || Array.isArray(value)) { error.textContent = 'A document is a JSON object.'; return; }
    if (typeof value._id !== 'string' || value._id === '') { error.textContent = 'The document needs an _id.'; return; }
    try {
      const result = await api('PUT', docPath(db, value._id), value);
      toast('Saved ' + result.rev);
      if (id === value._id) route(); else location.hash = docHash(db, value._id);
    } catch (e) {
      if (e.status === 409) return quietly(showConflict(db, value, conflictBox, saveText, editor));
      error.textContent = errorText(e);
    }
  };
  save.addEventListener('click', () => { try { saveText(JSON.parse(editor.value)); } catch (e) { error.textContent = 'Not JSON: ' + e.message; } });
  const parts = [
    ...dbHeader(db, 'docs'),
    el('h2', { id: 'doc-title', text: id === null ? 'New document' : id }),
    status, editor, error,
    el('div', { class: 'row' }, save, id !== null ? el('button', { type: 'button', class: 'danger', id: 'delete-doc', text: 'Delete document', onclick: () => deleteDocument(db, doc, error) }) : null),
    conflictBox,
  ];
  if (id !== null) parts.push(revisionsSection(db, doc), attachmentsSection(db, doc));
  show(...parts);
}

async function showConflict(db, mine, box, saveText, editor) {
  let theirs = null;
  try { theirs = await api('GET', docPath(db, mine._id)); } catch (e) { if (e.status !== 404) throw e; }
  const theirsRev = theirs ? theirs._rev : '(deleted)';
  box.replaceChildren(el('div', { class: 'panel warn', id: 'conflict' },
    el('h3', { text: 'Conflict: this document changed since you opened it' }),
    el('p', {}, 'You edited revision ', el('code', { text: mine._rev || '(none)' }), '; the server now has ', el('code', { id: 'conflict-theirs-rev', text: theirsRev }), '. Compare, then keep one.'),
    compareView('Yours', mine, 'On the server (' + theirsRev + ')', theirs || {}),
    el('div', { class: 'row' },
      el('button', { type: 'button', class: 'primary', id: 'keep-mine', text: 'Keep mine', onclick: () => saveText(Object.assign({}, mine, { _rev: theirs ? theirs._rev : undefined })) }),
      el('button', { type: 'button', id: 'take-theirs', text: 'Take theirs', onclick: () => { editor.value = pretty(theirs || { _id: mine._id }); box.replaceChildren(); toast('Loaded the server’s version'); } }))));
}

function deleteDocument(db, doc, error) {
  const old = document.getElementById('delete-doc-confirm');
  if (old) return;
  const box = el('div', { class: 'panel warn', id: 'delete-doc-confirm' },
    el('p', { text: 'Delete this document (revision ' + doc._rev + ')?' }),
    el('div', { class: 'row' },
      el('button', { type: 'button', class: 'danger solid', id: 'confirm-delete-doc', text: 'Delete', onclick: async () => {
        try { await api('DELETE', docPath(db, doc._id) + query({ rev: doc._rev })); toast('Deleted'); location.hash = dbHash(db); } catch (e) { error.textContent = errorText(e); }
      } }),
      el('button', { type: 'button', text: 'Cancel', onclick: () => box.remove() })));
  document.getElementById('delete-doc').after(box);
}

function revisionsSection(db, doc) {
  const revs = (doc._revs_info || []).map((r) => r.rev);
  const conflicts = doc._conflicts || [];
  const deleted = doc._deleted_conflicts || [];
  const out = el('section', { id: 'revisions' }, el('h2', { text: 'Revisions and conflicts' }));
  const options = [...new Set([doc._rev, ...conflicts, ...deleted, ...revs])];
  out.append(table([{ text: 'Revision' }, { text: 'State' }, { text: '' }], options.map((rev) => {
    const info = (doc._revs_info || []).find((r) => r.rev === rev);
    const state = rev === doc._rev ? 'current (winner)' : conflicts.includes(rev) ? 'conflict' : deleted.includes(rev) ? 'deleted conflict' : info ? info.status : '';
    const actions = [];
    if (conflicts.includes(rev)) {
      actions.push(el('button', { type: 'button', class: 'danger small', text: 'Delete this revision', 'data-rev': rev, onclick: async (e) => {
        try { await api('DELETE', docPath(db, doc._id) + query({ rev })); toast('Conflict ' + rev + ' deleted'); route(); } catch (err) { e.target.after(el('span', { class: 'error', text: errorText(err) })); }
      } }));
    }
    return el('tr', { 'data-rev': rev }, el('td', { class: 'id', text: rev }), el('td', { class: 'rev-state', text: state }), el('td', {}, actions));
  }), 'revs'));
  if (conflicts.length) out.append(el('p', { class: 'error', id: 'conflict-note', text: conflicts.length + ' conflicting revision(s): compare them with the winner, keep what you want in the editor, then delete the losers.' }));
  const a = el('select', { id: 'compare-a' }, options.map((rev) => el('option', { value: rev, text: rev })));
  const b = el('select', { id: 'compare-b' }, options.map((rev, i) => el('option', { value: rev, text: rev, selected: i === 1 ? 'selected' : null })));
  const result = el('div', { id: 'compare-result' });
  const error = errorLine();
  out.append(el('div', { class: 'row' }, el('label', {}, 'Compare', a), el('label', {}, 'with', b),
    el('button', { type: 'button', id: 'compare-revs', text: 'Compare', onclick: async () => {
      error.textContent = '';
      try {
        const [ra, rb] = await Promise.all([a.value, b.value].map((rev) => api('GET', docPath(db, doc._id) + query({ rev }))));
        result.replaceChildren(compareView(a.value, ra, b.value, rb));
      } catch (e) { error.textContent = errorText(e) + ' (an old revision’s body is kept only until compaction)'; }
    } })), error, result);
  return out;
}

function attachmentsSection(db, doc) {
  const atts = doc._attachments || {};
  const names = Object.keys(atts).sort();
  const error = errorLine('att-error');
  const rows = names.map((name) => {
    const att = atts[name];
    const url = docPath(db, doc._id) + '/' + name.split('/').map(enc).join('/');
    return el('tr', { 'data-att': name },
      el('td', { class: 'id' }, el('a', { href: url, download: name.split('/').pop(), class: 'att-link', text: name })),
      el('td', { class: 'hide-narrow', text: att.content_type || '' }),
      el('td', { class: 'num', text: bytes(att.length) }),
      el('td', {}, el('button', { type: 'button', class: 'danger small', text: 'Delete', onclick: async () => {
        try { await api('DELETE', url + query({ rev: doc._rev })); toast('Attachment deleted'); route(); } catch (e) { error.textContent = errorText(e); }
      } })));
  });
  const file = el('input', { type: 'file', id: 'att-file' });
  const upload = el('button', { type: 'button', id: 'att-upload', text: 'Upload', onclick: async () => {
    const chosen = file.files[0];
    if (!chosen) { error.textContent = 'Choose a file first.'; return; }
    error.textContent = '';
    try {
      await api('PUT', docPath(db, doc._id) + '/' + enc(chosen.name) + query({ rev: doc._rev }), chosen, { 'Content-Type': chosen.type || 'application/octet-stream' });
      toast('Uploaded ' + chosen.name);
      route();
    } catch (e) { error.textContent = errorText(e); }
  } });
  return el('section', { id: 'attachments' }, el('h2', { text: 'Attachments' }),
    names.length ? table([{ text: 'Name' }, { text: 'Type', cls: 'hide-narrow' }, { text: 'Size', cls: 'num' }, { text: '' }], rows, 'atts') : el('p', { class: 'muted', text: 'No attachments.' }),
    el('div', { class: 'row' }, file, upload), error);
}

// ---- Design documents and views ----------------------------------------------------------------------------

async function designPage(db) {
  const response = await api('GET', dbPath(db) + '/_all_docs' + query({ startkey: '"_design/"', endkey: '"_design0"', include_docs: 'true' }));
  const items = response.rows.map((row) => {
    const views = Object.keys((row.doc && row.doc.views) || {}).sort();
    const name = row.id.slice('_design/'.length);
    return el('div', { class: 'panel ddoc', 'data-ddoc': row.id },
      el('h3', {}, link(docHash(db, row.id), row.id), ' ', el('span', { class: 'muted', text: (row.doc && row.doc.language) || 'javascript' })),
      views.length ? el('ul', {}, views.map((v) => el('li', {}, link(dbHash(db, 'view/' + enc(name) + '/' + enc(v)), v, { class: 'view-link' }), row.doc.views[v].reduce ? el('span', { class: 'muted', text: ' (reduce ' + (typeof row.doc.views[v].reduce === 'string' && row.doc.views[v].reduce.startsWith('_') ? row.doc.views[v].reduce : 'function') + ')' }) : null)))
        : el('p', { class: 'muted', text: 'No views.' }));
  });
  show(...dbHeader(db, 'design'), items.length ? el('div', { id: 'ddocs' }, items) : el('p', { class: 'muted', text: 'No design documents.' }));
}

async function viewPage(db, ddoc, name) {
  const fields = {};
  const input = (key, placeholder) => (fields[key] = el('input', { id: 'view-' + key, placeholder }));
  const check = (key) => (fields[key] = el('input', { type: 'checkbox', id: 'view-' + key }));
  const reduce = el('select', { id: 'view-reduce' }, el('option', { value: '', text: 'default' }), el('option', { value: 'true', text: 'true' }), el('option', { value: 'false', text: 'false' }));
  const update = el('select', { id: 'view-update' }, ['true', 'false', 'lazy'].map((v) => el('option', { value: v, text: v })));
  const error = errorLine('view-error');
  const result = el('div', { id: 'view-result' });
  const form = el('form', { class: 'panel', id: 'view-form' },
    el('div', { class: 'grid' },
      el('label', {}, 'key', input('key', 'JSON or text')), el('label', {}, 'startkey', input('startkey')), el('label', {}, 'endkey', input('endkey')),
      el('label', {}, 'limit', input('limit', '25')), el('label', {}, 'skip', input('skip', '0')), el('label', {}, 'group_level', input('group_level')),
      el('label', {}, 'reduce', reduce), el('label', {}, 'update', update)),
    el('div', { class: 'row' },
      el('label', {}, check('group'), 'group'), el('label', {}, check('include_docs'), 'include_docs'),
      el('label', {}, check('descending'), 'descending'), el('label', {}, check('exclusive_end'), 'exclude endkey'),
      el('button', { type: 'submit', class: 'primary', id: 'view-run', text: 'Query' })), error);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    const params = { key: keyValue(fields.key.value), startkey: keyValue(fields.startkey.value), endkey: keyValue(fields.endkey.value),
      limit: fields.limit.value || '25', skip: fields.skip.value, group_level: fields.group_level.value, reduce: reduce.value,
      update: update.value === 'true' ? '' : update.value,
      group: fields.group.checked ? 'true' : '', include_docs: fields.include_docs.checked ? 'true' : '',
      descending: fields.descending.checked ? 'true' : '', inclusive_end: fields.exclusive_end.checked ? 'false' : '' };
    try {
      const response = await api('GET', dbPath(db) + '/_design/' + enc(ddoc) + '/_view/' + enc(name) + query(params));
      result.replaceChildren(
        el('p', { class: 'muted', text: (response.total_rows !== undefined ? response.total_rows + ' rows in all, ' : '') + response.rows.length + ' shown' }),
        table([{ text: 'Key' }, { text: 'Value' }, { text: 'ID' }], response.rows.map((row) => el('tr', {},
          el('td', { class: 'json', text: JSON.stringify(row.key) }), el('td', { class: 'json', text: JSON.stringify(row.value) }),
          el('td', { class: 'id' }, row.id ? link(docHash(db, row.id), row.id) : ''))), 'view-rows'));
    } catch (e) { error.textContent = errorText(e); }
  });
  show(...dbHeader(db, 'design'), el('h2', { text: '_design/' + ddoc + ' / ' + name }), form, result);
}

// ---- Mango -------------------------------------------------------------------------------------------------

async function mangoPage(db) {
  const editor = el('textarea', { class: 'editor', id: 'mango-query', spellcheck: 'false', 'aria-label': 'Mango query' });
  editor.value = pretty({ selector: { _id: { $gt: null } }, limit: 25 });
  const error = errorLine('mango-error');
  const result = el('div', { id: 'mango-result' });
  const explain = el('div', { id: 'mango-explain' });
  const read = () => {
    error.textContent = '';
    try { return JSON.parse(editor.value); } catch (e) { error.textContent = 'Not JSON: ' + e.message; return null; }
  };
  const run = async () => {
    const body = read();
    if (!body) return;
    try {
      const response = await api('POST', dbPath(db) + '/_find', Object.assign({}, body, { execution_stats: true }));
      const stats = response.execution_stats || {};
      result.replaceChildren(
        el('h2', { text: response.docs.length + ' document(s)' }),
        response.warning ? el('p', { class: 'error', id: 'mango-warning', text: response.warning }) : null,
        el('dl', { class: 'figures', id: 'mango-stats' }, Object.entries(stats).map(([k, v]) => [el('dt', { text: k }), el('dd', { text: String(v) })])),
        response.bookmark ? el('p', { class: 'muted', text: 'bookmark: ' + response.bookmark }) : null,
        table([{ text: 'ID' }, { text: 'Document' }], response.docs.map((doc) => el('tr', {},
          el('td', { class: 'id' }, doc._id ? link(docHash(db, doc._id), doc._id) : ''), el('td', { class: 'json', text: JSON.stringify(doc) }))), 'mango-docs'));
    } catch (e) { error.textContent = errorText(e); }
  };
  const explainIt = async () => {
    const body = read();
    if (!body) return;
    try {
      const response = await api('POST', dbPath(db) + '/_explain', body);
      const index = response.index || {};
      explain.replaceChildren(el('h2', { text: 'Explain' }),
        el('dl', { class: 'figures', id: 'explain-figures' },
          el('dt', { text: 'Index' }), el('dd', { id: 'explain-index', text: (index.ddoc || '(none)') + ' / ' + index.name + ' (' + index.type + ')' }),
          el('dt', { text: 'Fields' }), el('dd', { text: JSON.stringify(index.def ? index.def.fields : []) }),
          el('dt', { text: 'Limit / skip' }), el('dd', { text: response.limit + ' / ' + response.skip })),
        el('pre', { id: 'explain-json', text: pretty(response) }));
    } catch (e) { error.textContent = errorText(e); }
  };
  show(...dbHeader(db, 'find'), editor, error,
    el('div', { class: 'row' }, el('button', { type: 'button', class: 'primary', id: 'mango-run', text: 'Run query', onclick: run }),
      el('button', { type: 'button', id: 'mango-explain-run', text: 'Explain', onclick: explainIt })),
    explain, result);
}

async function indexesPage(db) {
  const list = el('div', { id: 'index-list' });
  const fields = el('input', { id: 'index-fields', placeholder: 'fields: name, age' });
  const name = el('input', { id: 'index-name', placeholder: 'index name (optional)' });
  const ddoc = el('input', { id: 'index-ddoc', placeholder: 'design document (optional)' });
  const partial = el('input', { id: 'index-partial', placeholder: 'partial_filter_selector JSON (optional)' });
  const error = errorLine('index-error');
  const load = async () => {
    const response = await api('GET', dbPath(db) + '/_index');
    list.replaceChildren(table([{ text: 'Design document' }, { text: 'Name' }, { text: 'Type' }, { text: 'Fields' }, { text: '' }],
      response.indexes.map((index) => el('tr', { 'data-index': index.name },
        el('td', { class: 'id', text: index.ddoc || '–' }), el('td', { class: 'id', text: index.name }), el('td', { text: index.type }),
        el('td', { class: 'json', text: JSON.stringify(index.def.fields) }),
        el('td', {}, index.ddoc ? el('button', { type: 'button', class: 'danger small', text: 'Delete', onclick: async () => {
          try { await api('DELETE', dbPath(db) + '/_index/' + enc(index.ddoc.replace(/^_design\//, '')) + '/' + enc(index.type) + '/' + enc(index.name)); toast('Index deleted'); quietly(load()); } catch (e) { error.textContent = errorText(e); }
        } }) : null))), 'indexes'));
  };
  const form = el('form', { class: 'panel', id: 'index-form' }, el('div', { class: 'grid' },
    el('label', {}, 'Fields (comma separated)', fields), el('label', {}, 'Name', name), el('label', {}, 'Design document', ddoc), el('label', {}, 'Partial filter', partial)),
  el('div', { class: 'row' }, el('button', { type: 'submit', class: 'primary', id: 'index-create', text: 'Create index' })), error);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    const body = { index: { fields: fields.value.split(',').map((f) => f.trim()).filter(Boolean) }, type: 'json' };
    if (name.value) body.name = name.value;
    if (ddoc.value) body.ddoc = ddoc.value;
    try {
      if (partial.value.trim()) body.index.partial_filter_selector = JSON.parse(partial.value);
      const result = await api('POST', dbPath(db) + '/_index', body);
      toast('Index ' + result.name + ' ' + result.result);
      quietly(load());
    } catch (e) { error.textContent = errorText(e); }
  });
  show(...dbHeader(db, 'indexes'), form, list);
  await load();
}

// ---- Permissions (_security) -------------------------------------------------------------------------------

async function securityPage(db) {
  const security = await api('GET', dbPath(db) + '/_security');
  const field = (group, kind) => {
    const input = el('input', { id: 'sec-' + group + '-' + kind, placeholder: kind + ', comma separated' });
    input.value = (((security[group] || {})[kind]) || []).join(', ');
    return input;
  };
  const inputs = { admins: { names: field('admins', 'names'), roles: field('admins', 'roles') }, members: { names: field('members', 'names'), roles: field('members', 'roles') } };
  const error = errorLine('sec-error');
  const split = (input) => input.value.split(',').map((s) => s.trim()).filter(Boolean);
  const form = el('form', { class: 'panel', id: 'security-form' },
    el('h2', { text: 'Admins' }), el('p', { class: 'muted', text: 'Change design documents and these permissions.' }),
    el('div', { class: 'grid' }, el('label', {}, 'Names', inputs.admins.names), el('label', {}, 'Roles', inputs.admins.roles)),
    el('h2', { text: 'Members' }), el('p', { class: 'muted', text: 'Read and write documents. With no member at all the database is public.' }),
    el('div', { class: 'grid' }, el('label', {}, 'Names', inputs.members.names), el('label', {}, 'Roles', inputs.members.roles)),
    el('div', { class: 'row' }, el('button', { type: 'submit', class: 'primary', id: 'sec-save', text: 'Save permissions' })), error);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    const body = Object.assign({}, security, {
      admins: { names: split(inputs.admins.names), roles: split(inputs.admins.roles) },
      members: { names: split(inputs.members.names), roles: split(inputs.members.roles) } });
    try { await api('PUT', dbPath(db) + '/_security', body); toast('Permissions saved'); } catch (e) { error.textContent = errorText(e); }
  });
  show(...dbHeader(db, 'security'), form);
}

// ---- Replication -------------------------------------------------------------------------------------------

/** A replication job's error, said in words (the scheduler's `info.error` is CouchDB's term and its detail). */
function replicationErrorInWords(info) {
  if (!info) return '';
  const raw = typeof info === 'string' ? info : info.error || info.reason || '';
  if (!raw) return typeof info === 'object' ? JSON.stringify(info) : '';
  const text = String(raw);
  const known = [
    [/db_not_found/, 'A database does not exist (create it, or tick “create target”)'],
    [/unauthorized|401/, 'The credentials were refused'],
    [/forbidden|403/, 'The user may not do this there'],
    [/econnrefused|connection refused/i, 'Nothing answers at that address (connection refused)'],
    [/nxdomain|could not resolve/i, 'That host name does not resolve'],
    [/timeout/i, 'The other server did not answer in time'],
    [/filter/i, 'The filter could not be used'],
  ];
  for (const [pattern, words] of known) if (pattern.test(text)) return words + '. (' + text + ')';
  return text;
}

function endpoint(value, user, password) {
  const text = value.trim();
  const url = /^https?:\/\//.test(text) ? text : location.origin + '/' + enc(text);
  if (!user) return url;
  return { url, auth: { basic: { username: user, password } } };
}

async function replicationPage() {
  const source = el('input', { id: 'rep-source', placeholder: 'source: a database name or URL', required: true });
  const target = el('input', { id: 'rep-target', placeholder: 'target: a database name or URL', required: true });
  const user = el('input', { id: 'rep-user', placeholder: 'name (optional)', autocomplete: 'off' });
  const password = el('input', { id: 'rep-password', type: 'password', placeholder: 'password', autocomplete: 'new-password' });
  const filter = el('input', { id: 'rep-filter', placeholder: 'ddoc/filter (optional)' });
  const docId = el('input', { id: 'rep-id', placeholder: 'job id (optional)' });
  const continuous = el('input', { type: 'checkbox', id: 'rep-continuous' });
  const createTarget = el('input', { type: 'checkbox', id: 'rep-create-target' });
  const error = errorLine('rep-error');
  const jobs = el('div', { id: 'rep-jobs' });
  const tasks = el('div', { id: 'active-tasks' });
  const form = el('form', { class: 'panel', id: 'rep-form' },
    el('div', { class: 'grid' }, el('label', {}, 'Source', source), el('label', {}, 'Target', target),
      el('label', {}, 'Name to sign in with', user), el('label', {}, 'Password', password),
      el('label', {}, 'Filter', filter), el('label', {}, 'Job id', docId)),
    el('div', { class: 'row' }, el('label', {}, continuous, 'Continuous'), el('label', {}, createTarget, 'Create target'),
      el('button', { type: 'submit', class: 'primary', id: 'rep-start', text: 'Start replication' })), error);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    const doc = { source: endpoint(source.value, user.value, password.value), target: endpoint(target.value, user.value, password.value) };
    if (continuous.checked) doc.continuous = true;
    if (createTarget.checked) doc.create_target = true;
    if (filter.value.trim()) doc.filter = filter.value.trim();
    try {
      if (docId.value.trim()) await api('PUT', '/_replicator/' + enc(docId.value.trim()), doc); else await api('POST', '/_replicator', doc);
      toast('Replication saved');
      password.value = '';
      loadJobs();
    } catch (e) { error.textContent = errorText(e); }
  });
  const loadJobs = async () => {
    let response;
    try { response = await api('GET', '/_scheduler/docs'); } catch (e) { jobs.replaceChildren(el('p', { class: 'error', text: errorText(e) })); return; }
    const rows = response.docs.map((job) => {
      const words = job.state === 'crashing' || job.state === 'failed' || job.error_count ? replicationErrorInWords(job.info) : '';
      const progress = job.info && job.info.docs_written !== undefined ? job.info.docs_written + ' written' : '';
      return el('tr', { 'data-job': job.doc_id },
        el('td', { class: 'id', text: job.doc_id }),
        el('td', {}, el('span', { class: 'state ' + job.state, text: job.state })),
        el('td', { class: 'id hide-narrow', text: stripAuth(job.source) + ' → ' + stripAuth(job.target) }),
        el('td', { class: words ? 'error job-error' : 'muted', text: words || progress }),
        el('td', {}, el('button', { type: 'button', class: 'danger small', text: 'Delete', onclick: async () => {
          try { const doc = await api('GET', '/_replicator/' + enc(job.doc_id)); await api('DELETE', '/_replicator/' + enc(job.doc_id) + query({ rev: doc._rev })); loadJobs(); } catch (e) { error.textContent = errorText(e); }
        } })));
    });
    jobs.replaceChildren(rows.length ? table([{ text: 'Job' }, { text: 'State' }, { text: 'Source → target', cls: 'hide-narrow' }, { text: 'Details' }, { text: '' }], rows, 'jobs') : el('p', { class: 'muted', text: 'No replication jobs.' }));
  };
  const loadTasks = async () => {
    let response;
    try { response = await api('GET', '/_active_tasks'); } catch (e) { tasks.replaceChildren(el('p', { class: 'error', text: errorText(e) })); return; }
    tasks.replaceChildren(response.length ? table([{ text: 'Type' }, { text: 'What' }, { text: 'Progress', cls: 'num' }, { text: 'Updated', cls: 'hide-narrow' }],
      response.map((task) => el('tr', {}, el('td', { text: task.type }),
        el('td', { class: 'id', text: task.source ? stripAuth(task.source) + ' → ' + stripAuth(task.target) : task.database || task.node || '' }),
        el('td', { class: 'num', text: task.progress !== undefined ? task.progress + '%' : task.docs_written !== undefined ? task.docs_written + ' docs' : '' }),
        el('td', { class: 'hide-narrow muted', text: task.updated_on ? new Date(task.updated_on * 1000).toLocaleTimeString() : '' }))), 'tasks')
      : el('p', { class: 'muted', text: 'Nothing running.' }));
  };
  show(el('h1', { text: 'Replication' }), form, el('h2', { text: 'Jobs (_scheduler/docs)' }), jobs, el('h2', { text: 'Active tasks' }), tasks);
  every(2000, loadJobs);
  every(2000, loadTasks);
}

function stripAuth(url) { return String(url || '').replace(/\/\/[^/@]*@/, '//'); }

// ---- Server ------------------------------------------------------------------------------------------------

async function serverPage() {
  const up = el('dd', { id: 'server-up', text: '…' });
  const version = el('dd', { id: 'server-version', text: '…' });
  const chart = svg('svg', { class: 'chart', id: 'stats-chart', viewBox: '0 0 600 140', preserveAspectRatio: 'none', role: 'img', 'aria-label': 'Requests per second' });
  const rate = el('dd', { id: 'stats-rate', text: '…' });
  const openDbs = el('dd', { id: 'stats-open-dbs', text: '…' });
  const samples = [];
  let last = null;
  const config = el('div', { id: 'config' });
  const users = el('div', { id: 'users' });
  show(el('h1', { text: 'Server' }),
    el('dl', { class: 'figures' }, el('dt', { text: 'Status (_up)' }), up, el('dt', { text: 'Version' }), version,
      el('dt', { text: 'Requests per second' }), rate, el('dt', { text: 'Open databases' }), openDbs),
    el('p', { class: 'muted chart-caption', id: 'stats-scale', text: 'Requests per second' }), chart, el('h2', { text: 'Users' }), users, el('h2', { text: 'Configuration' }), config);
  api('GET', '/').then((w) => { version.textContent = 'CouchDB ' + w.version + ' API, ' + ((w.vendor && w.vendor.name) || '') + ' ' + ((w.vendor && w.vendor.version) || ''); }).catch(() => null);
  const sample = async () => {
    try { const s = await api('GET', '/_up'); up.textContent = s.status; up.className = 'okay'; } catch (e) { up.textContent = errorText(e); up.className = 'error'; }
    let stats;
    try { stats = await api('GET', '/_node/_local/_stats'); } catch (e) { rate.textContent = errorText(e); return; }
    const requests = stats.couchdb && stats.couchdb.httpd && stats.couchdb.httpd.requests ? stats.couchdb.httpd.requests.value : 0;
    const now = Date.now();
    if (last) samples.push(Math.max(0, (requests - last.requests) / ((now - last.time) / 1000)));
    last = { requests, time: now };
    while (samples.length > 60) samples.shift();
    openDbs.textContent = String(stats.couchdb && stats.couchdb.open_databases ? stats.couchdb.open_databases.value : '–');
    rate.textContent = samples.length ? samples[samples.length - 1].toFixed(1) : '…';
    drawChart(chart, samples);
  };
  every(2000, sample);
  timers.push(setTimeout(sample, 500)); // a first rate without waiting two periods
  await Promise.all([loadUsers(users), loadConfig(config)]);
}

function drawChart(chart, samples) {
  const max = Math.max(1, ...samples);
  // The newest sample at the right edge, 60 samples across.
  const points = samples.map((v, i) => (600 - (samples.length - 1 - i) * 600 / 59).toFixed(1) + ',' + (130 - v / max * 115).toFixed(1)).join(' ');
  chart.replaceChildren(svg('line', { x1: 0, y1: 130, x2: 600, y2: 130 }), svg('line', { x1: 0, y1: 15, x2: 600, y2: 15 }),
    svg('polyline', { points }));
  document.getElementById('stats-scale').textContent = 'Requests per second over the last two minutes (top line: ' + max.toFixed(1) + ')';
}

async function loadConfig(box) {
  let config;
  try { config = await api('GET', '/_node/_local/_config'); } catch (e) { box.replaceChildren(el('p', { class: 'error', text: errorText(e) })); return; }
  box.replaceChildren(...Object.keys(config).sort().map((section) => el('details', { class: 'section', 'data-section': section },
    el('summary', { text: section }),
    Object.keys(config[section]).sort().map((key) => configRow(section, key, config[section][key])))));
}

function configRow(section, key, value) {
  const input = el('input', { 'aria-label': section + '/' + key, 'data-key': section + '/' + key });
  input.value = value;
  const message = el('span', { class: 'muted' });
  const save = el('button', { type: 'submit', class: 'small', text: 'Save' });
  const form = el('form', { class: 'config-row' }, el('span', { class: 'key', text: key }), input, save, message);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    message.className = 'muted';
    try {
      await api('PUT', '/_node/_local/_config/' + enc(section) + '/' + enc(key), input.value);
      message.textContent = 'saved';
      message.className = 'okay';
    } catch (e) { message.textContent = errorText(e); message.className = 'error'; }
  });
  return form;
}

async function loadUsers(box) {
  const error = errorLine('user-error');
  const list = el('div');
  const name = el('input', { id: 'user-name', placeholder: 'name', autocomplete: 'off' });
  const password = el('input', { id: 'user-password', type: 'password', placeholder: 'password', autocomplete: 'new-password' });
  const roles = el('input', { id: 'user-roles', placeholder: 'roles, comma separated' });
  const form = el('form', { class: 'row', id: 'user-form' }, name, password, roles, el('button', { type: 'submit', id: 'user-create', text: 'Add user' }));
  const load = async () => {
    try {
      const response = await api('GET', '/_users/_all_docs' + query({ startkey: '"org.couchdb.user:"', endkey: '"org.couchdb.user;"', include_docs: 'true' }));
      list.replaceChildren(table([{ text: 'Name' }, { text: 'Roles' }], response.rows.map((row) => el('tr', {},
        el('td', { class: 'id', text: (row.doc && row.doc.name) || row.id }), el('td', { text: ((row.doc && row.doc.roles) || []).join(', ') }))), 'users-table'));
    } catch (e) { list.replaceChildren(el('p', { class: 'error', text: errorText(e) })); }
  };
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    try {
      await api('PUT', '/_users/org.couchdb.user:' + enc(name.value), { _id: 'org.couchdb.user:' + name.value, name: name.value, password: password.value, type: 'user', roles: roles.value.split(',').map((r) => r.trim()).filter(Boolean) });
      toast('User ' + name.value + ' added');
      password.value = '';
      quietly(load());
    } catch (e) { error.textContent = errorText(e); }
  });
  box.replaceChildren(form, error, list);
  await load();
}

start();
