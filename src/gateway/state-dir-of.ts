// resolveToken's state.dir (src/client/control-client.ts) from the gateway's
// config layers: wired by the CLI (cli.ts) and the package's entry
// (src/index.ts), the two places the clients start from.
import { setStateDirOf } from '../client/control-client.js';
import { loadConfig } from './config/load.js';

setStateDirOf((file, env) => loadConfig({ file, env }).state.dir);
