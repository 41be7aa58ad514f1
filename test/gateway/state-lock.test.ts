// One gateway per state.dir (issue 13, item 9): a second `qpgate serve` on a
// directory in use exits 2 naming the directory and the holder's pid, before
// it writes anything there; the first one's generated token still works.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { QPGATE_BIN } from '../support/paths.js';
import { freeLoopbackAddress } from '../support/loopback.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { startTestGateway } from '../support/in-process-gateway.js';
import { startGateway } from '../../src/gateway/service.js';
import { createLogger } from '../../src/gateway/log.js';
import { StateDirLockedError } from '../../src/gateway/state-lock.js';

test('a second qpgate serve on a locked state.dir exits 2 with the directory and the pid; the first keeps its admin token', { timeout: 60_000 }, async () => {
  const first = await startGatewayProcess();
  try {
    const tokenPath = join(first.stateDir, 'admin.token');
    const token = readFileSync(tokenPath, 'utf8').trim();
    const tokenWritten = statSync(tokenPath).mtimeMs;
    const second = spawnSync(
      process.execPath,
      [QPGATE_BIN, 'serve', '--port', '0', '--set', `state.dir=${first.stateDir}`, '--set', `backend.address=${freeLoopbackAddress()}`],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(second.status, 2, second.stderr);
    assert.equal(
      second.stderr.trim(),
      `qpgate: state.dir ${first.stateDir} is in use by another qpgate (pid ${first.child.pid}); stop it or give this one another state.dir`,
    );
    assert.equal(readFileSync(tokenPath, 'utf8').trim(), token, 'admin.token was not rewritten');
    assert.equal(statSync(tokenPath).mtimeMs, tokenWritten);
    const res = await fetch(`${first.url}/v1/device`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
  } finally {
    first.child.kill('SIGTERM');
  }
  assert.equal(await first.exited, 0);
});

test('in one process too: a second gateway on a state.dir in use is refused; once the first has closed, one may start', async () => {
  const first = await startTestGateway();
  const dir = first.state.config.state.dir;
  const again = () => startGateway({ ...first.state.config, control: { ...first.state.config.control, port: 0 }, backend: { ...first.state.config.backend, address: freeLoopbackAddress() } }, createLogger('silent'), { handleSignals: false });
  try {
    await assert.rejects(again(), (err: unknown) => err instanceof StateDirLockedError && err.message === `state.dir ${dir} is in use by another qpgate (pid ${process.pid}); stop it or give this one another state.dir`);
  } finally {
    await first.close('test done');
  }
  const second = await again();
  await second.close('test done');
});
