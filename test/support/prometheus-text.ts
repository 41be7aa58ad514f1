// A small strict parser of the Prometheus text exposition format (0.0.4):
// every line is a comment (# HELP / # TYPE / other), blank, or a sample
// `name{label="value",...} value [timestamp]`. Anything else throws, as do
// a TYPE after samples of its family, duplicate series, bad escapes, and
// histograms whose buckets are not cumulative or lack le="+Inf" = _count.
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*/;

function parseValue(s: string, line: number): number {
  // As Prometheus (Go's ParseFloat) reads them: Inf and NaN in any case (prom-client writes "Nan").
  if (/^[+]?inf(inity)?$/i.test(s)) return Infinity;
  if (/^-inf(inity)?$/i.test(s)) return -Infinity;
  if (/^nan$/i.test(s)) return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) throw new Error(`line ${line}: bad value ${JSON.stringify(s)}`);
  return Number(s);
}

function familyOf(sample: string, families: Map<string, Family>): Family | undefined {
  for (const suffix of ['_bucket', '_sum', '_count', '']) {
    if (!sample.endsWith(suffix)) continue;
    const f = families.get(sample.slice(0, sample.length - suffix.length));
    if (f && (suffix === '' || f.type === 'histogram' || f.type === 'summary')) return f;
  }
  return undefined;
}

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  if (text.length > 0 && !text.endsWith('\n')) throw new Error('exposition must end with a newline');
  text.split('\n').forEach((raw, i) => {
    const n = i + 1;
    if (raw === '') return;
    if (raw.startsWith('#')) {
      const m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) ?(.*)$/.exec(raw);
      if (!m) return; // a plain comment
      const [, kind, name, rest] = m as unknown as [string, string, string, string];
      const f = families.get(name) ?? { name, type: 'untyped', help: '', samples: [] };
      if (kind === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`line ${n}: bad type ${rest}`);
        if (f.samples.length > 0) throw new Error(`line ${n}: TYPE for ${name} after its samples`);
        f.type = rest;
      } else {
        f.help = rest;
      }
      families.set(name, f);
      return;
    }
    let rest = raw;
    const nm = NAME.exec(rest);
    if (!nm) throw new Error(`line ${n}: no metric name: ${raw}`);
    const name = nm[0];
    rest = rest.slice(name.length);
    const labels: Record<string, string> = {};
    if (rest.startsWith('{')) {
      rest = rest.slice(1);
      while (!rest.startsWith('}')) {
        const lm = LABEL.exec(rest);
        if (!lm) throw new Error(`line ${n}: bad label name in ${raw}`);
        rest = rest.slice(lm[0].length);
        if (!rest.startsWith('="')) throw new Error(`line ${n}: expected =" after ${lm[0]}`);
        rest = rest.slice(2);
        let value = '';
        for (;;) {
          const ch = rest[0];
          if (ch === undefined) throw new Error(`line ${n}: unterminated label value`);
          rest = rest.slice(1);
          if (ch === '"') break;
          if (ch === '\\') {
            const esc = rest[0];
            rest = rest.slice(1);
            if (esc === 'n') value += '\n';
            else if (esc === '\\' || esc === '"') value += esc;
            else throw new Error(`line ${n}: bad escape \\${esc}`);
          } else value += ch;
        }
        if (lm[0] in labels) throw new Error(`line ${n}: duplicate label ${lm[0]}`);
        labels[lm[0]] = value;
        if (rest.startsWith(',')) rest = rest.slice(1);
        else if (!rest.startsWith('}')) throw new Error(`line ${n}: expected , or } in ${raw}`);
      }
      rest = rest.slice(1);
    }
    const parts = rest.trim().split(/\s+/);
    if (!rest.startsWith(' ') || parts.length < 1 || parts.length > 2) throw new Error(`line ${n}: bad sample ${raw}`);
    const value = parseValue(parts[0]!, n);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(key)) throw new Error(`line ${n}: duplicate series ${raw}`);
    seen.add(key);
    let f = familyOf(name, families);
    if (!f) {
      f = { name, type: 'untyped', help: '', samples: [] };
      families.set(name, f);
    }
    f.samples.push({ name, labels, value });
  });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

function checkHistogram(f: Family): void {
  const groups = new Map<string, Sample[]>();
  for (const s of f.samples) {
    const { le: _le, ...rest } = s.labels;
    const k = JSON.stringify(Object.entries(rest).sort());
    groups.set(k, [...(groups.get(k) ?? []), s]);
  }
  for (const samples of groups.values()) {
    const buckets = samples.filter((s) => s.name === `${f.name}_bucket`);
    let last = -1;
    let lastLe = -Infinity;
    for (const b of buckets) {
      const le = parseValue(b.labels['le'] ?? 'x', 0);
      if (le <= lastLe) throw new Error(`${f.name}: buckets not in increasing le order`);
      if (b.value < last) throw new Error(`${f.name}: bucket le=${b.labels['le']} is not cumulative`);
      last = b.value;
      lastLe = le;
    }
    const inf = buckets.find((b) => b.labels['le'] === '+Inf');
    const count = samples.find((s) => s.name === `${f.name}_count`);
    if (!inf || !count) throw new Error(`${f.name}: needs le="+Inf" and _count`);
    if (inf.value !== count.value) throw new Error(`${f.name}: le="+Inf" ${inf.value} != _count ${count.value}`);
    if (!samples.some((s) => s.name === `${f.name}_sum`)) throw new Error(`${f.name}: no _sum`);
  }
}

/** The value of the one sample of `name` whose labels include `labels`. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
    }
  }
  return undefined;
}
