// Session ids are stable for (token name, session name), across restarts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SessionIds } from '../../src/gateway/sessions/session-ids.js';

test('the same (token, name) gets the same id, after a restart too; other keys get new ids', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-ids-'));
  const ids = new SessionIds(dir);
  const a = await ids.acquire('desk', 'desk-7', 'trading');
  const b = await ids.acquire('desk', 'desk-8', 'trading');
  const c = await ids.acquire('risk-team', 'desk-7', 'risk');
  assert.deepEqual([a.id, b.id, c.id], [1, 2, 3]);
  assert.equal((await ids.acquire('desk', 'desk-7', 'trading')).id, 1);
  assert.equal(existsSync(join(dir, 'sessions.json.tmp')), false, 'the temporary file was renamed');

  const again = new SessionIds(dir);
  assert.equal((await again.acquire('desk', 'desk-7', 'trading')).id, 1);
  assert.equal((await again.acquire('risk-team', 'desk-7', 'risk')).id, 3);
  assert.equal((await again.acquire('desk', 'new', 'trading')).id, 4);
  const file = JSON.parse(readFileSync(join(dir, 'sessions.json'), 'utf8')) as { version: number; sessions: Array<{ id: number; token: string; name: string }> };
  assert.equal(file.version, 1);
  assert.deepEqual(file.sessions.map((s) => [s.id, s.token, s.name]), [
    [1, 'desk', 'desk-7'],
    [2, 'desk', 'desk-8'],
    [3, 'risk-team', 'desk-7'],
    [4, 'desk', 'new'],
  ]);
});

test('a corrupt sessions.json refuses to start, naming the file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-ids-'));
  writeFileSync(join(dir, 'sessions.json'), '{"version": 1, "sessions": [');
  assert.throws(() => new SessionIds(dir), new RegExp(`^Error: ${join(dir, 'sessions.json')}: not valid JSON`));
  writeFileSync(join(dir, 'sessions.json'), JSON.stringify({ version: 1, sessions: [{ id: 1, token: 'a', name: 'x' }, { id: 1, token: 'b', name: 'y' }] }));
  assert.throws(() => new SessionIds(dir), /id 1 is given twice/);
});
