// The configuration keys README.md and docs/*.md name are keys the gateway
// has: every `section.key` in a code span resolves in the schema
// (src/gateway/config/schema.ts; `key[]` / `key[1]` into a list's items), and
// every `section.key: value` or `section.key=value` given as an example is a
// value the gateway's own loader accepts (`orders.journal.fsync: none`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kind, type TSchema } from '@sinclair/typebox';
import { GatewayConfig } from '../../src/gateway/config/schema.js';
import { ConfigError, loadConfig } from '../../src/gateway/config/load.js';
import { REPO_ROOT } from '../support/paths.js';

const PAGES = ['README.md', ...readdirSync(join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const SECTIONS = Object.keys(GatewayConfig.properties);
const MENTION = new RegExp(`\`((?:${SECTIONS.join('|')})\\.[A-Za-z][A-Za-z0-9.\\[\\]]*)(?:(: |=)([^\`]+))?\``, 'g');

function schemaAt(path: string): TSchema | undefined {
  let node: TSchema | undefined = GatewayConfig;
  for (const seg of path.split('.')) {
    const [name, ...indexes] = seg.split('[');
    node = node?.[Kind] === 'Object' ? (node.properties as Record<string, TSchema>)[name!] : undefined;
    for (let i = 0; i < indexes.length; i++) node = node?.[Kind] === 'Array' ? (node.items as TSchema) : undefined;
  }
  return node;
}

interface Mention {
  where: string;
  key: string;
  value: string | undefined;
}

const mentions: Mention[] = PAGES.flatMap((page) =>
  readFileSync(join(REPO_ROOT, page), 'utf8')
    .split('\n')
    .flatMap((line, i) => [...line.matchAll(MENTION)].map((m) => ({ where: `${page}:${i + 1}`, key: m[1]!.replace(/\.$/, ''), value: m[3] }))),
);

test('the docs name configuration keys (orders.journal.fsync, orders.sessions.resendCapacity, ...)', () => {
  const keys = new Set(mentions.map((m) => m.key));
  for (const key of ['orders.journal.fsync', 'orders.sessions.resendCapacity', 'feeds.feedMemoryBudgetBytes']) assert.ok(keys.has(key), key);
});

test('every configuration key README.md and docs/*.md name exists in the schema', () => {
  assert.deepEqual(
    mentions.filter((m) => schemaAt(m.key) === undefined).map((m) => `${m.where}: ${m.key}`),
    [],
  );
});

test('every `key: value` / `key=value` example in the docs is a value the gateway accepts', () => {
  const refused = mentions
    .filter((m) => m.value !== undefined && !m.key.includes('['))
    .flatMap((m) => {
      // An example that lists the choices (`none|interval|every`) is each of them.
      return m.value!.split('|').flatMap((value) => {
        try {
          loadConfig({ env: {}, overrides: [`${m.key}=${value.trim()}`] });
          return [];
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          return [`${m.where}: ${m.key}=${value}: ${err.problems.join('; ')}`];
        }
      });
    });
  assert.deepEqual(refused, []);
});
