// The README's configuration table, made from the schema the gateway validates
// with (src/gateway/config/schema.ts) and the embedded default it loads
// (config/default.yaml with the schema's defaults): one row per key, its type
// from the schema, its default from the loaded default, its meaning from
// CONFIG_MEANINGS (scripts/docs/config-meanings.ts) or the schema's own
// description. A key the schema gains without a meaning, or a meaning for a
// key the schema lost, stops the generator.
import { Kind, type TSchema } from '@sinclair/typebox';
import YAML from 'yaml';
import { GatewayConfig } from '../../src/gateway/config/schema.js';
import { loadConfig } from '../../src/gateway/config/load.js';
import { formatBytes } from '../../src/feed/memory.js';
import { CONFIG_MEANINGS } from './config-meanings.js';
import { tableCell } from './regions.js';

interface Row {
  key: string;
  type: string;
  default: string;
  meaning: string;
}

type Props = Record<string, TSchema>;

/** The Markdown table. */
export function configTable(): string {
  const defaults = loadConfig({ env: {} }) as unknown as Record<string, unknown>;
  const rows: Row[] = [];
  const used = new Set<string>();
  walk(GatewayConfig, '', defaults, false, rows, used);
  const stale = Object.keys(CONFIG_MEANINGS).filter((k) => !used.has(k));
  if (stale.length > 0) throw new Error(`scripts/docs/config-meanings.ts: no such configuration key: ${stale.join(', ')}`);
  return [
    '| key | type | default | meaning |',
    '|---|---|---|---|',
    ...rows.map((r) => `| \`${r.key}\` | ${tableCell(r.type)} | ${tableCell(r.default)} | ${tableCell(r.meaning)} |`),
  ].join('\n');
}

/**
 * One row per leaf; an object or a list of objects gets a row of its own only
 * when it has a meaning, then rows for its fields (a list's as `key[].field`,
 * with the defaults of one item).
 */
function walk(schema: TSchema, key: string, value: unknown, inItem: boolean, rows: Row[], used: Set<string>): void {
  const meaning = key === '' ? undefined : meaningOf(schema, key, used);
  const item = schema[Kind] === 'Array' ? (schema.items as TSchema) : undefined;
  if (schema[Kind] === 'Object') {
    if (meaning !== undefined) rows.push({ key, type: 'object', default: '', meaning });
    const props = schema.properties as Props;
    for (const [name, sub] of Object.entries(props)) {
      // Inside a list item nothing is loaded: a field's default is its schema's.
      const v = inItem ? sub.default : (value as Record<string, unknown> | undefined)?.[name];
      walk(sub, key ? `${key}.${name}` : name, v, inItem, rows, used);
    }
    return;
  }
  if (meaning === undefined) throw new Error(`configuration key ${key} has no meaning: add one to scripts/docs/config-meanings.ts or a description to its schema`);
  rows.push({ key, type: typeOf(schema), default: defaultOf(schema, key, value, inItem), meaning });
  if (item?.[Kind] === 'Object') {
    for (const [name, sub] of Object.entries(item.properties as Props)) {
      const required = ((item.required as string[] | undefined) ?? []).includes(name);
      walk(sub, `${key}[].${name}`, sub.default ?? (required ? REQUIRED : undefined), true, rows, used);
    }
  }
}

const REQUIRED = Symbol('required');

function meaningOf(schema: TSchema, key: string, used: Set<string>): string | undefined {
  const own = CONFIG_MEANINGS[key];
  if (own !== undefined) used.add(key);
  return own ?? (schema.description as string | undefined);
}

/** What the schema accepts, in a few words. */
function typeOf(schema: TSchema): string {
  switch (schema[Kind]) {
    case 'Literal':
      return `\`${String(schema.const)}\``;
    case 'Union':
      return unionType(schema.anyOf as TSchema[]);
    case 'Integer':
    case 'Number':
      return `${schema[Kind] === 'Integer' ? 'integer' : 'number'}${range(schema)}`;
    case 'String':
      return stringType(schema);
    case 'Boolean':
      return 'boolean';
    case 'Array':
      return `list of ${plural(typeOf(schema.items as TSchema))}`;
    case 'Object':
      return 'object';
    case 'Record':
      return 'mapping';
    default:
      return 'any';
  }
}

function unionType(members: TSchema[]): string {
  // U64 (src/orders/config.ts): an integer, or its decimal string beyond 2^53.
  if (members.length === 2 && members[0]?.[Kind] === 'Integer' && members[1]?.[Kind] === 'String' && /\[0-9\]/.test(String(members[1].pattern))) return 'u64';
  return members.map(typeOf).join(' | ');
}

function stringType(schema: TSchema): string {
  if (schema.format === 'ipv4' || String(schema.pattern ?? '').includes('25[0-5]')) return 'IPv4 address';
  if (String(schema.pattern ?? '').includes('(ms|s|m|h|d)')) return 'duration (`500ms`, `5s`, `1m`)';
  return 'string';
}

function plural(type: string): string {
  if (type === 'object') return 'objects';
  if (/^integer|^number|^string/.test(type)) return type.replace(/^(integer|number|string)/, '$1s');
  return type;
}

const n = (v: number) => (Number.isInteger(v) && v >= 10_000 ? v.toLocaleString('en-US') : String(v));

function range(s: TSchema): string {
  const lo = (s.minimum ?? s.exclusiveMinimum) as number | undefined;
  const hi = (s.maximum ?? s.exclusiveMaximum) as number | undefined;
  const step = s.multipleOf === undefined ? '' : `, a multiple of ${n(s.multipleOf as number)}`;
  if (lo !== undefined && hi !== undefined) {
    const open = s.exclusiveMinimum !== undefined ? '(' : '';
    const close = s.exclusiveMaximum !== undefined ? ')' : '';
    return open || close ? ` ${open || '['}${n(lo)}, ${n(hi)}${close || ']'}${step}` : ` ${n(lo)}–${n(hi)}${step}`;
  }
  if (lo !== undefined) return ` ${s.exclusiveMinimum !== undefined ? '>' : '≥'} ${n(lo)}${step}`;
  return step;
}

/** The default: the loaded embedded default's value (a list without what its items' own defaults say). */
function defaultOf(schema: TSchema, key: string, value: unknown, inItem: boolean): string {
  if (value === REQUIRED) return 'required';
  if (value === undefined) return inItem ? '—' : 'unset';
  if (schema[Kind] === 'Array' && Array.isArray(value) && (schema.items as TSchema)[Kind] === 'Object') {
    value = value.map((v) => withoutDefaults(schema.items as TSchema, v));
  }
  const text = `\`${YAML.stringify(value, { collectionStyle: 'flow', flowCollectionPadding: false, lineWidth: 0 }).trim()}\``;
  if (typeof value === 'number' && /bytes$/i.test(key) && value >= 1024) return `${text} (${formatBytes(value).replace('.0 ', ' ')})`;
  return text;
}

/** An item with the fields equal to their schema default left out (the field rows show those). */
function withoutDefaults(schema: TSchema, item: unknown): unknown {
  if (schema[Kind] !== 'Object' || typeof item !== 'object' || item === null) return item;
  const props = schema.properties as Props;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) {
    const sub = props[k];
    const given = sub?.[Kind] === 'Object' ? withoutDefaults(sub, v) : v;
    const empty = typeof given === 'object' && given !== null && !Array.isArray(given) && Object.keys(given).length === 0;
    if (sub && (empty || JSON.stringify(given) === JSON.stringify(sub.default))) continue;
    out[k] = given;
  }
  return out;
}
