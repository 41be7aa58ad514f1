// Durations in config: "500ms", "10s", "1m", "10m", "1h", "1d". The schema's
// pattern admits these forms only; `ms` converts them.
import ms from 'ms';

export const DURATION_PATTERN = '^[0-9]+(\\.[0-9]+)?(ms|s|m|h|d)$';
const DURATION = new RegExp(DURATION_PATTERN);

export function parseDurationMs(text: string): number {
  const value = DURATION.test(text) ? ms(text as ms.StringValue) : undefined;
  if (value === undefined || !Number.isFinite(value)) throw new TypeError(`expected a duration like "10s", "1m", "10m", got ${JSON.stringify(text)}`);
  return value;
}
