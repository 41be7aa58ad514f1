// The npm package as a user gets it (issue 12): `npm pack`, installed into an
// empty project (its install script builds the addon there), the public API
// imported by package name, its types resolved through the exports map, and
// `npx qpgate serve` answering /healthz.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/paths.js';
import { startGatewayProcess } from '../support/gateway-process.js';

function run(command: string, args: string[], cwd: string, timeoutMs: number): string {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', timeout: timeoutMs, env: { ...process.env, npm_config_update_notifier: 'false' } });
  assert.equal(r.status, 0, `${command} ${args.join(' ')} (in ${cwd}) failed:\n${r.stdout?.slice(-3000)}\n${r.stderr?.slice(-3000)}`);
  return r.stdout;
}

function readyPid(output: string): number | undefined {
  const line = output.split('\n').find((l) => l.includes('"qpgate ready"'));
  return line ? (JSON.parse(line) as { pid: number }).pid : undefined;
}

// What a user writes: the names the README documents, by package name.
const USER_MODULE = `
import { subscribe, createPublisher, discoverChannels, OrderClient, RiskClient, Side, Engine, ClientError } from 'qpgate';
const [url, token] = process.argv.slice(2);
for (const [name, v] of Object.entries({ subscribe, createPublisher, discoverChannels, OrderClient, RiskClient, Engine, ClientError })) {
  if (typeof v !== 'function') throw new Error(name + ' is not exported as a function');
}
if (Side.SIDE_BUY === undefined) throw new Error('Side is not exported');
console.log(JSON.stringify(await discoverChannels({ url, token })));
`;

// The same names through the package's types: a typo or a missing export
// fails tsc, and so does an exports map without "types".
const USER_TS = `
import { subscribe, createPublisher, discoverChannels, OrderClient, RiskClient, type SubscribeOptions, type SubscriberChannelConfig } from 'qpgate';
const channels: Promise<SubscriberChannelConfig[]> = discoverChannels({ url: 'http://127.0.0.1:7470' });
const options: Partial<SubscribeOptions> = {};
export { subscribe, createPublisher, OrderClient, RiskClient, channels, options };
`;

test('npm pack installs into an empty project: the API by package name, its types, npx qpgate serve', { timeout: 15 * 60_000 }, async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'qpgate-pack-'));
  try {
    const packed = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', scratch], REPO_ROOT, 120_000)) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const files = packed[0]!.files.map((f) => f.path);
    for (const f of ['LICENSE', 'native/package.json', 'src/gateway/control/status-page/index.html', 'dist/src/index.d.ts']) {
      assert.ok(files.includes(f), `the tarball lacks ${f}`);
    }
    assert.ok(!files.some((f) => f.startsWith('dist/test/') || f.startsWith('native/build/')), 'the tarball carries tests or a built addon');

    const project = join(scratch, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'user-project', private: true, type: 'module' }));
    run('npm', ['install', '--no-audit', '--no-fund', join(scratch, packed[0]!.filename)], project, 12 * 60_000);
    assert.ok(existsSync(join(project, 'node_modules/qpgate/native/build/Release/qpgate.node')), 'the install script built the addon');

    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(REPO_ROOT, 'node_modules/@types')] },
      files: ['user.ts'],
    }));
    writeFileSync(join(project, 'user.ts'), USER_TS);
    run(process.execPath, [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'], project, 120_000);

    const gw = await startGatewayProcess([], {}, { command: 'npx', argv: ['qpgate'], cwd: project });
    try {
      const health = await fetch(`${gw.url}/healthz`);
      assert.equal(health.status, 200, await health.text());
      const page = await fetch(`${gw.url}/`);
      assert.equal(page.status, 200, 'the status page ships in the package');
      writeFileSync(join(project, 'user.mjs'), USER_MODULE);
      const token = readFileSync(join(gw.stateDir, 'admin.token'), 'utf8').trim();
      const channels = JSON.parse(run(process.execPath, ['user.mjs', gw.url, token], project, 30_000)) as Array<{ id: number; groupA: string }>;
      assert.deepEqual(channels.map((c) => [c.id, c.groupA]), [[1, '239.77.0.1']]);
    } finally {
      // To the gateway itself: npx does not pass a SIGTERM on to it (it
      // would be left running); the gateway logs its pid when ready.
      process.kill(readyPid(gw.output()) ?? gw.child.pid!, 'SIGTERM');
    }
    assert.equal(await gw.exited, 0, `npx qpgate serve exits 0 after the gateway's SIGTERM:\n${gw.output()}`);
    rmSync(gw.stateDir, { recursive: true, force: true });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});
