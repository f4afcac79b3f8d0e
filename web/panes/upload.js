// Upload: files go to POST /v1/embed/ (multipart, XMLHttpRequest for progress); the server
// extracts, chunks, embeds and stores them. Below, the files already stored in the keyspace.
import { api, session, upload } from '../lib/api.js';
import { clear, fmtAgo, fmtBytes, fmtInt, h, icon } from '../lib/dom.js';

const ACCEPT = '.txt,.md,.markdown,.csv,.json,.html,.htm,.pdf,.docx';

export function uploadPane(ctx) {
  const { state } = ctx;
  const ksSelect = h('select#upload-keyspace.select', { 'aria-label': 'Keyspace' });
  const tableInput = h('input#upload-table.input.mono', { list: 'upload-tables', 'aria-label': 'Table', placeholder: 'vector', pattern: '^[a-z][a-z0-9_]{0,47}$', maxlength: 48 });
  const tableList = h('datalist#upload-tables');
  const fileInput = h('input#upload-file.visually-hidden', { type: 'file', multiple: true, accept: ACCEPT, 'aria-label': 'Choose files to upload' });
  const queue = h('ul.upload-queue', { 'aria-label': 'Uploads' });
  const filesBody = h('div.card.card-flush');
  const filesTitle = h('h2.section-title');
  const limitText = h('span');

  const drop = h('label.dropzone', { for: 'upload-file' },
    icon('upload', 'dropzone-icon'),
    h('span.dropzone-title', 'Drop files here, or ', h('span.link', 'browse')),
    h('span.dropzone-sub', 'txt, md, csv, json, html, pdf, docx', h('span.sep', '·'), limitText));

  for (const ev of ['dragenter', 'dragover']) drop.addEventListener(ev, (e) => { e.preventDefault(); drop.classList.add('dragging'); });
  for (const ev of ['dragleave', 'dragend']) drop.addEventListener(ev, () => drop.classList.remove('dragging'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('dragging');
    startAll([...(e.dataTransfer?.files ?? [])]);
  });
  fileInput.addEventListener('change', () => {
    startAll([...fileInput.files]);
    fileInput.value = '';
  });
  ksSelect.addEventListener('change', () => { fillTables(); loadFiles(); });

  const readOnly = state.permission === 'Read';
  const el = h('section',
    h('header.pane-head', h('div', h('h1', 'Upload'), h('p.pane-sub', 'Files are split into chunks, embedded and stored as vectors you can search and chat with.'))),
    readOnly ? h('div.alert.alert-warn', icon('alert'), h('div', h('strong', 'This key can only read'), h('p', 'Uploading needs a key with Write permission; the server will refuse it.'))) : null,
    h('div.card',
      h('div.form-row',
        h('div.field', h('label.label', { for: 'upload-keyspace' }, 'Keyspace'), ksSelect),
        h('div.field', h('label.label', { for: 'upload-table' }, 'Table'), tableInput, tableList),
        h('p.help.field-note', 'A table that does not exist yet is created by the upload.')),
      fileInput,
      drop,
      queue),
    filesTitle,
    filesBody);

  function fillTarget() {
    const current = ksSelect.value || state.selected.keyspace;
    clear(ksSelect, state.keyspaces.map((k) => h('option', { value: k.keyspace, selected: k.keyspace === current }, k.keyspace)));
    fillTables();
    const max = Math.min(state.env?.limits?.upload_bytes ?? Infinity, state.user?.limits?.max_file_bytes ?? Infinity);
    limitText.textContent = Number.isFinite(max) ? `up to ${fmtBytes(max)} each` : 'any size';
  }

  function fillTables() {
    const ks = state.keyspaces.find((k) => k.keyspace === ksSelect.value);
    clear(tableList, (ks?.tables ?? []).map((t) => h('option', { value: t.table })));
    const preferred = ks?.keyspace === state.selected.keyspace ? state.selected.table : null;
    if (!tableInput.dataset.touched) tableInput.value = preferred ?? ks?.tables.find((t) => t.table === (state.env?.default_table ?? 'vector'))?.table ?? state.env?.default_table ?? 'vector';
  }
  tableInput.addEventListener('input', () => { tableInput.dataset.touched = '1'; });

  function startAll(files) {
    for (const f of files) start(f);
  }

  function start(file) {
    const keyspace = ksSelect.value;
    const table = tableInput.value.trim() || 'vector';
    const fill = h('div.progress-fill');
    const bar = h('div.progress', { role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': 0, 'aria-label': `Upload of ${file.name}` }, fill);
    const pct = h('span.upload-pct.mono', '0%');
    const status = h('span.upload-status', 'Uploading…');
    const cancel = h('button.icon-btn.icon-btn-sm', { type: 'button', title: 'Cancel', 'aria-label': `Cancel upload of ${file.name}` }, icon('x'));
    const item = h('li.upload-item.uploading', { dataset: { file: file.name } },
      h('div.upload-icon', icon('file')),
      h('div.upload-body',
        h('div.upload-line', h('span.upload-name', file.name), h('span.muted.mono', fmtBytes(file.size)), h('span.spacer'), pct, cancel),
        bar,
        h('div.upload-line.small', status, h('span.spacer'), h('span.muted.mono', `${keyspace}.${table}`))));
    queue.prepend(item);

    const setPct = (f) => {
      const p = Math.round(f * 100);
      fill.style.width = `${p}%`;
      bar.setAttribute('aria-valuenow', String(p));
      pct.textContent = `${p}%`;
      if (p >= 100 && item.classList.contains('uploading')) {
        item.classList.replace('uploading', 'processing');
        status.textContent = 'Extracting, chunking and embedding…';
      }
    };
    const started = performance.now();
    const job = upload('/v1/embed/', file, { keyspace, table }, setPct);
    cancel.addEventListener('click', () => job.abort());
    job.promise.then(async (res) => {
      setPct(1);
      const info = res?.file ?? {};
      let chunks = info.chunks;
      if (typeof chunks !== 'number') {
        // An older server: count the file's vectors instead.
        chunks = await api('POST', '/v1/vector/count', { keyspace, table, filter: { source_file: info.name ?? file.name } }).then((r) => r.count, () => null);
      }
      item.classList.remove('uploading', 'processing');
      item.classList.add('done');
      cancel.remove();
      const secs = ((performance.now() - started) / 1000).toFixed(1);
      clear(status, icon('check'), h('span.upload-chunks', `${fmtInt(chunks)} chunk${chunks === 1 ? '' : 's'}`),
        info.type ? ` · ${info.type}` : '', info.pages !== undefined ? ` · ${info.pages} pages` : '',
        info.replaced ? ' · replaced the earlier version' : '', info.truncated ? ' · truncated at the plan limit' : '', ` · ${secs} s`);
      if (info.name && info.name !== file.name) item.querySelector('.upload-name').textContent = info.name;
      ctx.toast(`${info.name ?? file.name}: ${fmtInt(chunks)} chunk${chunks === 1 ? '' : 's'} stored`);
      await ctx.refreshKeyspaces();
      loadFiles();
    }, (err) => {
      item.classList.remove('uploading', 'processing');
      item.classList.add('failed');
      cancel.remove();
      clear(status, icon('alert'), h('span', { role: 'alert' }, err.status === 404 ? 'This server has no upload endpoint (POST /v1/embed/).' : err.message));
    });
  }

  async function download(f) {
    try {
      const res = await fetch(`/v1/files/${encodeURIComponent(f.keyspace)}/${encodeURIComponent(f.table)}/${encodeURIComponent(f.name)}`, { headers: { 'x-api-key': session.key ?? '' } });
      if (!res.ok) throw new Error((await res.json().catch(() => null))?.detail ?? `The server answered ${res.status}.`);
      const url = URL.createObjectURL(await res.blob());
      const a = h('a', { href: url, download: f.name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      ctx.toast(err.message, 'error');
    }
  }

  async function remove(f, button) {
    if (button.dataset.armed !== '1') {
      button.dataset.armed = '1';
      button.textContent = 'Confirm delete';
      button.classList.add('btn-danger');
      setTimeout(() => { if (button.isConnected) { button.dataset.armed = ''; button.textContent = 'Delete'; button.classList.remove('btn-danger'); } }, 4000);
      return;
    }
    button.disabled = true;
    try {
      await api('DELETE', `/v1/files/${encodeURIComponent(f.keyspace)}/${encodeURIComponent(f.table)}/${encodeURIComponent(f.name)}`);
      ctx.toast(`${f.name} deleted with its ${fmtInt(f.chunks)} chunks`);
      await ctx.refreshKeyspaces();
      loadFiles();
    } catch (err) {
      ctx.toast(err.message, 'error');
      button.disabled = false;
    }
  }

  let loading = 0;
  async function loadFiles() {
    const keyspace = ksSelect.value;
    if (!keyspace) return;
    const mine = ++loading;
    filesTitle.textContent = `Files in ${keyspace}`;
    let res;
    try {
      res = await api('GET', `/v1/files/?keyspace=${encodeURIComponent(keyspace)}`);
    } catch (err) {
      if (mine !== loading) return;
      clear(filesBody, h('div.empty.empty-sm', h('p.muted', err.status === 404 && err.code === 'not_found' ? 'This server does not list files (no GET /v1/files/).' : err.message)));
      return;
    }
    if (mine !== loading) return;
    const details = Array.isArray(res?.details) ? res.details : (res?.files ?? []).map((name) => ({ name }));
    if (details.length === 0) {
      clear(filesBody, h('div.empty.empty-sm', icon('file', 'empty-icon'), h('p', 'No files in this keyspace yet.'), h('p.muted', 'Uploaded files are kept, so they can be downloaded or replaced later.')));
      return;
    }
    clear(filesBody, h('table.data-table.files-table',
      h('thead', h('tr', h('th', 'Name'), h('th', 'Table'), h('th', 'Type'), h('th.num', 'Size'), h('th.num', 'Chunks'), h('th', 'Uploaded'), h('th.actions', h('span.visually-hidden', 'Actions')))),
      h('tbody', details.map((f) => {
        const del = h('button.btn.btn-ghost.btn-xs', { type: 'button', on: { click: () => remove(f, del) } }, 'Delete');
        return h('tr', { dataset: { file: f.name } },
          h('td', h('span.cell-name', icon('file'), h('span', { title: f.name }, f.name))),
          h('td.mono', f.table ?? '—'),
          h('td', f.type ? h('span.chip', f.type) : '—'),
          h('td.num.mono', fmtBytes(f.size)),
          h('td.num.mono', fmtInt(f.chunks)),
          h('td.muted', { title: f.created_at ?? '' }, f.created_at ? fmtAgo(f.created_at) : '—'),
          h('td.actions', f.keyspace ? [h('button.btn.btn-ghost.btn-xs', { type: 'button', on: { click: () => download(f) } }, 'Download'), readOnly ? null : del] : null));
      }))));
  }

  fillTarget();
  return {
    el,
    onData: fillTarget,
    onSelect: () => { ksSelect.value = state.selected.keyspace; delete tableInput.dataset.touched; fillTables(); loadFiles(); },
    onShow: () => { fillTarget(); loadFiles(); },
  };
}
