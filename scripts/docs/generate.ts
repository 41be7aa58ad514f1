// `npm run docs:generate`: rewrites the generated regions of README.md
// (scripts/docs/regions.ts) from the code they describe. `--check` writes
// nothing and exits 1 naming each region that differs, as the README test does.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { regionNames, replaceRegion } from './regions.js';
import { configTable } from './config-table.js';
import { cliSynopsis } from './cli-synopsis.js';
import { routesTable } from './routes-table.js';
import { metricsTable } from './metrics-table.js';

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

async function main(): Promise<number> {
  const text = readFileSync(README_PATH, 'utf8');
  const generated = await generatedReadme(text);
  if (!process.argv.includes('--check')) {
    if (generated !== text) writeFileSync(README_PATH, generated);
    return 0;
  }
  if (generated === text) return 0;
  process.stderr.write('README.md differs from what `npm run docs:generate` makes of it\n');
  return 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
