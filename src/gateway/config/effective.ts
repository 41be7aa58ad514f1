// `qpgate config`: the effective configuration, one line per key with its
// value and where it came from, so an operator can see what a gateway would
// run with before starting it (and why). Token secrets are never printed.
import { readFileSync } from 'node:fs';
import YAML from 'yaml';

import { table } from '../../common/table.js';
import { DEFAULT_CONFIG_PATH, loadConfigWithOrigins, type LoadOptions } from './load.js';

export interface EffectiveKey {
  key: string;
  value: unknown;
  origin: string;
}

const REDACTED = '<redacted>';
const DEFAULT_FILE = 'config/default.yaml';
const SCHEMA_DEFAULT = 'built-in default';
const VALUE_WIDTH = 60;

/** Every leaf key of the loaded configuration (arrays are one value), in the config's order. */
export function effectiveConfig(options: LoadOptions): EffectiveKey[] {
  const { config, origins } = loadConfigWithOrigins(options);
  const inDefaultFile = new Set(leaves(YAML.parse(readFileSync(DEFAULT_CONFIG_PATH, 'utf8')) ?? {}).map(([k]) => k));
  return leaves(config).map(([key, value]) => ({
    key,
    value: redact(key, value),
    origin: originOf(key, origins) ?? (inDefaultFile.has(key) ? DEFAULT_FILE : SCHEMA_DEFAULT),
  }));
}

/** The origin of `key` or of the nearest parent the user set as a whole (`--set feeds.channels=[...]`). */
function originOf(key: string, origins: ReadonlyMap<string, string>): string | undefined {
  for (let k = key; k !== ''; k = k.includes('.') ? k.slice(0, k.lastIndexOf('.')) : '') {
    const o = origins.get(k);
    if (o !== undefined) return o;
  }
  return undefined;
}

function leaves(node: unknown, prefix = ''): Array<[string, unknown]> {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return [[prefix, node]];
  const entries = Object.entries(node as Record<string, unknown>);
  if (entries.length === 0) return [[prefix, {}]];
  return entries.flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k));
}

function redact(key: string, value: unknown): unknown {
  if (key !== 'control.tokens' || !Array.isArray(value)) return value;
  return value.map((t: unknown) => (typeof t === 'object' && t !== null ? { ...t, token: REDACTED } : t));
}

/** A table of key, value (JSON; a long one wraps at VALUE_WIDTH) and origin. */
export function formatEffective(keys: EffectiveKey[]): string {
  const rows = keys.map((k) => [k.key, JSON.stringify(k.value), k.origin]);
  return table(['KEY', 'VALUE', 'ORIGIN'], rows, { maxWidths: [undefined, VALUE_WIDTH, undefined] });
}
