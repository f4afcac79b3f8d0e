/**
 * The web console in a real browser: Debian's chromium driven by playwright-core, against the
 * real server process. Each screen is photographed: into docs/screenshots/ (for docs/CONSOLE.md)
 * when VSS_UPDATE_SCREENSHOTS=1, else into a temporary folder, so a test run leaves the tree as it
 * was (the pictures differ by a few pixels every run: keys, times).
 * Skips (with the reason) when /usr/bin/chromium is absent: `apt-get install chromium`.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it, type TestContext } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startServer, type RunningServer } from './server.ts';
import { startTestApp, type TestApp } from '../src/http/testing.ts';

const CHROMIUM = process.env.VSS_TEST_CHROMIUM ?? '/usr/bin/chromium';
const ADMIN = 'console-admin-key-0123456789';
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const UPDATE_SHOTS = process.env.VSS_UPDATE_SCREENSHOTS === '1';
const WEB = path.join(ROOT, 'web');
const skip = existsSync(CHROMIUM) ? false : `no browser at ${CHROMIUM} (apt-get install -y chromium): console tests skipped`;

const DOCS = [
  { key: 'billing/refunds', text: 'Refunds are issued within 14 days of a return. Contact support with your order number to start a refund; the money goes back to the original payment method.', metadata: { category: 'billing', updated: '2026-10-02' } },
  { key: 'billing/invoices', text: 'Invoices are emailed on the first day of each month. Past invoices can be downloaded as PDF from Settings → Billing.', metadata: { category: 'billing', updated: '2026-09-12' } },
  { key: 'shipping/times', text: 'Orders ship from our warehouse in Rotterdam within two business days. Tracking numbers arrive by email as soon as the parcel leaves.', metadata: { category: 'shipping', updated: '2026-08-30' } },
  { key: 'shipping/international', text: 'International delivery takes five to ten business days. Customs duties are shown at checkout and paid in advance.', metadata: { category: 'shipping', updated: '2026-08-30' } },
  { key: 'account/password', text: 'To reset your password, open Settings, choose Security and click Reset password. A one-time link is emailed to you and expires after an hour.', metadata: { category: 'account', updated: '2026-07-19' } },
  { key: 'account/two-factor', text: 'Two-factor authentication protects your account with a code from an authenticator app. Recovery codes are shown once when you turn it on.', metadata: { category: 'account', updated: '2026-07-19' } },
];

const HANDBOOK = [
  'The Harbour Light Handbook',
  '',
  'History. The lighthouse on Kestrel Point was first lit on the first of November 1871, after two winters in which eleven ships were lost on the Kestrel reef. The stone tower is 41 metres tall and was built from granite quarried on the island itself. Its first keeper, Thomas Avery, kept the light for thirty-two years and wrote the daily log that the museum still shows.',
  '',
  'The light. The lamp sits inside a second-order Fresnel lens made in Paris in 1870. The lens turns once every twenty seconds on a bath of mercury, giving two white flashes that sailors can see from twenty-two nautical miles away in clear weather. The original paraffin burner was replaced by an electric lamp in 1936 and by a long-life LED array in 2011.',
  '',
  'Duties of the keeper. Keepers climbed the 148 steps of the tower at dusk to start the lamp and again at dawn to stop it. Every four hours through the night they wound the clockwork that turns the lens, trimmed the wick and wrote the weather in the log. In fog the keeper sounded the horn twice every minute until the visibility returned to two miles.',
  '',
  'Automation. The tower was automated in 1994, and the last keeper left the island in the spring of that year. Since then a solar panel on the gallery charges the batteries, a small computer turns the light on at dusk and off at dawn, and a radio link reports faults to the harbour office on the mainland.',
  '',
  'Visiting. A volunteer society opens the lantern room to visitors on summer weekends from ten in the morning until four in the afternoon. The ferry leaves the harbour every hour; the crossing takes twenty minutes. Children under twelve must be accompanied on the stairs, and the gallery is closed when the wind is above force six.',
  '',
  'Wildlife. The cliffs below the tower are home to a colony of puffins from April to August, and grey seals haul out on the rocks of the north cove in autumn. Visitors are asked to keep to the marked paths and to keep dogs on a lead during the nesting season.',
].join('\n');

/** Every file under web/, as URL paths. */
function webFiles(dir = ''): string[] {
  return readdirSync(path.join(WEB, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? webFiles(`${dir}${e.name}/`) : [`/${dir}${e.name}`]);
}

describe('web console: the files and their headers (no browser)', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'fake' })));
  after(() => t.close());

  it('serves every file of web/ without a key, with a strict CSP and no rate limit', async () => {
    const files = ['/', ...webFiles()];
    assert.ok(files.includes('/index.html') && files.includes('/app.js') && files.includes('/styles.css'));
    for (const url of files) {
      const res = await t.call('GET', url, undefined, null);
      assert.equal(res.statusCode, 200, url);
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /default-src 'self'/, url);
      assert.match(csp, /script-src 'self'(;|$)/, url);
      assert.match(csp, /frame-ancestors 'none'/, url);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
      assert.equal(res.headers['x-ratelimit-limit'], undefined, url);
      assert.equal(res.headers['cache-control'], 'no-cache', url);
    }
    const page = await t.call('GET', '/', undefined, null);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.equal((await t.call('GET', '/app.js', undefined, null)).headers['content-type'], 'application/javascript; charset=utf-8');
    const head = await t.app.inject({ method: 'HEAD', url: '/styles.css' });
    assert.equal(head.statusCode, 200);
  });

  it('leaves the API as it was', async () => {
    const root = await t.call('GET', '/v1', undefined, null);
    assert.equal(root.statusCode, 200);
    assert.ok(root.json().version);
    assert.equal((await t.call('GET', '/v1/healthcheck/', undefined, null)).statusCode, 200);
    // Unknown paths still need a key, then 404: no catch-all static route answers them.
    assert.equal((await t.call('GET', '/v1/no-such-route', undefined, null)).statusCode, 401);
    assert.equal((await t.call('GET', '/no-such-file.js', undefined, null)).statusCode, 401);
    assert.equal((await t.call('GET', '/no-such-file.js')).statusCode, 404);
    for (const url of ['/../package.json', '/%2e%2e/package.json', '/fonts/..%2f..%2fpackage.json', '/.env']) {
      const res = await t.call('GET', url);
      assert.ok([400, 403, 404].includes(res.statusCode), `${url}: ${res.statusCode}`);
    }
    // The static routes are not part of the API description.
    const doc = (await t.call('GET', '/v1/openapi.json', undefined, null)).json();
    assert.ok(!Object.keys(doc.paths).some((p) => !p.startsWith('/v1') && p !== '/metrics'), Object.keys(doc.paths).join(' '));
  });

  it('ships everything it loads: no inline script, no remote URL, every import resolves', () => {
    const html = readFileSync(path.join(WEB, 'index.html'), 'utf8');
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    assert.doesNotMatch(html, /\son[a-z]+=/i, 'no inline handlers');
    assert.doesNotMatch(html, /\sstyle=/i, 'no inline styles');
    for (const url of webFiles().filter((f) => /\.(js|css|html)$/.test(f))) {
      const text = readFileSync(path.join(WEB, url), 'utf8');
      assert.doesNotMatch(text, /(src|href)=["']https?:|url\(\s*["']?https?:|from\s+["']https?:|import\(\s*["']https?:/, `${url} loads nothing remote`);
      assert.doesNotMatch(text, /console\.(log|debug|info)\(/, `${url} logs nothing`);
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
        const target = path.resolve(path.dirname(path.join(WEB, url)), m[1]);
        assert.ok(existsSync(target), `${url} imports ${m[1]}, which does not exist`);
      }
    }
  });
});

describe('web console (chromium)', { skip }, () => {
  let server: RunningServer;
  let browser: Browser;
  let dataDir: string;
  let tmpDir: string;
  let shots: string;
  const problems: string[] = [];

  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'vss-console-'));
    tmpDir = await mkdtemp(path.join(os.tmpdir(), 'vss-console-files-'));
    shots = UPDATE_SHOTS ? path.join(ROOT, 'docs/screenshots') : path.join(tmpDir, 'screenshots');
    await mkdir(shots, { recursive: true });
    server = await startServer({ VSS_DATA_DIR: dataDir, VSS_ADMIN_KEY: ADMIN });
    let res = await server.call('POST', '/v1/vector/batch', { keyspace: 'default_keyspace', table: 'vector', vectors: DOCS });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    res = await server.call('POST', '/v1/keyspaces/create', { keyspace: 'research' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    res = await server.call('POST', '/v1/vector/batch', {
      keyspace: 'research',
      table: 'papers',
      vectors: [
        { key: 'hnsw', text: 'Hierarchical navigable small world graphs for approximate nearest neighbour search.' },
        { key: 'pq', text: 'Product quantization compresses vectors into short codes for fast distance estimates.' },
      ],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
    });
  });

  after(async () => {
    await browser?.close();
    await server?.kill('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
    await rm(tmpDir, { recursive: true, force: true });
  });

  const contexts: BrowserContext[] = [];
  async function open(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1360, height: 860 }, colorScheme: 'light', reducedMotion: 'reduce' });
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    // A CSP violation or a script error is a failure of the page itself.
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
    });
    await page.goto(server.url + '/');
    return page;
  }

  async function signIn(page: Page, key = ADMIN): Promise<void> {
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('.shell').waitFor();
  }

  async function shot(page: Page, name: string): Promise<void> {
    await page.evaluate(() => document.fonts.ready);
    await page.screenshot({ path: path.join(shots, `${name}.png`) });
  }

  after(async () => {
    for (const c of contexts) await c.close().catch(() => {});
  });

  it('shows a clear error on the sign-in screen for a wrong key', async () => {
    const page = await open();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.locator('.signin-status .dot-ok').waitFor();
    // The typeface comes from web/fonts, not from the system or a font service.
    assert.ok(await page.evaluate(async () => (await document.fonts.load('14px "Inter Console"')).length > 0), 'web/fonts/InterVariable.woff2 loads');
    await shot(page, 'sign-in');
    await page.getByLabel('API key').fill('vss_this-is-not-a-real-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    const text = await alert.innerText();
    assert.match(text, /not accepted/);
    assert.match(text, /valid API key is required/, 'the server problem detail is shown');
    assert.equal(await page.locator('.shell').count(), 0);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('vss.console.key')), null, 'a refused key is not kept');
    await shot(page, 'sign-in-error');
  });

  it('signs in and lists keyspaces and tables with row counts', async () => {
    const page = await open();
    await signIn(page);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('vss.console.key')), ADMIN);
    assert.equal(await page.evaluate(() => localStorage.length), 0, 'nothing in localStorage');
    await page.locator('.whoami-name', { hasText: 'Administrator' }).waitFor();
    const row = (ks: string, t: string) => page.locator(`.tree-table[data-keyspace="${ks}"][data-table="${t}"] .row-count`);
    assert.equal(await row('default_keyspace', 'vector').innerText(), String(DOCS.length));
    assert.equal(await row('research', 'papers').innerText(), '2');
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.locator('.data-table').waitFor();
    assert.match(await page.locator('.data-table').innerText(), /research[\s\S]*papers/);
    await shot(page, 'overview');
    // A reload keeps the session (sessionStorage) and the pane.
    await page.reload();
    await page.locator('.shell').waitFor();
    assert.equal(await page.locator('.nav a.active').innerText(), 'Overview');
  });

  it('runs a search and shows matches with score, text and metadata', async () => {
    const page = await open();
    await signIn(page);
    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByLabel('Search query').fill('how do I get my money back?');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const first = page.locator('.match').first();
    await first.waitFor();
    assert.equal(await first.getAttribute('data-key'), 'billing/refunds');
    assert.match(await first.locator('.match-text').innerText(), /Refunds are issued within 14 days/);
    const score = Number(await first.locator('.score-value').innerText());
    assert.ok(score > 0.3 && score <= 1, `score ${score}`);
    assert.equal(await page.locator('.match').count(), DOCS.length);
    await first.locator('.match-meta summary').click();
    assert.match(await first.locator('.kv').innerText(), /category\s+billing/);
    assert.match(await page.locator('.results-status').innerText(), /6 matches/);
    await shot(page, 'search');

    // A problem from the API is shown with its detail.
    await page.locator('.search-options summary').click();
    await page.getByLabel('Metadata filter (JSON)').fill('{"category": {"$bogus": 1}}');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.locator('.results-status [role=alert]').waitFor();
    assert.match(await page.locator('.results-status').innerText(), /Search failed[\s\S]*\$bogus/);
  });

  it('switches the search mode: the request carries it, each list\'s score shows beside its match, and a note shows', async () => {
    const page = await open();
    await signIn(page);
    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByLabel('Search query').fill('refund my money');
    const results = page.locator('.results');

    /** Searches in `mode` and returns what was sent and answered, once the cards are drawn. */
    async function searchIn(mode: string): Promise<{ sent: any; answer: any }> {
      await page.getByRole('radio', { name: mode }).check();
      const [request] = await Promise.all([
        page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/v1/search/'),
        page.getByRole('button', { name: 'Search', exact: true }).click(),
      ]);
      const answer = await (await request.response())!.json();
      await page.locator('.results:not(.loading) .match').first().waitFor();
      return { sent: request.postDataJSON(), answer };
    }

    /** Every card shows its list scores exactly when its match has them, with their values. */
    async function assertListScores(answer: any): Promise<number> {
      const cards = results.locator('.match');
      assert.equal(await cards.count(), answer.matches.length);
      let shown = 0;
      for (const [i, m] of answer.matches.entries()) {
        const chips = cards.nth(i).locator('.list-score');
        if (!m.scores) {
          assert.equal(await chips.count(), 0, `${m.key}: no list scores in the answer, none shown`);
          continue;
        }
        shown++;
        for (const list of ['semantic', 'lexical']) {
          const value = m.scores[list];
          const text = await cards.nth(i).locator(`.list-score[data-list="${list}"] .mono`).innerText();
          assert.equal(text, typeof value === 'number' ? value.toFixed(4) : '—', `${m.key}: ${list}`);
        }
      }
      return shown;
    }

    const hybrid = await searchIn('Hybrid');
    assert.equal(hybrid.sent.mode, 'hybrid');
    assert.equal(await results.locator('.match').first().getAttribute('data-key'), 'billing/refunds');
    assert.equal(await assertListScores(hybrid.answer), hybrid.answer.matches.length, 'a hybrid answer has both lists\' scores on every match');
    const first = hybrid.answer.matches[0].scores;
    assert.ok(typeof first.semantic === 'number' && typeof first.lexical === 'number', 'the refunds text is in both lists');
    assert.ok(hybrid.answer.matches.some((m: any) => m.scores.lexical === null), 'some match holds none of the words');
    assert.equal(await results.locator('.list-score[data-list="lexical"] .mono', { hasText: '—' }).count() > 0, true);
    assert.match(await page.locator('.results-status').innerText(), /hybrid/);
    assert.equal(await results.locator('.score-bar').count(), 0, 'a fused score fills no similarity bar');
    await shot(page, 'search-hybrid');

    const lexical = await searchIn('Lexical');
    assert.equal(lexical.sent.mode, 'lexical');
    assert.equal(await results.locator('.match').first().getAttribute('data-key'), 'billing/refunds');
    await assertListScores(lexical.answer);

    // Semantic is the default: the field is left out, and the cards are as before.
    const semantic = await searchIn('Semantic');
    assert.equal('mode' in semantic.sent, false);
    await assertListScores(semantic.answer);
    assert.ok(await results.locator('.score-bar').count() > 0);

    // A note in the answer (the server adds one when its reranker fails) is shown above the matches, and goes with the next search.
    await page.route('**/v1/search/', async (route) => {
      const response = await route.fetch();
      await route.fulfill({ response, json: { ...(await response.json()), note: 'The reranker did not answer within 5000 ms; the matches are in their own order.' } });
    });
    await searchIn('Hybrid');
    assert.match(await page.locator('.search-note [role=status]').innerText(), /reranker did not answer within 5000 ms/);
    await page.unroute('**/v1/search/');
    await searchIn('Hybrid');
    assert.equal(await page.locator('.search-note').innerText(), '');
  });

  it('uploads a file with progress, reports its chunks, and makes it searchable', async (t: TestContext) => {
    const probe = await server.call('GET', '/v1/files/');
    if (probe.status === 404) return t.skip('POST /v1/embed/ and GET /v1/files/ are not on this server yet (404)');
    const file = path.join(tmpDir, 'harbour-light.txt');
    await writeFile(file, HANDBOOK);
    const page = await open();
    await signIn(page);
    await page.getByRole('link', { name: 'Upload' }).click();
    // Record every progress value the bar shows.
    await page.evaluate(() => {
      const seen: string[] = ((window as unknown as { __progress: string[] }).__progress = []);
      new MutationObserver((records) => {
        for (const r of records) {
          const el = r.target as Element;
          if (el.getAttribute?.('role') === 'progressbar') seen.push(el.getAttribute('aria-valuenow') ?? '');
        }
      }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ['aria-valuenow'] });
    });
    await page.locator('#upload-file').setInputFiles(file);
    const item = page.locator('.upload-item[data-file="harbour-light.txt"]');
    await item.and(page.locator('.done')).waitFor();
    assert.equal(await item.getByRole('progressbar').getAttribute('aria-valuenow'), '100');
    const seen = await page.evaluate(() => (window as unknown as { __progress: string[] }).__progress);
    assert.ok(seen.includes('100'), `progress values ${seen.join(',')}`);
    const chunks = Number((await item.locator('.upload-chunks').innerText()).match(/\d+/)?.[0]);
    assert.ok(chunks >= 1, `chunks ${chunks}`);
    const listed = page.locator('.files-table tr[data-file="harbour-light.txt"]');
    await listed.waitFor();
    assert.match(await listed.innerText(), new RegExp(`txt[\\s\\S]*\\b${chunks}\\b`));
    // The sidebar's row count includes the new chunks.
    await page.locator(`.tree-table[data-keyspace="default_keyspace"][data-table="vector"] .row-count`, { hasText: String(DOCS.length + chunks) }).waitFor();
    await shot(page, 'upload');

    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByLabel('Search query').fill('how far away can sailors see the lighthouse flashes');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const first = page.locator('.match').first();
    await first.waitFor();
    assert.match(await first.getAttribute('data-key') ?? '', /^harbour-light\.txt#\d+$/);
    assert.match(await first.locator('.chip-file').innerText(), /harbour-light\.txt/);
  });

  it('chats: a question is answered with its sources', async (t: TestContext) => {
    const probe = await server.call('POST', '/v1/chat/', { query: '/help' });
    if (probe.status === 404) return t.skip('POST /v1/chat/ is not on this server yet (404)');
    const page = await open();
    await signIn(page);
    await page.getByRole('link', { name: 'Chat' }).click();
    await page.getByLabel('Message').fill('How long does it take to get a refund?');
    await page.getByLabel('Message').press('Enter');
    const answer = page.locator('.msg-bot:not(.typing)').last();
    await answer.locator('.msg-text').waitFor();
    assert.equal(await page.locator('.msg-error').count(), 0, await page.locator('.thread').innerText());
    assert.match(await answer.locator('.msg-text').innerText(), /14 days/);
    const sources = answer.locator('.source');
    assert.ok((await sources.count()) >= 1);
    assert.equal(await sources.first().getAttribute('data-key'), 'billing/refunds');
    // A source opens to show its passage.
    await sources.first().locator('summary').click();
    await sources.first().locator('.source-text p', { hasText: 'Refunds are issued' }).waitFor();
    // A command is answered by the server too.
    const before = await page.locator('.msg-bot:not(.typing)').count();
    await page.getByLabel('Message').fill('/keyspaces');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.msg-bot:not(.typing)').nth(before).locator('.msg-text', { hasText: 'research' }).waitFor();

    // For the screenshot: a fresh conversation about the uploaded handbook (when uploads exist).
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByLabel('Message').fill('How long does it take to get a refund?');
    await page.getByLabel('Message').press('Enter');
    await page.locator('.msg-bot:not(.typing) .msg-text').first().waitFor();
    await page.getByLabel('Message').fill('When was the lighthouse automated, and what runs it now?');
    await page.getByLabel('Message').press('Enter');
    await page.locator('.msg-bot:not(.typing) .msg-text').nth(1).waitFor();
    await page.locator('.thread').evaluate((el) => el.scrollTo(0, el.scrollHeight));
    await shot(page, 'chat');
  });

  it('keys pane (All keys): creates a key, shows its secret once, lists it; hidden for other keys', async () => {
    const page = await open();
    await signIn(page);
    await page.getByRole('link', { name: 'Keys' }).click();
    await page.locator('.keys-table').waitFor();
    await page.getByLabel('Name', { exact: true }).fill('search-frontend');
    await page.locator('.segment', { hasText: 'Read' }).click();
    await page.getByLabel('Keyspaces', { exact: true }).fill('default_keyspace');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.getByLabel('New key secret');
    await secret.waitFor();
    const value = await secret.inputValue();
    assert.match(value, /^vss_/);
    const row = page.locator('.keys-table tbody tr', { hasText: 'search-frontend' });
    await row.waitFor();
    assert.match(await row.innerText(), /Read[\s\S]*default_keyspace[\s\S]*Active/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: /Copied|Select and copy/ }).waitFor();
    await shot(page, 'keys');
    // The secret works, and is never listed again.
    const me = await server.call('GET', '/v1/user/', undefined, value);
    assert.equal(me.status, 200);
    assert.ok(!(await page.locator('.keys-table').innerText()).includes(value));

    // Signed in with that Read key: no Keys pane, upload warns that it cannot write.
    const other = await open();
    await signIn(other, value);
    assert.equal(await other.getByRole('link', { name: 'Keys' }).count(), 0);
    assert.equal(await other.locator('.whoami .badge-perm-read').innerText(), 'Read access');
    assert.equal(await other.locator('.tree-table[data-keyspace="research"]').count(), 0, 'the key reaches default_keyspace only');
    await other.getByRole('button', { name: 'Sign out' }).click();
    await other.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(await other.evaluate(() => sessionStorage.getItem('vss.console.key')), null);

    // Revoking it signs its session out on the next call.
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Confirm revoke' }).click();
    await page.locator('.keys-table tbody tr.revoked', { hasText: 'search-frontend' }).waitFor();
    assert.equal((await server.call('GET', '/v1/user/', undefined, value)).status, 401);
  });

  it('had no script errors or CSP violations on any page', () => {
    assert.deepEqual(problems, []);
  });
});
