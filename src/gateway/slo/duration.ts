// Durations in config: "500ms", "10s", "1m", "10m", "1h", "1d".
export const DURATION_PATTERN = '^[0-9]+(\\.[0-9]+)?(ms|s|m|h|d)$';
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export function parseDurationMs(text: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)$/.exec(text);
  if (!m) throw new TypeError(`expected a duration like "10s", "1m", "10m", got ${JSON.stringify(text)}`);
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}
