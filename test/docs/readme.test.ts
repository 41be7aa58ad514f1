// README.md cannot drift from the code: each generated region (the
// configuration table, the CLI synopsis, ...) must be exactly what
// `npm run docs:generate` makes of it from the schema, the commander
// definition, etc. (scripts/docs/generate.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { GENERATORS, README_PATH, generatedReadme } from '../../scripts/docs/generate.js';
import { regionBody, regionNames } from '../../scripts/docs/regions.js';

const readme = readFileSync(README_PATH, 'utf8');

test('README.md has a generated region for each generator, each marked once', () => {
  assert.deepEqual(regionNames(readme).sort(), Object.keys(GENERATORS).sort());
});

for (const name of Object.keys(GENERATORS)) {
  test(`README.md's generated ${name} region is what npm run docs:generate makes`, async () => {
    const generated = (await GENERATORS[name]!()).trim().split('\n');
    assert.deepEqual(regionBody(readme, name).split('\n'), generated, `README.md's ${name} region differs from the code: run npm run docs:generate`);
  });
}

test('docs:generate rewrites a stale row and keeps the hand-written text around it', async () => {
  const handWritten = readme.replace('## Configuration', '## Configuration\n\nA hand-written line.');
  const stale = handWritten.replace(/^\| `control\.port` \|.*$/m, '| `control.port` | integer | `8080` | a stale row |');
  assert.notEqual(stale, handWritten);
  assert.equal(await generatedReadme(stale), handWritten);
});
