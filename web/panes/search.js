// Search: a query against the selected table, by meaning, by words or both; matches as cards
// with score (and each list's score in hybrid mode), key, text and expandable metadata.
import { clear, fmtInt, fmtScore, h, icon } from '../lib/dom.js';

const STOP = new Set(('a an and are as at be but by can do does for from has have how i if in is it its my of on or our so that the their them there these this to was we what when where which who why will with you your').split(' '));

/**
 * Text with the query's words marked, built from text nodes (stored text is never HTML). A word
 * matches at a word start and may run on a little ("refund" marks "refunds"); stop words do not.
 */
export function highlight(text, query) {
  const words = [...new Set(String(query).toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].filter((w) => w.length >= 3 && !STOP.has(w));
  if (words.length === 0) return [text];
  const alt = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  const re = new RegExp(`(?<![\\p{L}\\p{N}])((?:${alt})[\\p{L}]{0,3})(?![\\p{L}\\p{N}])`, 'giu');
  return String(text).split(re).map((part, i) => (i % 2 === 1 ? h('mark', part) : part));
}

function metaValue(v) {
  if (v === null) return h('span.muted', 'null');
  if (typeof v === 'object') return h('code.json', JSON.stringify(v));
  if (typeof v === 'number' || typeof v === 'boolean') return h('code', String(v));
  return String(v);
}

const MODES = [
  ['semantic', 'Semantic', 'By meaning: the nearest vectors'],
  ['lexical', 'Lexical', 'By words: BM25 over the stored text'],
  ['hybrid', 'Hybrid', 'Both lists, fused into one ranking'],
];

function scoreTitle(mode, metric) {
  if (mode === 'lexical') return 'BM25 score (higher is better)';
  if (mode === 'hybrid') return 'Fused score of the semantic and lexical lists';
  return metric === 'euclidean' ? 'Euclidean distance (lower is nearer)' : `${metric ?? 'cosine'} score`;
}

/** Each list's own score beside the fused one; "—" where that list did not hold the match. */
function listScores(scores, metric) {
  if (!scores || typeof scores !== 'object') return null;
  const chip = (list, label, what) => {
    const v = scores[list];
    return h('span.chip.chip-quiet.list-score', { dataset: { list }, title: typeof v === 'number' ? `${what} in the ${list} list` : `Not in the ${list} list` },
      label, h('span.mono', fmtScore(v)));
  };
  return h('span.list-scores', chip('semantic', 'sem', metric === 'euclidean' ? 'Euclidean distance' : `${metric ?? 'cosine'} score`), chip('lexical', 'lex', 'BM25 score'));
}

export function matchCard(m, rank, query, metric, mode = 'semantic') {
  const meta = m.metadata && typeof m.metadata === 'object' ? m.metadata : {};
  const text = typeof meta.text === 'string' ? meta.text : null;
  const fields = Object.entries(meta).filter(([k]) => k !== 'text');
  // A similarity in [0, 1] fills the bar; a distance (euclidean), an unbounded dot product, a
  // BM25 score or a fused one (a rank fusion's are all near 0) does not.
  const bounded = mode === 'semantic' && metric !== 'euclidean' && typeof m.score === 'number' && m.score >= -1 && m.score <= 1;
  const fill = h('span.score-fill');
  fill.style.width = bounded ? `${Math.max(0, m.score) * 100}%` : '0%';
  const body = text ? h('p.match-text', highlight(text, query)) : h('p.match-text.muted', 'No text stored with this vector.');
  if (text && text.length > 420) {
    body.classList.add('clamped');
    body.addEventListener('click', () => body.classList.toggle('clamped'));
    body.title = 'Click to expand';
  }
  return h('article.match', { dataset: { key: m.key } },
    h('div.match-rank', String(rank)),
    h('div.match-main',
      h('div.match-head',
        h('span.match-key.mono', { title: m.key }, m.key),
        typeof meta.source_file === 'string' ? h('span.chip.chip-file', icon('file'), meta.source_file) : null,
        meta.chunk_index !== undefined ? h('span.chip.chip-quiet', `chunk ${meta.chunk_index}`) : null,
        h('span.spacer'),
        listScores(m.scores, metric),
        h('span.score', { title: scoreTitle(mode, metric) },
          bounded ? h('span.score-bar', fill) : null, h('span.score-value.mono', fmtScore(m.score)))),
      body,
      fields.length > 0
        ? h('details.match-meta',
          h('summary', `Metadata · ${fields.length} field${fields.length === 1 ? '' : 's'}`),
          h('dl.kv', fields.map(([k, v]) => [h('dt.mono', k), h('dd', metaValue(v))])))
        : null));
}

export function searchPane(ctx) {
  const { state } = ctx;
  let lastQuery = '';

  const target = h('select#search-target.select', { 'aria-label': 'Table to search' });
  const query = h('input#search-query.input.input-lg', { type: 'search', placeholder: 'Ask in plain words: “how do refunds work?”', 'aria-label': 'Search query', autocomplete: 'off', maxlength: 8192 });
  const topK = h('select#search-topk.select', { 'aria-label': 'Number of matches' }, [5, 10, 20, 50].map((n) => h('option', { value: n, selected: n === 10 }, `Top ${n}`)));
  const filter = h('textarea#search-filter.input.mono', { rows: 3, placeholder: '{"source_file": "handbook.pdf", "chunk_index": {"$lt": 10}}', 'aria-label': 'Metadata filter (JSON)', spellcheck: 'false' });
  const modes = h('div.segmented', { role: 'radiogroup', 'aria-label': 'Search mode' },
    MODES.map(([value, label, hint]) =>
      h('label.segment', { title: hint },
        h('input', { type: 'radio', name: 'search-mode', value, checked: value === 'semantic' }),
        h('span', label))));
  const button = h('button.btn.btn-primary.btn-lg', { type: 'submit' }, icon('search'), 'Search');
  const status = h('div.results-status', { 'aria-live': 'polite' });
  const note = h('div.search-note');
  const results = h('div.results');
  const targetInfo = h('p.pane-sub');

  const form = h('form.search-form', {
    on: { submit: (e) => { e.preventDefault(); run(); } },
  },
  h('div.search-row', h('div.input-icon', icon('search'), query), topK, button),
  h('div.search-mode-row', h('span.label-inline', 'Mode'), modes),
  h('details.search-options',
    h('summary', 'Filter'),
    h('div.search-options-body',
      h('label.label', { for: 'search-filter' }, 'Metadata filter (JSON) — operators $eq $ne $in $nin $gt $gte $lt $lte $exists $and $or'),
      filter)));

  const el = h('section',
    h('header.pane-head',
      h('div', h('h1', 'Search'), targetInfo),
      h('div.pane-actions', h('label.label-inline', { for: 'search-target' }, 'Table'), target)),
    h('div.card', form),
    status,
    note,
    results);

  target.addEventListener('change', () => {
    const [ks, t] = target.value.split('\u0000');
    ctx.select(ks, t);
  });

  function renderTarget() {
    const { keyspace, table } = state.selected;
    clear(target, state.keyspaces.flatMap((k) => k.tables.map((t) =>
      h('option', { value: `${k.keyspace}\u0000${t.table}`, selected: k.keyspace === keyspace && t.table === table }, `${k.keyspace} / ${t.table}`))));
    const info = ctx.tableInfo(keyspace, table);
    clear(targetInfo, info
      ? [h('span.mono', `${keyspace}.${table}`), h('span.sep', '·'), `${fmtInt(info.row_count)} rows`, h('span.sep', '·'), `${info.dimension}-d ${info.metric}`, info.model ? [h('span.sep', '·'), info.model] : null]
      : 'Choose a table in the sidebar.');
  }

  function empty() {
    clear(results, h('div.empty',
      icon('search', 'empty-icon'),
      h('p', 'Search by meaning, by words, or both.'),
      h('p.muted', 'Matches come back best first, with their score, key, text and metadata; in hybrid mode, each list\'s score too.')));
  }

  async function run() {
    const { keyspace, table } = state.selected;
    const q = query.value.trim();
    if (!q) {
      query.focus();
      return;
    }
    if (!keyspace || !table) {
      clear(status, h('div.alert.alert-error', { role: 'alert' }, icon('alert'), h('div', 'Choose a table to search in the sidebar.')));
      return;
    }
    const mode = modes.querySelector('input:checked')?.value ?? 'semantic';
    // Semantic is the server's default: sent only when another mode is chosen.
    const body = { query: q, keyspace, table, final_top_k: Number(topK.value), ...(mode !== 'semantic' ? { mode } : {}) };
    if (filter.value.trim()) {
      try {
        body.filter = JSON.parse(filter.value);
      } catch (err) {
        clear(status, h('div.alert.alert-error', { role: 'alert' }, icon('alert'), h('div', h('strong', 'The filter is not valid JSON'), h('p', err.message))));
        return;
      }
    }
    button.disabled = true;
    clear(note);
    results.classList.add('loading');
    clear(status, h('span.spinner'), 'Searching…');
    const started = performance.now();
    try {
      const res = await ctx.api('POST', '/v1/search/', body);
      const ms = Math.round(performance.now() - started);
      lastQuery = q;
      const matches = res.matches ?? [];
      const answered = typeof res.mode === 'string' ? res.mode : mode;
      clear(status, h('span.results-count', `${matches.length} match${matches.length === 1 ? '' : 'es'}`),
        h('span.muted', ` in ${keyspace}.${table} · ${ms} ms · ${answered === 'semantic' ? res.metric ?? '' : answered}`));
      // The server's word on how the answer was made (a reranker that failed, for one).
      if (typeof res.note === 'string' && res.note) clear(note, h('div.alert.alert-warn', { role: 'status' }, icon('alert'), h('div', res.note)));
      if (matches.length === 0) {
        clear(results, h('div.empty', icon('search', 'empty-icon'), h('p', 'Nothing matched.'), h('p.muted', answered === 'lexical' ? 'No stored text holds these words, or the filter is too narrow.' : 'The table may be empty, or the filter too narrow.')));
      } else {
        clear(results, matches.map((m, i) => matchCard(m, i + 1, lastQuery, res.metric, answered)));
      }
    } catch (err) {
      clear(status, h('div.alert.alert-error', { role: 'alert' }, icon('alert'), h('div', h('strong', 'Search failed'), h('p', err.message),
        err.errors.length ? h('ul', err.errors.map((x) => h('li', h('code', x.path), ' ', x.message))) : null)));
      clear(results);
    } finally {
      button.disabled = false;
      results.classList.remove('loading');
    }
  }

  renderTarget();
  empty();
  return {
    el,
    onSelect: renderTarget,
    onData: renderTarget,
    onShow: () => { renderTarget(); query.focus(); },
  };
}
