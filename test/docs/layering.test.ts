// The folders are the architecture (README "Layout"): src/common and
// src/client sit below src/feed, src/orders and src/pingpong, which sit below
// src/gateway, and every import points down. Comments cite files of this
// repository, not notes that live elsewhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { ROOT } from '../../scripts/code-shape.js';

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && ext.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** The repository paths (src/...) a TypeScript file imports, `import type`, re-exports and `import()` included. */
export function importsOf(path: string, source = readFileSync(join(ROOT, path), 'utf8')): string[] {
  return ts
    .preProcessFile(source, true, true)
    .importedFiles.map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => relative(ROOT, resolve(ROOT, dirname(path), spec)));
}

/** `path: imports target` for each import of a file under one of `from` that lands under one of `above`. */
function upward(from: string[], above: string[]): string[] {
  return from
    .flatMap((dir) => files(dir, /\.ts$/))
    .flatMap((p) => importsOf(p).filter((t) => above.some((a) => t.startsWith(`${a}/`))).map((t) => `${p}: imports ${t}`));
}

test('the import scan sees static, type-only, re-exported and dynamic imports', () => {
  const source = `import { a } from '../gateway/json.js';
import type { B } from './b.js';
export { c } from '../../src/gateway/x.js';
const d = await import('../gateway/d.js');
import fs from 'node:fs';
`;
  assert.deepEqual(importsOf('src/feed/x.ts', source), ['src/gateway/json.js', 'src/feed/b.js', 'src/gateway/x.js', 'src/gateway/d.js']);
});

test('src/feed, src/orders and src/pingpong import nothing from src/gateway', () => {
  assert.deepEqual(upward(['src/feed', 'src/orders', 'src/pingpong'], ['src/gateway']), []);
});

test('src/common and src/client import nothing from the layers above them', () => {
  assert.deepEqual(upward(['src/common'], ['src/client', 'src/feed', 'src/orders', 'src/pingpong', 'src/gateway']), []);
  assert.deepEqual(upward(['src/client'], ['src/feed', 'src/orders', 'src/pingpong', 'src/gateway']), []);
});

test('comments cite files in the repository, not DESIGN.md, research.md or paths outside it', () => {
  const outside = /\b(?:DESIGN|research)\.md\b|\/work\/|(?<![\w/])sessions\.md\b/;
  const found = ['native/src', 'src', 'scripts', 'test', 'bench', 'examples']
    .flatMap((dir) => files(dir, /\.(?:ts|h|cc|cpp|sh)$/))
    .filter((p) => p !== 'test/docs/layering.test.ts')
    .flatMap((p) =>
      readFileSync(join(ROOT, p), 'utf8')
        .split('\n')
        .map((line, i) => [line.slice(Math.max(line.indexOf('//'), 0)), i + 1] as const)
        .filter(([line]) => /^\s*(?:\/\/|\*|#)/.test(line) && outside.test(line))
        .map(([line, n]) => `${p}:${n}: ${line.trim()}`),
    );
  assert.deepEqual(found, []);
});
