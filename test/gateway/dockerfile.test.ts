// The Dockerfile's shape, and that its build really gets checked. There is no
// Docker engine here: .ci/run's fresh-root step (test/fresh-root/run.sh) runs
// the build and runtime stages in fresh bookworm roots, every RUN (apt-get
// included) and COPY as the plan below emits it, checks the addon's libraries
// in the runtime root and passes the HEALTHCHECK. These tests check that
// plan covers the whole Dockerfile, so no line can be skipped unnoticed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/paths.js';

interface Stage {
  image: string;
  name: string | undefined;
  lines: Array<{ op: string; args: string }>;
}

const PLAN = join(REPO_ROOT, 'test/fresh-root/dockerfile-plan.mjs');

function plan(...args: string[]): string {
  const r = spawnSync(process.execPath, [PLAN, join(REPO_ROOT, 'Dockerfile'), ...args], { encoding: 'utf8' });
  assert.equal(r.status, 0, `dockerfile-plan.mjs ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const DOCKERFILE = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
const stages = JSON.parse(plan('json')) as Stage[];
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

// The fresh root emulates this image only (it fails on another base).
test('both stages are FROM node:20-bookworm-slim', () => {
  assert.deepEqual(stages.map((s) => s.image), ['node:20-bookworm-slim', 'node:20-bookworm-slim']);
});

const singleQuoted = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

test('the fresh-root plan runs every RUN of both stages, apt-get lines included, and every COPY', () => {
  for (const [name, stage] of [['build', build], ['runtime', runtime]] as const) {
    const shell = plan('shell', name);
    const body = shell.slice(shell.indexOf(`${name}_steps() {`), shell.indexOf('\n}', shell.indexOf(`${name}_steps() {`)));
    for (const { op, args } of stage.lines) {
      if (op === 'RUN') assert.ok(body.includes(singleQuoted(args)), `${name}: RUN ${args} is not in the plan:\n${body}`);
    }
    const copies = stage.lines.filter((l) => l.op === 'COPY').length;
    assert.equal(body.match(/^ {2}docker_copy /gm)?.length, copies, `${name}: every COPY is a docker_copy step`);
    assert.ok(stage.lines.some((l) => l.op === 'RUN' && /apt-get install/.test(l.args)), `${name}: an apt-get install line`);
  }
  const runtimeShell = plan('shell', 'runtime');
  assert.match(runtimeShell, /^runtime_start\(\) \{ in_root_start '\/app' 'node' 'NODE_ENV=production' -- 'node' 'bin\/qpgate.js' 'serve'; \}$/m);
  assert.match(runtimeShell, /^runtime_healthcheck\(\) \{ in_root '\/app' 'node' .*127\.0\.0\.1:7470\/healthz/m);
});

test('an instruction the plan does not know fails it, naming the line', () => {
  const r = spawnSync(process.execPath, ['-e', `import(${JSON.stringify(PLAN)}).then((m) => m.parseDockerfile('FROM x AS build\\nADD a b\\n'))`], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /unsupported Dockerfile line 2: ADD a b/);
});

test('.ci/run runs the fresh-root step before the suite', () => {
  const ci = readFileSync(join(REPO_ROOT, '.ci/run'), 'utf8');
  const fresh = ci.search(/^bash test\/fresh-root\/run\.sh$/m);
  assert.ok(fresh > 0, '.ci/run calls test/fresh-root/run.sh');
  assert.ok(fresh < ci.search(/^npm test$/m), 'before npm test');
});
