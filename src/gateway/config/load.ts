// Loads the gateway configuration in layers, lowest first:
//   1. config/default.yaml (the embedded default, always read)
//   2. a user file (--config), merged key by key over the default
//   3. QPGATE_<SECTION>__<KEY> environment variables (UPPER_SNAKE → camelCase,
//      `__` between levels: QPGATE_ENGINE__IDLE_STRATEGY=spin)
//   4. CLI overrides, `--set engine.idleStrategy=spin`
// and validates the result against the schema. Every problem names the key,
// what was expected, what was given and where it came from.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { fileURLToPath } from 'node:url';
import { FormatRegistry, Kind, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import YAML from 'yaml';
import { GatewayConfig } from './schema.js';
import { configBudgetProblems } from '../../feed/memory.js';
import { validateOrdersConfig } from '../../orders/config.js';
import { validateTokens } from '../sessions/entitlements.js';
import { controlTlsProblems } from '../control/tls.js';
import { securityProblems } from '../security/config.js';

export const DEFAULT_CONFIG_PATH = fileURLToPath(new URL('../../../../config/default.yaml', import.meta.url));

if (!FormatRegistry.Has('ipv4')) FormatRegistry.Set('ipv4', (v) => isIP(v) === 4);

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

export interface LoadOptions {
  file?: string | undefined;
  env?: NodeJS.ProcessEnv;
  overrides?: string[];
}

type Plain = Record<string, unknown>;

export function loadConfig(options: LoadOptions = {}): GatewayConfig {
  return loadConfigWithOrigins(options).config;
}

/**
 * The configuration and where each key given by the user came from (the
 * file's path, `environment NAME`, `--set key=value`); keys not in the map
 * are config/default.yaml's or the schema's defaults.
 */
export function loadConfigWithOrigins(options: LoadOptions = {}): { config: GatewayConfig; origins: ReadonlyMap<string, string> } {
  const origins = new Map<string, string>();
  const config = readYamlFile(DEFAULT_CONFIG_PATH, 'the default config');
  if (options.file) {
    const user = readYamlFile(options.file, `config file ${options.file}`);
    mergeInto(config, user, [], origins, options.file);
  }
  const problems: string[] = [];
  for (const [key, raw] of envOverrides(options.env ?? process.env)) {
    applyOverride(config, key.path, raw, `environment ${key.name}`, origins, problems);
  }
  for (const assignment of options.overrides ?? []) {
    const eq = assignment.indexOf('=');
    if (eq <= 0) {
      problems.push(`--set ${assignment}: expected key=value, e.g. --set control.port=7470`);
      continue;
    }
    const path = assignment.slice(0, eq).split('.');
    applyOverride(config, path, assignment.slice(eq + 1), `--set ${assignment}`, origins, problems);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  // Sections whose schema carries defaults (feeds) are completed before validation.
  const completed = Value.Default(GatewayConfig, config) as Plain;
  validate(completed, origins);
  return { config: completed as GatewayConfig, origins };
}

function readYamlFile(path: string, what: string): Plain {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([`cannot read ${what}: ${(err as Error).message}`]);
  }
  let parsed: unknown;
  try {
    parsed = YAML.parse(text);
  } catch (err) {
    throw new ConfigError([`${what} is not valid YAML: ${(err as Error).message}`]);
  }
  if (parsed === null || parsed === undefined) return {};
  if (!isPlain(parsed)) throw new ConfigError([`${what}: expected a mapping at the top level`]);
  return parsed;
}

function isPlain(v: unknown): v is Plain {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function mergeInto(target: Plain, source: Plain, path: string[], origins: Map<string, string>, origin: string): void {
  for (const [k, v] of Object.entries(source)) {
    const here = [...path, k];
    const existing = target[k];
    if (isPlain(existing) && isPlain(v)) {
      mergeInto(existing, v, here, origins, origin);
    } else {
      target[k] = v;
      origins.set(here.join('.'), origin);
    }
  }
}

interface EnvKey {
  name: string;
  path: string[];
}

/** QPGATE_A__B_C=… → path [a, bC]. Variables without `__` are not config (e.g. QPGATE_FUZZ_SECONDS). */
function envOverrides(env: NodeJS.ProcessEnv): Array<[EnvKey, string]> {
  const out: Array<[EnvKey, string]> = [];
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('QPGATE_') || !name.includes('__') || value === undefined) continue;
    const path = name
      .slice('QPGATE_'.length)
      .split('__')
      .map((seg) => seg.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()));
    out.push([{ name, path }, value]);
  }
  return out.sort((a, b) => a[0].name.localeCompare(b[0].name));
}

function applyOverride(
  config: Plain,
  path: string[],
  raw: string,
  origin: string,
  origins: Map<string, string>,
  problems: string[],
): void {
  const key = path.join('.');
  const schema = schemaAt(GatewayConfig, path);
  if (!schema) {
    problems.push(`${key} (${origin}): unknown key; known keys are ${knownKeys(GatewayConfig).join(', ')}`);
    return;
  }
  let value: unknown = raw;
  // Strings stay verbatim (a token of digits is still a string); everything
  // else is read as a YAML scalar or flow collection: 7470, true, [0, 1].
  if (schema.type !== 'string') {
    try {
      value = YAML.parse(raw);
    } catch (err) {
      problems.push(`${key} (${origin}): not a valid value: ${(err as Error).message}`);
      return;
    }
  }
  let node = config;
  for (const seg of path.slice(0, -1)) {
    if (!isPlain(node[seg])) node[seg] = {};
    node = node[seg] as Plain;
  }
  node[path[path.length - 1] as string] = value;
  origins.set(key, origin);
}

function schemaAt(schema: TSchema, path: string[]): TSchema | undefined {
  let node: TSchema | undefined = schema;
  for (const seg of path) {
    if (!node || node[Kind] !== 'Object') return undefined;
    node = (node.properties as Record<string, TSchema>)[seg];
  }
  return node;
}

function knownKeys(schema: TSchema, prefix = ''): string[] {
  if (schema[Kind] !== 'Object') return [prefix];
  return Object.entries(schema.properties as Record<string, TSchema>).flatMap(([k, s]) =>
    knownKeys(s, prefix ? `${prefix}.${k}` : k),
  );
}

function validate(config: Plain, origins: Map<string, string>): void {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const error of Value.Errors(GatewayConfig, config)) {
    // A union reports once per member and once for the whole; keep the first per key.
    const key = error.path.split('/').filter(Boolean).join('.') || '(top level)';
    if (seen.has(key)) continue;
    seen.add(key);
    const expected = error.schema.description ?? error.message.replace(/^Expected /, '');
    const unknown = error.message.startsWith('Unexpected property');
    const origin = originOf(key, origins);
    problems.push(
      unknown
        ? `${key}${origin}: unknown key`
        : `${key}${origin}: expected ${expected}, got ${JSON.stringify(error.value) ?? 'nothing'}`,
    );
  }
  const cfg = config as GatewayConfig;
  if (problems.length === 0) {
    if ((cfg.engine.ringBytes & (cfg.engine.ringBytes - 1)) !== 0) {
      problems.push(`engine.ringBytes${originOf('engine.ringBytes', origins)}: expected a power of two, got ${cfg.engine.ringBytes}`);
    }
    if (cfg.engine.backoff.minParkNs > cfg.engine.backoff.maxParkNs) {
      problems.push(
        `engine.backoff.minParkNs: expected at most engine.backoff.maxParkNs (${cfg.engine.backoff.maxParkNs}), got ${cfg.engine.backoff.minParkNs}`,
      );
    }
    // An idle engine completes a duty cycle at least every maxParkNs: a shorter limit would call a parked engine stalled.
    const parkMs = cfg.engine.backoff.maxParkNs / 1e6;
    if (cfg.control.health.engineStaleMs <= 2 * parkMs) {
      problems.push(
        `control.health.engineStaleMs${originOf('control.health.engineStaleMs', origins)}: expected more than twice engine.backoff.maxParkNs (${parkMs} ms), got ${cfg.control.health.engineStaleMs}`,
      );
    }
    const origin = (key: string): string => originOf(key, origins);
    const alternateDevice = cfg.backend.alternateDevice;
    if (alternateDevice !== undefined && cfg.backend.kind !== 'ibv') {
      problems.push(`backend.alternateDevice${origin('backend.alternateDevice')}: only for backend.kind 'ibv' (a second RDMA device), got ${JSON.stringify(alternateDevice)} with kind '${cfg.backend.kind}'; the soft backend's second link is backend.alternateAddress`);
    } else if (alternateDevice !== undefined && alternateDevice === cfg.backend.device) {
      problems.push(`backend.alternateDevice${origin('backend.alternateDevice')}: expected a device other than backend.device, got ${JSON.stringify(alternateDevice)} for both`);
    }
    problems.push(
      ...validateTokens(cfg.control.tokens, origin),
      ...controlTlsProblems(cfg.control, origin),
      ...securityProblems(cfg.security, origin, cfg.backend.alternateAddress !== undefined || alternateDevice !== undefined),
      ...validateOrdersConfig(cfg.orders, cfg.feeds, origin),
      ...configBudgetProblems(cfg.feeds, origin),
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
}

function originOf(key: string, origins: Map<string, string>): string {
  for (let k = key; k; k = k.includes('.') ? k.slice(0, k.lastIndexOf('.')) : '') {
    const o = origins.get(k);
    if (o) return ` (from ${o})`;
  }
  return '';
}
