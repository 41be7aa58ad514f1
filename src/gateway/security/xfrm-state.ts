// Reads the kernel's ESP states with their counters (`ip -s xfrm state`:
// iproute2 has no JSON output for xfrm). A state whose ICV checks fail while
// none of its packets ever authenticated is a peer that encrypts to us with
// another key: the kernel drops its packets before any socket sees them, so
// this is the only place the gateway can learn why a session gets nowhere.
// The fixture test/fixtures/xfrm/state-stats.txt is real output captured in
// the rdma-vm guest.
import { execFile } from 'node:child_process';

export interface XfrmStateStats {
  src: string;
  dst: string;
  spi: number;
  /** Packets that passed (lifetime current): counted only after the ICV checked. */
  packets: number;
  /** Packets whose ICV check failed (stats: failed, the kernel's integrity_failed). */
  failed: number;
}

/** The ESP states of `ip -s xfrm state` text output, in its order. */
export function parseXfrmStates(text: string): XfrmStateStats[] {
  const states: XfrmStateStats[] = [];
  let cur: XfrmStateStats | undefined;
  let inLifetimeCurrent = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const head = /^src (\S+) dst (\S+)$/.exec(line);
    if (head !== null && !/^\s/.test(raw)) {
      cur = { src: head[1]!, dst: head[2]!, spi: -1, packets: 0, failed: 0 };
      states.push(cur);
      inLifetimeCurrent = false;
      continue;
    }
    if (cur === undefined) continue;
    const spi = /^proto esp spi (0x[0-9a-f]+)/.exec(line);
    if (spi !== null) cur.spi = Number(spi[1]);
    if (line === 'lifetime current:') inLifetimeCurrent = true;
    const used = inLifetimeCurrent ? /^(\d+)\(bytes\), (\d+)\(packets\)$/.exec(line) : null;
    if (used !== null) {
      cur.packets = Number(used[2]);
      inLifetimeCurrent = false;
    }
    const failed = /^replay-window \d+ replay \d+ failed (\d+)$/.exec(line);
    if (failed !== null) cur.failed = Number(failed[1]);
  }
  return states.filter((s) => s.spi >= 0);
}

export const readXfrmStates = (): Promise<XfrmStateStats[]> =>
  new Promise((resolve, reject) => {
    execFile('ip', ['-s', 'xfrm', 'state', 'list'], { timeout: 5000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(stderr.trim().split('\n')[0] || err.message));
      else resolve(parseXfrmStates(stdout));
    });
  });
