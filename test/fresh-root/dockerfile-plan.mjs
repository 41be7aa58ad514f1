#!/usr/bin/env node
// Turns the Dockerfile into what test/fresh-root/dockerfile.sh runs in a fresh
// Debian root, so the check follows the Dockerfile and cannot drift from it:
//   node dockerfile-plan.mjs Dockerfile json           the parsed stages
//   node dockerfile-plan.mjs Dockerfile shell <stage>  bash defining <stage>_steps
//     (every RUN, apt-get included, every WORKDIR/COPY/ENV/USER in order),
//     and for a stage with an ENTRYPOINT <stage>_start and <stage>_healthcheck.
// The bash calls helpers the caller defines (lib.sh): in_root, docker_copy,
// in_root_start. An instruction it does not know fails the plan, never skips.
import { readFileSync } from 'node:fs';

const KNOWN = new Set(['FROM', 'RUN', 'WORKDIR', 'COPY', 'ENV', 'USER', 'EXPOSE', 'HEALTHCHECK', 'ENTRYPOINT', 'CMD']);

export function parseDockerfile(text) {
  const stages = [];
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = /^([A-Z]+)\s+(.*)$/.exec(line);
    if (!m || !KNOWN.has(m[1])) throw new Error(`dockerfile-plan: unsupported Dockerfile line ${i + 1}: ${line}`);
    const [, op, args] = m;
    if (op === 'FROM') {
      const [image, as, name] = args.split(/\s+/);
      stages.push({ image, name: /^as$/i.test(as ?? '') ? name : undefined, lines: [] });
      return;
    }
    if (stages.length === 0) throw new Error(`dockerfile-plan: ${op} before FROM at line ${i + 1}`);
    stages[stages.length - 1].lines.push({ op, args: args.replace(/\s+/g, ' ') });
  });
  return stages;
}

const q = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;
const absolute = (workdir, p) => (p.startsWith('/') ? p : `${workdir.replace(/\/$/, '')}/${p}`);

function copyStep(args, workdir) {
  const parts = args.split(' ');
  const flags = Object.fromEntries(parts.filter((p) => p.startsWith('--')).map((p) => p.slice(2).split('=')));
  for (const k of Object.keys(flags)) if (k !== 'from' && k !== 'chown') throw new Error(`dockerfile-plan: COPY --${k} is not supported: COPY ${args}`);
  const paths = parts.filter((p) => !p.startsWith('--'));
  const dest = paths.pop();
  // Docker: a destination ending in / (or several sources) is a directory the
  // sources go into; a source directory's contents are copied, never itself.
  const into = dest.endsWith('/') || paths.length > 1 ? 'into' : 'as';
  const from = flags.from ? `"$FROM_${flags.from}"` : '"$CONTEXT"';
  return `docker_copy ${from} ${q(absolute(workdir, dest))} ${into} ${q(flags.chown ?? '-')} ${paths.map(q).join(' ')}`;
}

function envPair(args) {
  const m = /^(\S+?)(?:=|\s+)(.*)$/.exec(args);
  if (!m) throw new Error(`dockerfile-plan: unparsed ENV ${args}`);
  return `${m[1]}=${m[2]}`;
}

export function stageShell(stage, fn) {
  let workdir = '/';
  let user = 'root';
  const env = [];
  const steps = [];
  const meta = {};
  for (const { op, args } of stage.lines) {
    const ctx = () => `${q(workdir)} ${q(user)} ${env.map(q).join(' ')} --`;
    if (op === 'RUN') steps.push(`in_root ${ctx()} ${q(args)}`);
    else if (op === 'WORKDIR') steps.push(`in_root / root -- ${q(`mkdir -p ${(workdir = absolute(workdir, args))}`)}`);
    else if (op === 'COPY') steps.push(copyStep(args, workdir));
    else if (op === 'ENV') env.push(envPair(args));
    else if (op === 'USER') user = args;
    else meta[op] = args;
    if (op === 'ENTRYPOINT' || op === 'CMD' || op === 'HEALTHCHECK') meta.ctx = ctx();
  }
  const out = [`${fn}_steps() {`, ...steps.map((s) => `  ${s}`), '}'];
  if (meta.ENTRYPOINT) {
    const argv = [...JSON.parse(meta.ENTRYPOINT), ...(meta.CMD ? JSON.parse(meta.CMD) : [])];
    out.push(`${fn}_start() { in_root_start ${meta.ctx} ${argv.map(q).join(' ')}; }`);
  }
  if (meta.HEALTHCHECK) {
    const cmd = /\bCMD (.*)$/.exec(meta.HEALTHCHECK);
    if (!cmd) throw new Error(`dockerfile-plan: HEALTHCHECK without CMD: ${meta.HEALTHCHECK}`);
    out.push(`${fn}_healthcheck() { in_root ${meta.ctx} ${q(cmd[1])}; }`);
  }
  out.push(`${fn}_image=${q(stage.image)}`);
  return out.join('\n');
}

function main([file, mode, name]) {
  const stages = parseDockerfile(readFileSync(file, 'utf8'));
  if (mode === 'json') return JSON.stringify(stages, null, 2);
  if (mode === 'shell') {
    // The last stage is the image; it has no name in our Dockerfile, so "runtime".
    const stage = name === 'runtime' ? stages[stages.length - 1] : stages.find((s) => s.name === name);
    if (!stage) throw new Error(`dockerfile-plan: no stage "${name}" in ${file}`);
    return stageShell(stage, name);
  }
  throw new Error('usage: dockerfile-plan.mjs DOCKERFILE json | shell STAGE');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    process.stdout.write(`${main(process.argv.slice(2))}\n`);
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}
