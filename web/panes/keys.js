// Keys (All keys only): make keys for any user, see them, revoke them. A new secret is shown
// once, with a copy button; the server keeps only its hash.
import { clear, fmtAgo, fmtDate, h, icon } from '../lib/dom.js';

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // Clipboard API refused (not a secure context, or no permission): the selection fallback.
    const ta = h('textarea.visually-hidden', { readonly: true }, text);
    document.body.append(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch { ok = false; }
    ta.remove();
    return ok;
  }
}

export function keysPane(ctx) {
  const { state } = ctx;
  const userSelect = h('select#keys-user.select', { 'aria-label': 'User' });
  const name = h('input#key-name.input', { placeholder: 'e.g. search-frontend', maxlength: 200, autocomplete: 'off' });
  const perm = h('div.segmented', { role: 'radiogroup', 'aria-label': 'Permission' },
    [['Read', 'search, chat, list'], ['Write', 'and upload, write, delete'], ['All', 'and administer']].map(([p, hint]) =>
      h('label.segment', { title: hint },
        h('input', { type: 'radio', name: 'key-permission', value: p, checked: p === 'Read' }),
        h('span', p))));
  const resources = h('input#key-resources.input.mono', { value: '*', placeholder: '*', list: 'key-resource-list', autocomplete: 'off' });
  const resourceList = h('datalist#key-resource-list');
  const create = h('button.btn.btn-primary', { type: 'submit' }, icon('plus'), 'Create key');
  const formError = h('div.alert.alert-error', { role: 'alert', hidden: true });
  const secretBox = h('div.secret-slot');
  const list = h('div.card.card-flush');

  const form = h('form.key-form', { on: { submit: (e) => { e.preventDefault(); generate(); } } },
    h('div.form-row',
      h('div.field.grow', h('label.label', { for: 'key-name' }, 'Name'), name),
      h('div.field', h('span.label', 'Permission'), perm),
      h('div.field.grow', h('label.label', { for: 'key-resources' }, 'Keyspaces'), resources, resourceList),
      h('div.field.field-button', create)),
    h('p.help', 'Keyspaces: comma-separated names, or * for every keyspace. A key never reaches more than the key that made it.'),
    formError);

  const el = h('section',
    h('header.pane-head',
      h('div', h('h1', 'API keys'), h('p.pane-sub', 'Every key belongs to a user. Secrets are shown once; the server stores only their hash.')),
      h('div.pane-actions', h('label.label-inline', { for: 'keys-user' }, 'User'), userSelect)),
    secretBox,
    h('div.card', h('h2.card-title', 'New key'), form),
    h('h2.section-title', 'Keys'),
    list);

  userSelect.addEventListener('change', load);

  function fillUsers() {
    const current = userSelect.value || state.user?.account_id;
    const users = state.users.length ? state.users : [state.user];
    clear(userSelect, users.map((u) => h('option', { value: u.account_id, selected: u.account_id === current },
      `${u.name}${u.email ? ` <${u.email}>` : ''}${u.account_id === state.user?.account_id ? ' (you)' : ''}`)));
    clear(resourceList, h('option', { value: '*' }), state.keyspaces.map((k) => h('option', { value: k.keyspace })));
  }

  function showSecret(k) {
    const value = h('input#new-secret.input.mono.secret-value', { readonly: true, value: k.key, 'aria-label': 'New key secret', on: { focus: (e) => e.target.select() } });
    const copy = h('button.btn.btn-secondary', { type: 'button' }, icon('copy'), 'Copy');
    copy.addEventListener('click', async () => {
      const ok = await copyText(k.key);
      clear(copy, icon(ok ? 'check' : 'alert'), ok ? 'Copied' : 'Select and copy');
      if (!ok) value.select();
    });
    clear(secretBox, h('div.secret', { role: 'status' },
      h('div.secret-head', icon('key'), h('div',
        h('strong', `Key “${k.name}” created`),
        h('p', 'Copy the secret now: it is shown only this once and cannot be recovered.')),
      h('button.icon-btn', { type: 'button', 'aria-label': 'Dismiss', title: 'Dismiss', on: { click: () => clear(secretBox) } }, icon('x'))),
      h('div.secret-row', value, copy)));
  }

  async function generate() {
    formError.hidden = true;
    const permissions = perm.querySelector('input:checked')?.value ?? 'Read';
    const res = resources.value.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
    const body = { name: name.value.trim() || 'key', permissions, resources: res.length ? res : ['*'] };
    if (userSelect.value && userSelect.value !== state.user?.account_id) body.user_id = userSelect.value;
    create.disabled = true;
    try {
      const k = await ctx.api('POST', '/v1/keys/generate', body);
      showSecret(k);
      name.value = '';
      ctx.toast(`Key ${k.name} created`);
      await load();
    } catch (err) {
      clear(formError, icon('alert'), h('div', h('strong', 'The key was not created'), h('p', err.message),
        err.errors.length ? h('ul', err.errors.map((x) => h('li', h('code', x.path), ' ', x.message))) : null));
      formError.hidden = false;
    } finally {
      create.disabled = false;
    }
  }

  async function revoke(k, button) {
    if (button.dataset.armed !== '1') {
      button.dataset.armed = '1';
      button.textContent = 'Confirm revoke';
      button.classList.add('btn-danger');
      setTimeout(() => { if (button.isConnected && button.dataset.armed === '1') { button.dataset.armed = ''; button.textContent = 'Revoke'; button.classList.remove('btn-danger'); } }, 4000);
      return;
    }
    button.disabled = true;
    try {
      await ctx.api('POST', '/v1/keys/revoke', { key_id: k.key_id });
      ctx.toast(`Key ${k.name} revoked`);
      await load();
    } catch (err) {
      ctx.toast(err.message, 'error');
      button.disabled = false;
    }
  }

  async function load() {
    const userId = userSelect.value;
    const qs = userId && userId !== state.user?.account_id ? `?user_id=${encodeURIComponent(userId)}` : '';
    let keys;
    try {
      keys = (await ctx.api('GET', `/v1/keys/retrieve${qs}`)).keys ?? [];
    } catch (err) {
      clear(list, h('div.empty.empty-sm', h('p.muted', err.message)));
      return;
    }
    keys.sort((a, b) => (a.revoked_at ? 1 : 0) - (b.revoked_at ? 1 : 0) || String(b.created_at).localeCompare(String(a.created_at)));
    if (keys.length === 0) {
      clear(list, h('div.empty.empty-sm', icon('key', 'empty-icon'), h('p', 'This user has no keys yet.')));
      return;
    }
    clear(list, h('table.data-table.keys-table',
      h('thead', h('tr', h('th', 'Name'), h('th', 'Key ID'), h('th', 'Permission'), h('th', 'Keyspaces'), h('th', 'Created'), h('th', 'Status'), h('th.actions', h('span.visually-hidden', 'Actions')))),
      h('tbody', keys.map((k) => {
        const btn = h('button.btn.btn-ghost.btn-xs', { type: 'button', on: { click: () => revoke(k, btn) } }, 'Revoke');
        return h('tr', { class: k.revoked_at ? 'revoked' : '', dataset: { keyId: k.key_id } },
          h('td', h('span.cell-name', icon('key'), h('strong', k.name))),
          h('td.mono.muted', { title: k.key_id }, `${k.key_id.slice(0, 8)}…`),
          h('td', h(`span.badge.badge-perm-${String(k.permissions).toLowerCase()}`, k.permissions)),
          h('td', (k.resources ?? []).map((r) => h('span.chip.mono', r === '*' ? 'all' : r))),
          h('td.muted', { title: fmtDate(k.created_at) }, fmtAgo(k.created_at)),
          h('td', k.revoked_at ? h('span.status.status-off', { title: fmtDate(k.revoked_at) }, 'Revoked') : h('span.status.status-on', 'Active')),
          h('td.actions', k.revoked_at ? null : btn));
      }))));
  }

  fillUsers();
  return {
    el,
    onData: fillUsers,
    onShow: () => { fillUsers(); load(); },
  };
}
