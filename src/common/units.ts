// Durations for people: the unit that keeps the number between 1 and 1000
// (ns → µs → ms → s), three significant digits, as `ping` and `perf` print them.
const UNITS: Array<[number, string]> = [
  [1e9, 's'],
  [1e6, 'ms'],
  [1e3, 'µs'],
  [1, 'ns'],
];

/** A nanosecond count as "8.7 µs", "3.2 ms", "1.50 s"; '-' for none. */
export function formatNs(ns: number | null | undefined): string {
  if (ns === null || ns === undefined || !Number.isFinite(ns)) return '-';
  const [scale, unit] = UNITS.find(([s]) => Math.abs(ns) >= s) ?? UNITS[UNITS.length - 1]!;
  const v = ns / scale;
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${unit}`;
}
