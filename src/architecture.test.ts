/**
 * The tree's rules, checked by reading every module under src/ (and web/) with the TypeScript
 * parser, so a comment or a string never counts:
 *
 * 1. Imports point down the layers: cli → http → service/observability → embedding/ingest →
 *    storage → index. A module may import its own folder, any layer below its own, one of the same
 *    rank, and the leaf modules; nothing above. web/ is browser code: it imports nothing from src/.
 * 2. Leaf modules (LEAF_FILES at src/ root, src/config/ and src/platform/) may be imported from anywhere and
 *    import only other leaves. src/main.ts sits on top and may import anything.
 * 3. Only src/main.ts and src/config/ read process.env (config is validated once and passed down).
 * 4. No worker runs code from a string: no `eval: true` anywhere.
 *
 * Test code (TEST_CODE) is exempt from 1-3: a test may reach into any layer and read its switches.
 * A new folder or root module must be placed in LAYERS or LEAF_FILES, or this test fails.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Folders under src/ by rank: a module may import ranks below or equal to its own. */
const LAYERS: Record<string, number> = {
  cli: 6,
  http: 5,
  service: 4,
  observability: 4,
  embedding: 3,
  ingest: 3,
  storage: 2,
  index: 1,
};

/** Folders under src/ that are leaves: imported from anywhere, importing only leaves (platform/: threads, files, codecs). */
const LEAF_DIRS = ['config', 'platform'];

/** Modules at src/ root that are leaves: the error catalogue every layer throws from. */
const LEAF_FILES = ['errors.ts'];

/** Modules allowed to read process.env besides src/main.ts and src/config/, and why. */
const ENV_READERS: Record<string, string> = {
  'src/cli/main.ts': "the CLI's own entry point (bin/vss.mjs): a separate program that reads its environment once, in run(), and passes it down",
};

/** Test code: tests, the shared contract cases, and helpers only tests use. */
const TEST_CODE = [/\.test\.ts$/, /\.case\.ts$/, /\.test-worker\.ts$/, /-test-support\.ts$/, /^src\/http\/testing\.ts$/];
const isTestCode = (rel: string): boolean => TEST_CODE.some((r) => r.test(rel));

/** Where a module (path relative to the project) stands. */
type Place = { kind: 'top' } | { kind: 'leaf' } | { kind: 'layer'; dir: string; rank: number } | { kind: 'web' } | { kind: 'unplaced' };

function placeOf(rel: string): Place {
  const parts = rel.split('/');
  if (parts[0] === 'web') return { kind: 'web' };
  if (parts.length === 2) {
    if (parts[1] === 'main.ts') return { kind: 'top' };
    return LEAF_FILES.includes(parts[1]) || isTestCode(rel) ? { kind: 'leaf' } : { kind: 'unplaced' };
  }
  if (LEAF_DIRS.includes(parts[1])) return { kind: 'leaf' };
  const rank = LAYERS[parts[1]];
  return rank === undefined ? { kind: 'unplaced' } : { kind: 'layer', dir: parts[1], rank };
}

/** Why importing `to` from `from` breaks the layering, or null when it does not. */
function importViolation(from: string, to: string): string | null {
  const a = placeOf(from);
  const b = placeOf(to);
  if (a.kind === 'web') return to.startsWith('web/') ? null : 'web/ is browser code and imports nothing from src/';
  if (a.kind === 'top' || isTestCode(from)) return null;
  if (b.kind === 'unplaced') return `${to} is in no layer: add its folder to LAYERS or the file to LEAF_FILES`;
  if (b.kind === 'top') return 'nothing imports src/main.ts';
  if (b.kind === 'leaf') return null;
  if (b.kind !== 'layer') return `imports ${to}`;
  if (a.kind === 'leaf') return `a leaf module imports the ${b.dir} layer`;
  if (a.kind !== 'layer') return `${from} is in no layer: add its folder to LAYERS or the file to LEAF_FILES`;
  if (a.dir === b.dir || b.rank <= a.rank) return null;
  return `upward import: ${a.dir} (rank ${a.rank}) imports ${b.dir} (rank ${b.rank})`;
}

interface Finding {
  file: string;
  line: number;
  rule: 'layers' | 'process.env' | 'eval';
  detail: string;
}

/** The rules' findings in one module's source (`rel`: its path relative to the project). */
function checkSource(rel: string, text: string): Finding[] {
  const found: Finding[] = [];
  const kind = rel.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(rel, text, ts.ScriptTarget.Latest, true, kind);
  const at = (node: ts.Node) => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
  const envAllowed = rel === 'src/main.ts' || rel.startsWith('src/config/') || rel in ENV_READERS || isTestCode(rel);
  const checkImport = (node: ts.Node, spec: ts.Expression | undefined) => {
    if (!spec || !ts.isStringLiteralLike(spec) || !spec.text.startsWith('.')) return;
    const to = path.posix.normalize(path.posix.join(path.posix.dirname(rel), spec.text));
    const why = importViolation(rel, to);
    if (why) found.push({ file: rel, line: at(node), rule: 'layers', detail: `${spec.text}: ${why}` });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) checkImport(node, node.moduleSpecifier);
    else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) checkImport(node, node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) checkImport(node, node.argument.literal as ts.Expression);
    if (ts.isPropertyAccessExpression(node) && node.name.text === 'env' && ts.isIdentifier(node.expression) && node.expression.text === 'process' && !envAllowed) {
      found.push({ file: rel, line: at(node), rule: 'process.env', detail: 'reads process.env: take the setting from the validated config instead' });
    }
    if (ts.isPropertyAssignment(node) && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name)) && node.name.text === 'eval' && node.initializer.kind !== ts.SyntaxKind.FalseKeyword) {
      found.push({ file: rel, line: at(node), rule: 'eval', detail: 'a worker from a string: make it a module started with startWorker (src/worker-url.ts)' });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const d of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${d.name}`;
    if (d.isDirectory()) out.push(...sources(rel));
    else if (/\.(ts|mjs|cjs|js)$/.test(d.name)) out.push(rel);
  }
  return out;
}

describe('architecture', () => {
  it('every module under src/ and web/ keeps the layering, reads no process.env below main and config, and evals no code', () => {
    const files = [...sources('src'), ...sources('web')];
    assert.ok(files.length > 100, `read ${files.length} files`);
    const findings = files.flatMap((rel) => checkSource(rel, fs.readFileSync(path.join(ROOT, rel), 'utf8')));
    assert.deepEqual(
      findings.map((f) => `${f.file}:${f.line} [${f.rule}] ${f.detail}`),
      [],
    );
  });

  // The rules themselves, on planted modules: each would be missed if the walk above saw nothing.
  it('finds an upward import, also as a type import, a dynamic import or a re-export', () => {
    const rules = (rel: string, text: string) => checkSource(rel, text).map((f) => `${f.rule}:${f.line}`);
    assert.deepEqual(rules('src/storage/x.ts', "import { a } from '../service/a.ts';"), ['layers:1']);
    assert.deepEqual(rules('src/index/x.ts', "import type { A } from '../embedding/model.ts';\nexport { b } from '../storage/api.ts';"), ['layers:1', 'layers:2']);
    assert.deepEqual(rules('src/service/x.ts', "const m = await import('../http/app.ts');\ntype T = import('../cli/main.ts').X;"), ['layers:1', 'layers:2']);
    assert.deepEqual(rules('src/errors.ts', "import { x } from './storage/api.ts';"), ['layers:1'], 'a leaf imports a layer');
    assert.deepEqual(rules('src/new-thing.ts', "export const x = 1;\nimport { y } from './index/ann.ts';"), ['layers:2'], 'an unplaced root module');
    assert.deepEqual(rules('web/app.js', "import { x } from '../src/errors.ts';"), ['layers:1']);
    // Allowed: down, sideways at one rank, leaves, own folder, main.ts, tests.
    assert.deepEqual(rules('src/http/x.ts', "import '../service/a.ts';\nimport '../index/ann.ts';\nimport '../errors.ts';\nimport '../config/config.ts';\nimport './y.ts';"), []);
    assert.deepEqual(rules('src/embedding/x.ts', "import '../ingest/chunk.ts';"), []);
    assert.deepEqual(rules('src/main.ts', "import './http/app.ts';\nimport './cli/main.ts';"), []);
    assert.deepEqual(rules('src/index/x.test.ts', "import '../http/testing.ts';"), []);
  });

  it('finds process.env below main and config, and a worker evaluated from a string', () => {
    const rules = (rel: string, text: string) => checkSource(rel, text).map((f) => `${f.rule}:${f.line}`);
    assert.deepEqual(rules('src/storage/x.ts', "// process.env in a comment\nconst s = 'process.env';\nconst p = process.env.VSS_X;"), ['process.env:3']);
    assert.deepEqual(rules('src/config/config.ts', 'const p = process.env;'), []);
    assert.deepEqual(rules('src/main.ts', 'const p = process.env;'), []);
    assert.deepEqual(rules('src/index/x.ts', "new Worker('code', { eval: true });\nconst o = { 'eval': true };\nnew Worker(u, { eval: false });"), ['eval:1', 'eval:2']);
  });
});
