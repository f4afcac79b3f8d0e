// Overview: usage at a glance and every keyspace with its tables and row counts.
import { clear, fmtAgo, fmtBytes, fmtInt, fmtLimit, h, icon } from '../lib/dom.js';

export function overviewPane(ctx) {
  const { state } = ctx;
  const stats = h('div.stats');
  const body = h('div.card.card-flush');
  const nameInput = h('input#new-keyspace.input.mono', { placeholder: 'new_keyspace', pattern: '^[a-z][a-z0-9_]{0,47}$', 'aria-label': 'New keyspace name', maxlength: 48 });
  const createBtn = h('button.btn.btn-secondary', { type: 'submit' }, icon('plus'), 'Create keyspace');
  const formError = h('p.field-error', { role: 'alert', hidden: true });
  const form = h('form.inline-form', {
    on: {
      submit: async (e) => {
        e.preventDefault();
        const name = nameInput.value.trim();
        formError.hidden = true;
        createBtn.disabled = true;
        try {
          const ks = await ctx.api('POST', '/v1/keyspaces/create', name ? { keyspace: name } : {});
          nameInput.value = '';
          ctx.toast(`Keyspace ${ks.keyspace} created`);
          await ctx.refreshKeyspaces();
        } catch (err) {
          formError.textContent = err.message;
          formError.hidden = false;
        } finally {
          createBtn.disabled = false;
        }
      },
    },
  }, nameInput, createBtn);

  const el = h('section',
    h('header.pane-head',
      h('div', h('h1', 'Overview'), h('p.pane-sub', 'Keyspaces, tables and what they hold.')),
      state.permission !== 'Read' ? h('div.pane-actions', form) : null),
    formError,
    stats,
    h('h2.section-title', 'Keyspaces'),
    body);

  function render() {
    const tables = state.keyspaces.flatMap((k) => k.tables.map((t) => ({ ...t, keyspace: k.keyspace })));
    const rows = tables.reduce((n, t) => n + (t.row_count ?? 0), 0);
    const u = state.user ?? {};
    const stat = (label, value, sub) => h('div.stat', h('span.stat-label', label), h('span.stat-value', value), sub ? h('span.stat-sub', sub) : null);
    clear(stats,
      stat('Keyspaces', fmtInt(state.keyspaces.length)),
      stat('Tables', fmtInt(tables.length)),
      stat('Vectors', fmtInt(rows), `limit ${fmtLimit(u.limits?.max_vectors)}`),
      stat('Stored files', fmtBytes(u.usage?.file_bytes ?? 0), `limit ${fmtBytes(u.limits?.max_file_bytes)}`),
      stat('Plan', u.plan ?? '—', `${fmtLimit(u.limits?.requests_per_minute)} requests/min`));

    if (state.keyspaces.length === 0) {
      clear(body, h('div.empty', icon('db', 'empty-icon'), h('p', 'No keyspaces yet.'), h('p.muted', 'Create one above, or write vectors through the API.')));
      return;
    }
    const head = h('thead', h('tr', ['Table', 'Dimension', 'Metric', 'Model', 'Rows', 'Created'].map((c, i) => h('th', { class: i === 4 ? 'num' : '' }, c))));
    const tbody = h('tbody');
    for (const ks of state.keyspaces) {
      tbody.append(h('tr.group-row', h('td', { colspan: 6 }, icon('db'), h('strong', ks.keyspace),
        h('span.muted', ` · ${ks.tables.length} table${ks.tables.length === 1 ? '' : 's'}`),
        ks.replication ? h('span.chip.chip-quiet', ks.replication) : null)));
      if (ks.tables.length === 0) tbody.append(h('tr', h('td.muted', { colspan: 6 }, 'No tables: the first write creates one.')));
      for (const t of ks.tables) {
        const active = ks.keyspace === state.selected.keyspace && t.table === state.selected.table;
        tbody.append(h('tr.clickable', {
          class: active ? 'selected' : '',
          tabindex: 0,
          title: 'Open in Search',
          on: {
            click: () => { ctx.select(ks.keyspace, t.table); ctx.navigate('search'); },
            keydown: (e) => { if (e.key === 'Enter') { ctx.select(ks.keyspace, t.table); ctx.navigate('search'); } },
          },
        },
        h('td', h('span.cell-name', icon('table'), h('span.mono', t.table))),
        h('td.mono', t.dimension ?? '—'),
        h('td', h('span.chip', t.metric ?? '—')),
        h('td.mono.muted', t.model ?? '—'),
        h('td.num.mono', fmtInt(t.row_count)),
        h('td.muted', { title: t.created_at ?? '' }, t.created_at ? fmtAgo(t.created_at) : '—')));
      }
    }
    clear(body, h('table.data-table', head, tbody));
  }

  render();
  return { el, onData: render, onSelect: render, onShow: render };
}
