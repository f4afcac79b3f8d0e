// Chat: questions answered from stored content, with the passages they came from; commands
// (/help, /files, /keyspaces, /tables, /search) answered by the server.
import { clear, fmtScore, h, icon } from '../lib/dom.js';

export function chatPane(ctx) {
  const { state } = ctx;
  const thread = h('div.thread', { 'aria-live': 'polite', 'aria-label': 'Conversation' });
  const input = h('textarea#chat-input.input.chat-input', { rows: 1, placeholder: 'Ask about your stored content, or type /help', 'aria-label': 'Message', maxlength: 8192 });
  const send = h('button.btn.btn-primary', { type: 'submit', 'aria-label': 'Send' }, icon('send'), 'Send');
  const ksSelect = h('select#chat-keyspace.select', { 'aria-label': 'Keyspace to answer from' });
  let busy = false;

  const suggestions = ['/help', '/files', '/keyspaces', 'What is stored here?'];
  const intro = h('div.chat-intro',
    h('div.chat-intro-icon', icon('spark')),
    h('h2', 'Chat with your content'),
    h('p.muted', 'Questions are answered from the passages nearest in meaning, and every answer lists its sources.'),
    h('div.suggestions', suggestions.map((s) => h('button.chip.chip-button', { type: 'button', on: { click: () => { input.value = s; submit(); } } }, s))));

  const form = h('form.chat-form', { on: { submit: (e) => { e.preventDefault(); submit(); } } },
    input, send);
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });
  input.addEventListener('input', grow);
  function grow() {
    input.style.height = 'auto';
    input.style.height = `${Math.min(input.scrollHeight, 180)}px`;
  }

  const el = h('section.chat-pane',
    h('header.pane-head',
      h('div', h('h1', 'Chat'), h('p.pane-sub', 'Answers come from what is stored in the keyspace, never from outside it.')),
      h('div.pane-actions', h('label.label-inline', { for: 'chat-keyspace' }, 'Keyspace'), ksSelect,
        h('button.btn.btn-ghost.btn-sm', { type: 'button', on: { click: reset } }, 'New chat'))),
    h('div.chat-box', thread, h('div.chat-compose', form, h('p.help', h('kbd', 'Enter'), ' to send · ', h('kbd', 'Shift'), '+', h('kbd', 'Enter'), ' for a new line'))));

  function reset() {
    clear(thread, intro);
    input.focus();
  }

  function fillKeyspaces() {
    const current = ksSelect.value || state.selected.keyspace;
    clear(ksSelect, state.keyspaces.map((k) => h('option', { value: k.keyspace, selected: k.keyspace === current }, k.keyspace)));
  }

  function scrollDown() {
    thread.scrollTop = thread.scrollHeight;
  }

  function sourceItem(s, i) {
    const text = h('div.source-text', h('span.muted', 'Loading passage…'));
    let loaded = false;
    const item = h('details.source', { dataset: { key: s.key } },
      h('summary',
        h('span.source-n', String(i + 1)),
        s.source_file ? h('span.source-name', icon('file'), s.source_file) : h('span.source-name.mono', s.key),
        s.source_file ? h('span.source-key.mono.muted', s.key) : null,
        h('span.spacer'),
        h('span.score-value.mono', fmtScore(s.score))),
      text);
    item.addEventListener('toggle', async () => {
      if (!item.open || loaded) return;
      loaded = true;
      try {
        const v = await ctx.api('POST', '/v1/vector/get', { keyspace: s.keyspace, table: s.table, key: s.key });
        // Metadata is the client's: only a string is shown as the passage (h() would take an
        // object in that place for attributes).
        const t = [v?.text, v?.metadata?.text].find((x) => typeof x === 'string' && x !== '');
        clear(text, t ? h('p', t) : h('p.muted', 'No text stored with this passage.'), h('p.source-where.mono.muted', `${s.keyspace}.${s.table}`));
      } catch (err) {
        clear(text, h('p.muted', err.message));
      }
    });
    return item;
  }

  function answer(res) {
    const sources = Array.isArray(res.sources) ? res.sources : [];
    return h('div.msg.msg-bot',
      h('div.msg-avatar', icon('spark')),
      h('div.msg-body',
        h('div.msg-meta', h('strong', 'VSS'), res.mode ? h('span.chip.chip-quiet', res.mode === 'llm' ? 'written by the chat model' : res.mode === 'extractive' ? 'extracted from your content' : 'command') : null),
        h('div.msg-text', res.response ?? ''),
        res.note ? h('p.msg-note', icon('alert'), res.note) : null,
        sources.length
          ? h('div.sources', h('div.sources-title', `Sources · ${sources.length}`), sources.map(sourceItem))
          : null));
  }

  async function submit() {
    const q = input.value.trim();
    if (!q || busy) return;
    busy = true;
    send.disabled = true;
    intro.remove();
    thread.append(h('div.msg.msg-user', h('div.msg-body', h('div.msg-text', q))));
    const typing = h('div.msg.msg-bot.typing', h('div.msg-avatar', icon('spark')), h('div.msg-body', h('div.dots', { 'aria-label': 'Thinking' }, h('span'), h('span'), h('span'))));
    thread.append(typing);
    input.value = '';
    grow();
    scrollDown();
    try {
      const res = await ctx.api('POST', '/v1/chat/', { query: q, ...(ksSelect.value ? { keyspace: ksSelect.value } : {}) });
      typing.replaceWith(answer(res));
    } catch (err) {
      typing.replaceWith(h('div.msg.msg-bot.msg-error', h('div.msg-avatar', icon('alert')),
        h('div.msg-body', h('div.msg-text', { role: 'alert' }, err.status === 404 && err.code === 'not_found' ? 'This server has no chat endpoint (POST /v1/chat/).' : err.message))));
    } finally {
      busy = false;
      send.disabled = false;
      scrollDown();
      input.focus();
    }
  }

  fillKeyspaces();
  reset();
  return {
    el,
    onData: fillKeyspaces,
    onSelect: () => { ksSelect.value = state.selected.keyspace; },
    onShow: () => { fillKeyspaces(); input.focus(); },
  };
}
