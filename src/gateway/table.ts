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

/** Columns padded to their widest cell, two spaces apart; a column of numbers only is right-aligned. */
export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number'));
  const t = new Table({
    head: headers,
    chars: NO_BORDER,
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
    colAligns: numeric.map((n) => (n ? 'right' : 'left')),
  });
  t.push(...rows.map((r) => r.map(String)));
  return t.toString().split('\n').map((l) => l.trimEnd()).join('\n');
}
