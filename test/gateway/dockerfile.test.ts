// No Docker engine here and no hadolint: replay the Dockerfile instead. The
// build stage's COPY lines copy the listed paths into a scratch directory and
// its RUN (npm ci: the native build and the TypeScript) runs there; the
// runtime stage's COPY --from=build lines assemble a second directory, which
// starts with the image's ENTRYPOINT + CMD; the HEALTHCHECK command runs
// against that live gateway. And the README's quick start agrees with the
// image (port 7470, /healthz).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/paths.js';
import { freeLoopbackAddress } from '../support/loopback.js';

interface Stage {
  name: string | undefined;
  lines: Array<{ op: string; args: string }>;
}

export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const joined = text.replace(/\\\n/g, ' ').split('\n');
  for (const raw of joined) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Z]+)\s+(.*)$/.exec(line);
    assert.ok(m, `unparsed Dockerfile line: ${line}`);
    const [, op, args] = m as unknown as [string, string, string];
    if (op === 'FROM') {
      stages.push({ name: /\bAS\s+(\S+)/i.exec(args)?.[1], lines: [] });
      continue;
    }
    stages[stages.length - 1]!.lines.push({ op, args: args.replace(/\s+/g, ' ') });
  }
  return stages;
}

const DOCKERFILE = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
const stages = parseDockerfile(DOCKERFILE);
const build = stages.find((s) => s.name === 'build')!;
const runtime = stages[stages.length - 1]!;
const jsonArray = (s: string): string[] => JSON.parse(s) as string[];

test('the Dockerfile is multi-stage, runs as a non-root user, exposes 7470 and has a HEALTHCHECK on /healthz', () => {
  assert.ok(build && runtime !== build, 'a build stage and a runtime stage');
  const ops = (op: string) => runtime.lines.filter((l) => l.op === op).map((l) => l.args);
  assert.deepEqual(ops('USER'), ['node']);
  assert.deepEqual(ops('EXPOSE'), ['7470']);
  assert.match(ops('HEALTHCHECK')[0] ?? '', /CMD .*http:\/\/127\.0\.0\.1:7470\/healthz/);
  assert.deepEqual([...jsonArray(ops('ENTRYPOINT')[0]!), ...jsonArray(ops('CMD')[0]!)], ['node', 'bin/qpgate.js', 'serve']);
});

test('the README quick start and the Dockerfile agree: port 7470, /healthz, npm start = qpgate serve', () => {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const quick = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('\n## ', readme.indexOf('## Quick start') + 5));
  assert.match(quick, /curl -s http:\/\/127\.0\.0\.1:7470\/healthz/);
  assert.match(quick, /http:\/\/127\.0\.0\.1:7470/);
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts['start'], 'node bin/qpgate.js serve');
  assert.match(DOCKERFILE, /EXPOSE 7470/);
  assert.match(DOCKERFILE, /127\.0\.0\.1:7470\/healthz/);
  const defaults = readFileSync(join(REPO_ROOT, 'config/default.yaml'), 'utf8');
  assert.match(defaults, /^\s+port: 7470\b/m);
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('replaying the Dockerfile: build stage, runtime stage, ENTRYPOINT + CMD, HEALTHCHECK', { timeout: 15 * 60_000 }, async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'qpgate-docker-'));
  const buildDir = join(scratch, 'build');
  const runDir = join(scratch, 'runtime');
  mkdirSync(buildDir);
  mkdirSync(runDir);
  try {
    // Build stage: WORKDIR /app, COPY <src...> <dest>, RUN (apt-get lines are the image's system packages: skipped).
    for (const { op, args } of build.lines) {
      if (op === 'COPY') {
        const parts = args.split(' ').filter((p) => !p.startsWith('--'));
        const dest = parts.pop()!;
        for (const src of parts) {
          // `COPY a b c ./` and `COPY x native/` copy into the directory; `COPY bin bin` copies to the path.
          const into = parts.length > 1 || dest.endsWith('/');
          cpSync(join(REPO_ROOT, src), into ? join(buildDir, dest, src.split('/').pop()!) : join(buildDir, dest), { recursive: true });
        }
      } else if (op === 'RUN' && !/apt-get/.test(args)) {
        const r = spawnSync('sh', ['-c', args], {
          cwd: buildDir,
          encoding: 'utf8',
          // npm's cache has every package: don't go to the network for what it holds.
          env: { ...process.env, npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false' },
          timeout: 14 * 60_000,
        });
        assert.equal(r.status, 0, `RUN ${args} failed:\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
      }
    }
    assert.ok(existsSync(join(buildDir, 'native/build/Release/qpgate.node')), 'the build stage built the addon');
    assert.ok(!existsSync(join(buildDir, 'node_modules/typescript')), 'npm prune --omit=dev removed the dev dependencies');

    // Runtime stage: COPY --from=build /app/<src> <dest>, RUN mkdir.
    for (const { op, args } of runtime.lines) {
      if (op === 'COPY') {
        assert.match(args, /^--from=build /, `runtime COPY without --from=build: ${args}`);
        const parts = args.split(' ').filter((p) => !p.startsWith('--'));
        const dest = parts.pop()!;
        for (const src of parts) {
          const from = join(buildDir, src.replace(/^\/app\/?/, ''));
          const to = dest.endsWith('/') || dest === './' ? join(runDir, dest, src.split('/').pop()!) : join(runDir, dest);
          cpSync(from, to, { recursive: true });
        }
      } else if (op === 'RUN' && !/apt-get/.test(args)) {
        const r = spawnSync('sh', ['-c', args.replace(/chown \S+ \S+/g, 'true').replace(/\/app\b/g, runDir)], { cwd: runDir, encoding: 'utf8' });
        assert.equal(r.status, 0, `RUN ${args}: ${r.stderr}`);
      }
    }

    // Start it as the image would (ENTRYPOINT + CMD), on a free port and its own loopback address.
    const entry = [...jsonArray(runtime.lines.find((l) => l.op === 'ENTRYPOINT')!.args), ...jsonArray(runtime.lines.find((l) => l.op === 'CMD')!.args)];
    assert.equal(entry[0], 'node');
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: process.env['HOME'], NODE_ENV: 'production', QPGATE_CONTROL__PORT: String(port), QPGATE_BACKEND__ADDRESS: freeLoopbackAddress() };
    const child = spawn(process.execPath, entry.slice(1), { cwd: runDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      const deadline = Date.now() + 20_000;
      while (!out.includes('"qpgate ready"')) {
        assert.ok(Date.now() < deadline && child.exitCode === null, `the image's gateway did not start:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      // HEALTHCHECK CMD, pointed at the port this test could get.
      const hc = runtime.lines.find((l) => l.op === 'HEALTHCHECK')!.args.replace(/^.*?CMD /, '').replace('127.0.0.1:7470', `127.0.0.1:${port}`);
      const r = spawnSync('sh', ['-c', hc], { cwd: runDir, encoding: 'utf8', env: { ...env, PATH: `${join(process.execPath, '..')}:${process.env['PATH']}` }, timeout: 10_000 });
      assert.equal(r.status, 0, `HEALTHCHECK failed: ${r.stderr}`);
      // The status page ships in the image.
      const page = await fetch(`http://127.0.0.1:${port}/`);
      assert.equal(page.status, 200);
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0, out);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});
