// VSS console: sign in with an API key, then a shell (top bar, sidebar of keyspaces and tables,
// one pane per task). Plain ES modules, no build step, no framework.
import { api, session } from './lib/api.js';
import { clear, fmtBytes, fmtInt, fmtLimit, h, icon, logo } from './lib/dom.js';
import { overviewPane } from './panes/overview.js';
import { searchPane } from './panes/search.js';
import { uploadPane } from './panes/upload.js';
import { chatPane } from './panes/chat.js';
import { keysPane } from './panes/keys.js';

const root = document.getElementById('app');

const PANES = [
  { id: 'overview', label: 'Overview', icon: 'grid', make: overviewPane },
  { id: 'search', label: 'Search', icon: 'search', make: searchPane },
  { id: 'upload', label: 'Upload', icon: 'upload', make: uploadPane },
  { id: 'chat', label: 'Chat', icon: 'chat', make: chatPane },
  { id: 'keys', label: 'Keys', icon: 'key', make: keysPane, allOnly: true },
];

/* ───────────────────────────── sign in ───────────────────────────── */

function signInScreen(message) {
  const input = h('input#api-key.input.input-lg.mono', {
    type: 'password', name: 'api-key', autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off',
    placeholder: 'vss_…', required: true, 'aria-describedby': 'signin-help',
  });
  const reveal = h('button.icon-btn.reveal', { type: 'button', title: 'Show key', 'aria-label': 'Show key',
    on: { click: () => { input.type = input.type === 'password' ? 'text' : 'password'; input.focus(); } } }, icon('eye'));
  const alert = h('div.alert.alert-error', { role: 'alert', hidden: !message });
  const showError = (title, detail) => {
    clear(alert, icon('alert'), h('div', h('strong', title), h('p', detail)));
    alert.hidden = false;
  };
  if (message) showError(message.title, message.detail);
  const button = h('button.btn.btn-primary.btn-block.btn-lg', { type: 'submit' }, 'Sign in');

  const form = h('form.signin-form', {
    novalidate: true,
    on: {
      submit: async (e) => {
        e.preventDefault();
        const k = input.value.trim();
        if (!k) {
          showError('Enter an API key', 'Paste the key you were given; it starts with vss_ unless an administrator chose it.');
          input.focus();
          return;
        }
        button.disabled = true;
        button.textContent = 'Signing in…';
        alert.hidden = true;
        try {
          const user = await api('GET', '/v1/user/', undefined, { key: k });
          session.set(k);
          await startApp(user);
        } catch (err) {
          session.clear();
          const title = err.status === 401 ? 'That key was not accepted' : err.status === 0 ? 'No connection' : 'Sign-in failed';
          showError(title, err.message);
          input.select();
          button.disabled = false;
          button.textContent = 'Sign in';
        }
      },
    },
  },
  h('label.label', { for: 'api-key' }, 'API key'),
  h('div.input-wrap', input, reveal),
  h('p#signin-help.help', 'Kept in this browser tab only, and sent to this server alone.'),
  alert,
  button);

  const status = h('div.signin-status', h('span.dot.dot-muted'), 'Checking server…');
  Promise.all([api('GET', '/v1', undefined, { public: true }).catch(() => null), api('GET', '/v1/healthcheck/', undefined, { public: true }).then(() => true, () => false)])
    .then(([info, healthy]) => clear(status,
      h(`span.dot.${healthy ? 'dot-ok' : 'dot-warn'}`),
      info ? `${info.name ?? 'vss'} ${info.version ?? ''}` : 'server',
      h('span.sep', '·'), healthy ? 'healthy' : 'not ready',
      h('span.sep', '·'), h('a', { href: '/v1/docs', target: '_blank', rel: 'noopener' }, 'API reference')));

  clear(root, h('main.signin',
    h('div.signin-card',
      h('div.brand', logo(), h('span.brand-name', 'VSS'), h('span.brand-sub', 'Console')),
      h('h1', 'Sign in'),
      h('p.lead', 'Search, upload and chat with the vectors stored on this server.'),
      form,
      h('p.hint', 'First start? The administrator key is printed once and saved to ', h('code', '$VSS_DATA_DIR/admin.key'), '.')),
    status));
  document.title = 'Sign in · VSS Console';
  input.focus();
}

/* ───────────────────────────── the app ───────────────────────────── */

const state = {
  user: null,
  isAll: false,
  env: null,
  keyspaces: [],
  users: [],
  permission: 'Read',
  selected: { keyspace: null, table: null },
};

let panes = new Map();
let sidebarTree;
let mainEl;
let usageEl;
let navEl;
let toastsEl;

function toast(text, kind = 'info') {
  const t = h(`div.toast.toast-${kind}`, { role: 'status' }, icon(kind === 'error' ? 'alert' : 'check'), h('span', text));
  toastsEl.append(t);
  setTimeout(() => t.classList.add('leaving'), 3200);
  setTimeout(() => t.remove(), 3600);
}

function signOut(message) {
  session.clear();
  sessionStorage.removeItem('vss.console.selected');
  panes = new Map();
  mainEl = null;
  state.user = null;
  state.selected = { keyspace: null, table: null };
  signInScreen(message);
  if (location.hash) history.replaceState(null, '', location.pathname);
}

session.onUnauthorized((err) => signOut({ title: 'Signed out', detail: `The server no longer accepts this key: ${err.message}` }));

function tableInfo(keyspace, table) {
  const ks = state.keyspaces.find((k) => k.keyspace === keyspace);
  return ks?.tables.find((t) => t.table === table) ?? null;
}

function select(keyspace, table) {
  state.selected = { keyspace, table };
  sessionStorage.setItem('vss.console.selected', JSON.stringify(state.selected));
  renderTree();
  for (const p of panes.values()) p.onSelect?.();
}

async function refreshKeyspaces() {
  try {
    const [list, user] = await Promise.all([api('GET', '/v1/keyspaces/list'), api('GET', '/v1/user/')]);
    state.keyspaces = list.keyspaces ?? [];
    state.user = user;
  } catch (err) {
    if (err.status !== 401) toast(err.message, 'error');
    return;
  }
  const { keyspace, table } = state.selected;
  if (!tableInfo(keyspace, table)) {
    const preferred = state.keyspaces.find((k) => k.keyspace === state.env?.default_keyspace) ?? state.keyspaces[0];
    const t = preferred?.tables.find((x) => x.table === state.env?.default_table) ?? preferred?.tables[0];
    state.selected = { keyspace: preferred?.keyspace ?? null, table: t?.table ?? null };
  }
  renderTree();
  renderUsage();
  for (const p of panes.values()) p.onData?.();
}

function renderTree() {
  if (!sidebarTree) return;
  if (state.keyspaces.length === 0) {
    clear(sidebarTree, h('p.tree-empty', 'No keyspaces yet. Create one from the Overview.'));
    return;
  }
  clear(sidebarTree, state.keyspaces.map((ks) => {
    const total = ks.tables.reduce((n, t) => n + (t.row_count ?? 0), 0);
    return h('li.tree-ks', { dataset: { keyspace: ks.keyspace } },
      h('div.tree-ks-row', { title: ks.keyspace }, icon('db'), h('span.tree-name', ks.keyspace), h('span.count', { title: `${fmtInt(total)} rows` }, fmtInt(total))),
      h('ul.tree-tables', ks.tables.length === 0 ? h('li.tree-empty', 'no tables') : ks.tables.map((t) => {
        const active = ks.keyspace === state.selected.keyspace && t.table === state.selected.table;
        return h('li', h('button.tree-table', {
          type: 'button', class: active ? 'active' : '', 'aria-current': active ? 'true' : undefined,
          dataset: { keyspace: ks.keyspace, table: t.table },
          title: `${ks.keyspace}.${t.table} · ${t.dimension}-d ${t.metric} · ${fmtInt(t.row_count)} rows`,
          on: { click: () => select(ks.keyspace, t.table) },
        }, icon('table'), h('span.tree-name', t.table), h('span.count.row-count', fmtInt(t.row_count))));
      })));
  }));
}

function renderUsage() {
  if (!usageEl || !state.user) return;
  const u = state.user;
  const used = u.usage?.vectors ?? 0;
  const max = u.limits?.max_vectors;
  const bounded = typeof max === 'number' && max < Number.MAX_SAFE_INTEGER / 2;
  const bar = h('div.meter-fill');
  bar.style.width = bounded ? `${Math.min(100, (used / max) * 100).toFixed(1)}%` : '0%';
  clear(usageEl,
    h('div.usage-row', h('span', 'Vectors'), h('span.mono', bounded ? `${fmtInt(used)} / ${fmtLimit(max)}` : fmtInt(used))),
    bounded ? h('div.meter', bar) : null,
    h('div.usage-row', h('span', 'Files'), h('span.mono', fmtBytes(u.usage?.file_bytes ?? 0))),
    h('div.usage-row.muted', h('span', 'Rate limit'), h('span.mono', `${fmtLimit(u.limits?.requests_per_minute)}/min`)));
}

function currentRoute() {
  const id = location.hash.replace(/^#\/?/, '');
  const pane = PANES.find((p) => p.id === id && (!p.allOnly || state.isAll));
  return pane ?? PANES.find((p) => p.id === 'search');
}

function showRoute() {
  if (!mainEl) return;
  const route = currentRoute();
  for (const a of navEl.querySelectorAll('a')) {
    const on = a.dataset.pane === route.id;
    a.classList.toggle('active', on);
    if (on) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  let pane = panes.get(route.id);
  if (!pane) {
    pane = route.make(ctx);
    pane.el.classList.add('pane');
    pane.el.dataset.pane = route.id;
    panes.set(route.id, pane);
    mainEl.append(pane.el);
  }
  for (const [id, p] of panes) p.el.hidden = id !== route.id;
  pane.onShow?.();
  document.title = `${route.label} · VSS Console`;
}

const ctx = {
  state,
  api,
  toast,
  select,
  refreshKeyspaces,
  tableInfo,
  navigate: (id) => { location.hash = `#/${id}`; },
};

async function startApp(user) {
  state.user = user;
  // GET /v1/user/ names the calling key's own permission: it decides which panes to offer.
  state.permission = user.key?.permissions ?? 'Read';
  state.isAll = state.permission === 'All';
  // Only an All key over every keyspace administers users; a scoped All key manages its own keys.
  const isAdmin = state.isAll && (user.key?.resources ?? []).includes('*');
  const [list, env, users] = await Promise.all([
    api('GET', '/v1/keyspaces/list'),
    api('GET', '/v1/env/').catch(() => null),
    isAdmin ? api('GET', '/v1/users/').then((r) => r.users ?? []) : Promise.resolve([]),
  ]);
  state.keyspaces = list.keyspaces ?? [];
  state.env = env;
  state.users = users;
  try {
    const saved = JSON.parse(sessionStorage.getItem('vss.console.selected') ?? 'null');
    if (saved && tableInfo(saved.keyspace, saved.table)) state.selected = saved;
  } catch { /* ignore */ }
  if (!tableInfo(state.selected.keyspace, state.selected.table)) {
    const preferred = state.keyspaces.find((k) => k.keyspace === env?.default_keyspace) ?? state.keyspaces[0];
    const t = preferred?.tables.find((x) => x.table === env?.default_table) ?? preferred?.tables[0];
    state.selected = { keyspace: preferred?.keyspace ?? null, table: t?.table ?? null };
  }
  panes = new Map();
  renderShell();
  showRoute();
}

const cap = (s) => String(s).charAt(0).toUpperCase() + String(s).slice(1);

function renderShell() {
  const u = state.user;
  const initials = (u.name || u.email || '?').split(/[\s@.]+/).filter(Boolean).slice(0, 2).map((s) => s[0].toUpperCase()).join('');
  const health = h('span.health', h('span.dot.dot-muted'), 'checking');
  api('GET', '/v1/healthcheck/', undefined, { public: true })
    .then(() => clear(health, h('span.dot.dot-ok'), 'healthy'), () => clear(health, h('span.dot.dot-warn'), 'degraded'));

  navEl = h('nav.nav', { 'aria-label': 'Console' }, PANES.filter((p) => !p.allOnly || state.isAll).map((p) =>
    h('a', { href: `#/${p.id}`, dataset: { pane: p.id } }, icon(p.icon), h('span', p.label))));
  sidebarTree = h('ul.tree', { 'aria-label': 'Keyspaces and tables' });
  usageEl = h('div.usage');
  mainEl = h('main.main#main');
  toastsEl = h('div.toasts', { 'aria-live': 'polite' });

  clear(root, h('div.shell',
    h('header.topbar',
      h('a.brand', { href: '#/overview' }, logo(), h('span.brand-name', 'VSS'), h('span.brand-sub', 'Console')),
      h('div.topbar-meta', state.env ? h('span.chip.chip-quiet', { title: 'Storage backend' }, state.env.storage) : null,
        state.env ? h('span.chip.chip-quiet.mono', `v${state.env.version}`) : null, health),
      h('div.spacer'),
      h('div.whoami',
        h('span.avatar', { 'aria-hidden': 'true' }, initials || '?'),
        h('div.whoami-text', h('span.whoami-name', u.name || 'Unnamed user'), h('span.whoami-email', u.email || '')),
        h('span.badge.badge-plan', { title: 'Plan' }, `${cap(u.plan || 'free')} plan`),
        h('span.badge', { class: `badge-perm-${state.permission.toLowerCase()}`, title: `This key has ${state.permission} permission` }, `${state.permission} access`)),
      h('button.btn.btn-ghost.btn-sm', { type: 'button', on: { click: () => signOut() } }, icon('logout'), 'Sign out')),
    h('aside.sidebar',
      navEl,
      h('div.sidebar-section',
        h('div.sidebar-heading', h('span', 'Keyspaces'),
          h('button.icon-btn.icon-btn-sm', { type: 'button', title: 'Refresh', 'aria-label': 'Refresh keyspaces', on: { click: () => refreshKeyspaces() } }, icon('refresh'))),
        sidebarTree),
      h('div.sidebar-foot', h('div.sidebar-heading', h('span', 'Usage')), usageEl)),
    mainEl,
    toastsEl));
  renderTree();
  renderUsage();
}

window.addEventListener('hashchange', showRoute);

/* ───────────────────────────── boot ───────────────────────────── */

async function boot() {
  if (!session.key) return signInScreen();
  try {
    const user = await api('GET', '/v1/user/', undefined, { key: session.key });
    await startApp(user);
  } catch (err) {
    session.clear();
    signInScreen(err.status === 401 ? { title: 'Please sign in again', detail: err.message } : { title: 'Could not open the console', detail: err.message });
  }
}

boot();
