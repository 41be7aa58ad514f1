// The CLI's tables (`qpgate qps`, `sessions`, `risk`, `config`) and the
// benches': columns aligned as `rdma res show qp` and `ibv_devinfo` print them,
// no borders, numbers right-aligned. cli-table3 lays them out; its border
// characters are blanked and the trailing padding trimmed.
import Table from 'cli-table3';

const NO_BORDER = {
  top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
  bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
  left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '',
  middle: '  ',
};

export interface TableOptions {
  /** Per column: cells wider than this wrap onto further lines (a long JSON value), instead of widening the column. */
  maxWidths?: Array<number | undefined>;
}

/** Columns padded to their widest cell, two spaces apart; a column of numbers only is right-aligned. */
export function table(headers: string[], rows: Array<Array<string | number>>, options: TableOptions = {}): string {
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number'));
  const cells = rows.map((r) => r.map(String));
  const widest = (i: number) => Math.max(headers[i]!.length, ...cells.map((r) => r[i]?.length ?? 0));
  const capped = options.maxWidths !== undefined;
  const t = new Table({
    head: headers,
    chars: NO_BORDER,
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
    colAligns: numeric.map((n) => (n ? 'right' : 'left')),
    ...(capped ? { colWidths: headers.map((_, i) => Math.min(widest(i), options.maxWidths![i] ?? Infinity)), wordWrap: true, wrapOnWordBoundary: false } : {}),
  });
  t.push(...cells);
  return t.toString().split('\n').map((l) => l.trimEnd()).join('\n');
}
