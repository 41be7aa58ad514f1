// `npm run docs:generate`: rewrites the modules made from the native
// declarations (scripts/docs/declarations.ts), then the generated regions of
// README.md (scripts/docs/regions.ts) from the code they describe. `--check`
// writes nothing and exits 1 naming what differs, as the test/docs tests do.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { regionNames, replaceRegion } from './regions.js';
import { configTable } from './config-table.js';
import { cliSynopsis } from './cli-synopsis.js';
import { routesTable } from './routes-table.js';
import { metricsTable } from './metrics-table.js';
import { DECLARED_MODULES, repoPath } from './declarations.js';

export const README_PATH = fileURLToPath(new URL('../../../README.md', import.meta.url));

/** Each region's generator. */
export const GENERATORS: Record<string, () => string | Promise<string>> = {
  config: configTable,
  cli: cliSynopsis,
  routes: routesTable,
  metrics: metricsTable,
};

/** README.md as the generators make it. */
export async function generatedReadme(text: string): Promise<string> {
  const unknown = regionNames(text).filter((name) => !(name in GENERATORS));
  if (unknown.length > 0) throw new Error(`README.md: no generator for region ${unknown.join(', ')}`);
  let out = text;
  for (const [name, generate] of Object.entries(GENERATORS)) out = replaceRegion(out, name, await generate());
  return out;
}

/** The declared modules that differ from what their .def makes, after writing them unless `check`. */
function declaredModules(check: boolean): string[] {
  const stale: string[] = [];
  for (const [path, generate] of Object.entries(DECLARED_MODULES)) {
    const text = generate();
    let current = '';
    try {
      current = readFileSync(repoPath(path), 'utf8');
    } catch {
      // not made yet
    }
    if (current === text) continue;
    stale.push(path);
    if (!check) writeFileSync(repoPath(path), text);
  }
  return stale;
}

async function main(): Promise<number> {
  const check = process.argv.includes('--check');
  const stale = declaredModules(check);
  const text = readFileSync(README_PATH, 'utf8');
  const generated = await generatedReadme(text);
  if (!check) {
    if (generated !== text) writeFileSync(README_PATH, generated);
    if (stale.length > 0) process.stderr.write(`rewrote ${stale.join(', ')}: run npm run build:ts before the README regions are current\n`);
    return 0;
  }
  for (const path of stale) process.stderr.write(`${path} differs from what \`npm run docs:generate\` makes of its .def\n`);
  if (generated !== text) process.stderr.write('README.md differs from what `npm run docs:generate` makes of it\n');
  return stale.length > 0 || generated !== text ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
