#!/usr/bin/env node
// The `qpgate` command. The CLI is TypeScript compiled to dist/; a missing
// dist/ means the package was not built.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/src/gateway/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('qpgate: not built (dist/ is missing). Run `npm install` (or `npm run build`) first; see README.md.\n');
  process.exit(1);
}
const { main } = await import(cli.href);
process.exitCode = await main(process.argv);
