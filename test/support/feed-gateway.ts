// `qpgate serve` arguments for a gateway with a synthetic feed at 5,000
// messages/s on `group` and a read token allowed a recovery session on its
// channel 1: what the tests of a subscriber's recovery across a gateway's
// restart or a lost link run against (a state dir of its own, so a restart
// on the same arguments is the same gateway).
import { createServer } from 'node:net';

import { writeConfig } from '../orders/support.js';
import { syntheticFeedYaml } from './feed-engine.js';
import { freeLoopbackAddress } from './loopback.js';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

export async function recoveryFeedGatewayArgs(token: string, group: string): Promise<string[]> {
  const { file, dir } = writeConfig(`control:
  tokens:
    - {name: feedapp, scope: read, token: ${token}, roles: [recovery], channels: [1]}
${syntheticFeedYaml({ group, heartbeatMs: 5, instruments: 40, ratePerSec: 5000 })}`);
  return ['--config', file, '--host', '127.0.0.1', '--port', String(await freePort()), '--set', `state.dir=${dir}`, '--set', `backend.address=${freeLoopbackAddress()}`];
}
