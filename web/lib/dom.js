// A tiny DOM toolkit: elements are built with h(), never from HTML strings, so stored text
// (metadata, file names, chat answers) is always shown as text.

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * h('div.card.wide#id', {attrs, on: {click}}, ...children). Children: nodes, strings, numbers,
 * arrays, null/false (skipped). Attributes: `class`, `text`, `dataset`, boolean and string attrs.
 */
export function h(tag, attrs, ...children) {
  if (attrs === null || typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs)) {
    if (attrs !== undefined) children.unshift(attrs);
    attrs = {};
  }
  const [, name = 'div', rest = ''] = /^([a-z0-9-]*)(.*)$/i.exec(tag) ?? [];
  const el = document.createElement(name || 'div');
  for (const part of rest.match(/[.#][^.#]+/g) ?? []) {
    if (part[0] === '.') el.classList.add(part.slice(1));
    else el.id = part.slice(1);
  }
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === 'class') for (const c of String(v).split(/\s+/).filter(Boolean)) el.classList.add(c);
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked' || k === 'disabled' || k === 'selected' || k === 'multiple' || k === 'hidden') el[k] = Boolean(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false || c === true) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// Icons: 24×24, 1.75 stroke, drawn for this console.
const ICONS = {
  search: ['M10.5 3a7.5 7.5 0 1 0 0 15a7.5 7.5 0 0 0 0-15z', 'M16 16l5 5'],
  upload: ['M12 15V4', 'M7.5 8.5L12 4l4.5 4.5', 'M4 15v3a2 2 0 0 0 2 2h12a2 2 0 0 0 2-2v-3'],
  chat: ['M4 5.5A2.5 2.5 0 0 1 6.5 3h11A2.5 2.5 0 0 1 20 5.5v8a2.5 2.5 0 0 1-2.5 2.5H10l-4.5 4v-4h0A1.5 1.5 0 0 1 4 14.5z'],
  key: ['M8 11a4.5 4.5 0 1 0 0 9a4.5 4.5 0 0 0 0-9z', 'M11.2 12.3L20 3.5', 'M16.5 7l3 3', 'M14 9.5l2 2'],
  grid: ['M4 4h7v7H4z', 'M13 4h7v7h-7z', 'M4 13h7v7H4z', 'M13 13h7v7h-7z'],
  db: ['M12 3c4.4 0 8 1.3 8 3s-3.6 3-8 3s-8-1.3-8-3s3.6-3 8-3z', 'M4 6v6c0 1.7 3.6 3 8 3s8-1.3 8-3V6', 'M4 12v6c0 1.7 3.6 3 8 3s8-1.3 8-3v-6'],
  table: ['M4 5h16v14H4z', 'M4 10h16', 'M10 10v9'],
  logout: ['M15 4h3a2 2 0 0 1 2 2v12a2 2 0 0 1-2 2h-3', 'M10 8l-4 4l4 4', 'M6 12h10'],
  copy: ['M9 9h10v11H9z', 'M5 15V4h10'],
  check: ['M5 12.5l4.5 4.5L19 7.5'],
  alert: ['M12 3l9.5 17h-19z', 'M12 10v4.5', 'M12 17.5v.01'],
  refresh: ['M20 11a8 8 0 0 0-14.6-4.5L4 8', 'M4 3.5V8h4.5', 'M4 13a8 8 0 0 0 14.6 4.5L20 16', 'M20 20.5V16h-4.5'],
  file: ['M6 3h8l4 4v14H6z', 'M14 3v4h4', 'M9 12h6', 'M9 16h6'],
  send: ['M4 12l16-8l-6 16l-2.5-6.5z', 'M11.5 13.5L20 4'],
  plus: ['M12 5v14', 'M5 12h14'],
  x: ['M6 6l12 12', 'M18 6L6 18'],
  eye: ['M2.5 12S6 5.5 12 5.5S21.5 12 21.5 12S18 18.5 12 18.5S2.5 12 2.5 12z', 'M12 9.5a2.5 2.5 0 1 0 0 5a2.5 2.5 0 0 0 0-5z'],
  chevron: ['M9 6l6 6l-6 6'],
  spark: ['M12 3l1.8 5.2L19 10l-5.2 1.8L12 17l-1.8-5.2L5 10l5.2-1.8z', 'M18.5 15.5l.7 1.8l1.8.7l-1.8.7l-.7 1.8l-.7-1.8l-1.8-.7l1.8-.7z'],
  book: ['M5 4.5A1.5 1.5 0 0 1 6.5 3H19v15H6.5A1.5 1.5 0 0 0 5 19.5z', 'M5 19.5A1.5 1.5 0 0 0 6.5 21H19v-3'],
  user: ['M12 4a4 4 0 1 0 0 8a4 4 0 0 0 0-8z', 'M4.5 20a7.5 7.5 0 0 1 15 0'],
};

export function icon(name, cls = '') {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', `icon ${cls}`.trim());
  for (const d of ICONS[name] ?? []) {
    const p = document.createElementNS(SVG_NS, 'path');
    p.setAttribute('d', d);
    svg.append(p);
  }
  return svg;
}

/** The brand mark: a vector arrow in a rounded square (also web/favicon.svg). */
export function logo() {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 32 32');
  svg.setAttribute('class', 'logo');
  svg.setAttribute('aria-hidden', 'true');
  const parts = [
    ['rect', { x: 1, y: 1, width: 30, height: 30, rx: 8, class: 'logo-bg' }],
    ['path', { d: 'M9 23L21.5 10.5', class: 'logo-stroke' }],
    ['path', { d: 'M14 10h8v8', class: 'logo-stroke' }],
    ['circle', { cx: 9, cy: 23, r: 2.2, class: 'logo-dot' }],
  ];
  for (const [tag, attrs] of parts) {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    svg.append(el);
  }
  return svg;
}

const nf = new Intl.NumberFormat('en-US');
export const fmtInt = (n) => (typeof n === 'number' && Number.isFinite(n) ? nf.format(n) : '—');
/** Plan limits use MAX_SAFE_INTEGER for "none". */
export const fmtLimit = (n) => (typeof n !== 'number' || n >= Number.MAX_SAFE_INTEGER / 2 ? 'unlimited' : nf.format(n));

export function fmtBytes(n) {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '—';
  if (n >= Number.MAX_SAFE_INTEGER / 2) return 'unlimited';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

export function fmtDate(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toLocaleString('en-GB', { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

export function fmtAgo(iso) {
  const d = new Date(iso).getTime();
  if (!Number.isFinite(d)) return '—';
  const s = Math.round((Date.now() - d) / 1000);
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  if (s < 86400 * 30) return `${Math.round(s / 86400)} d ago`;
  return fmtDate(iso);
}

export const fmtScore = (s) => (typeof s === 'number' ? s.toFixed(4) : '—');
