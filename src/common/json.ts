// JSON for values with u64 fields: bigints and protobufjs Longs (decoded
// int64/uint64 fields) as decimal strings (JSON has no 64-bit integers), for
// the control plane's answers and the CLI's --json lines.
import protobuf from 'protobufjs/minimal.js';

const Long = protobuf.util.Long as unknown as { isLong(v: unknown): boolean };

/** `v` with every bigint and Long made a decimal string and every Date an ISO string. */
export function jsonSafe(v: unknown): unknown {
  if (typeof v === 'bigint' || Long.isLong(v)) return String(v);
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (v !== null && typeof v === 'object') {
    if (v instanceof Date) return v.toISOString();
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = jsonSafe(x);
    return out;
  }
  return v;
}

/** One JSON line (no newline) of `v`, bigints as decimal strings. */
export function jsonLine(v: unknown): string {
  return JSON.stringify(jsonSafe(v));
}
