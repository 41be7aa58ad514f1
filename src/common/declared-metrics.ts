// Prometheus families made from a declared list of native counters
// (src/declared/, generated from the .def files of native/src): each family
// is set on scrape from the counters the declaration says feed it, one series
// per instance (a feed, a channel) and, for a labelled family, per counter.
import { Counter, Gauge, type Registry } from 'prom-client';

/** One F() entry of a .def with the counters (JS names) that feed it. */
export interface DeclaredFamily {
  readonly name: string;
  readonly type: string;
  readonly labelName: string;
  readonly help: string;
  readonly counters: ReadonlyArray<{ readonly counter: string; readonly label: string }>;
}

/** The instances a scrape reads: their labels and their counters' values by JS name. */
export type DeclaredInstances = () => Iterable<readonly [Record<string, string>, object]>;

export function registerDeclaredFamilies(registry: Registry, families: readonly DeclaredFamily[], instanceLabels: readonly string[], instances: DeclaredInstances): void {
  for (const family of families) {
    const { name, help, labelName } = family;
    const labelNames = labelName === '' ? [...instanceLabels] : [...instanceLabels, labelName];
    const fill = (put: (labels: Record<string, string>, v: number) => void): void => {
      for (const [labels, values] of instances()) {
        for (const { counter, label } of family.counters) {
          put(labelName === '' ? labels : { ...labels, [labelName]: label }, Number((values as Record<string, unknown>)[counter]));
        }
      }
    };
    const config = { name, help, labelNames, registers: [registry] };
    if (family.type === 'counter') {
      new Counter({ ...config, collect() { this.reset(); fill((l, v) => this.inc(l, v)); } });
    } else {
      new Gauge({ ...config, collect() { this.reset(); fill((l, v) => this.set(l, v)); } });
    }
  }
}
