// The gateway's encryption guard: installs the ESP SAs (mode 'keys') at start,
// and before an RC session opens or the feed publishes, checks that the
// kernel's xfrm policies cover the peer (both modes: the kernel, not the
// config, says what is protected). With security.requireEncryption an
// uncovered peer is refused: counted by reason, nothing sent.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Counter, type Registry } from 'prom-client';
import type { SecurityConfig } from './config.js';
import type { FeedsConfig } from '../../feed/config.js';
import { coverage, parseXfrmPolicies, type RoceFlow, type XfrmPolicy } from './xfrm-policy.js';
import { ESP_AEAD, installSas, ipBatch, readPeerSas, removeLines, SecurityConfigError, type InstalledSa } from './xfrm-keys.js';

export type RefusalReason = 'no_policy' | 'policy_unreadable' | 'not_ipv4';

export interface Refusal {
  reason: RefusalReason;
  message: string;
}

export interface PeerProtection {
  address: string;
  covered: boolean;
  reason?: string;
}

/** What /v1/device and `qpgate status` show. */
export interface SecurityReport {
  requireEncryption: boolean;
  mode: 'keys' | 'verify' | 'none';
  algorithm?: string;
  sas: Array<InstalledSa & { spiHex: string }>;
  /** The peers checked so far (configured ones at start, then each session's), newest check each. */
  peers: PeerProtection[];
}

const readPolicies = (): Promise<XfrmPolicy[]> =>
  new Promise((resolve, reject) => {
    execFile('ip', ['xfrm', 'policy', 'list'], { timeout: 5000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(stderr.trim().split('\n')[0] || err.message));
      else resolve(parseXfrmPolicies(stdout));
    });
  });

const isMulticast = (a: string): boolean => Number(a.split('.')[0]) >= 224 && Number(a.split('.')[0]) <= 239;

/** '::ffff:10.0.0.2' -> '10.0.0.2'; undefined for a GID that is no IPv4-mapped address. */
export function gidIpv4(gid: string): string | undefined {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(gid);
  return m?.[1];
}

export class EncryptionGuard {
  private readonly peers = new Map<string, PeerProtection>();
  private readonly refusals = new Map<RefusalReason, number>();

  private constructor(
    readonly config: SecurityConfig,
    /** The address this gateway sends from (backend.address, or the ibv GID's). */
    readonly self: string,
    /** False on ibv (rxe): its flows carry no ports (xfrm-policy.ts). */
    private readonly flowHasPorts: boolean,
    private readonly installed: InstalledSa[],
    private readonly policies: () => Promise<XfrmPolicy[]>,
  ) {}

  /** Reads the key files and installs the SAs (mode 'keys'); throws SecurityConfigError (exit 2). */
  static async start(config: SecurityConfig, self: string, backend: 'soft' | 'ibv', policies = readPolicies): Promise<EncryptionGuard> {
    const ipsec = config.ipsec;
    const sas = ipsec?.mode === 'keys' ? readPeerSas(self, ipsec.peers) : [];
    if (sas.length > 0) await installSas(sas);
    const installed = sas.map(({ hex: _hex, ...sa }) => sa);
    const guard = new EncryptionGuard(config, self, backend === 'soft', installed, policies);
    if (ipsec !== undefined) for (const p of ipsec.peers) await guard.check(p.address).catch(() => undefined);
    return guard;
  }

  /** A refusal when requireEncryption is set and no ESP policy covers the peer, else undefined. Counts refusals. */
  async refusal(peer: string, what: string): Promise<Refusal | undefined> {
    if (!this.config.requireEncryption) return undefined;
    const r = await this.check(peer).then(
      (p): Refusal | undefined => (p.covered ? undefined : { reason: 'no_policy', message: `${what}: refused, ${p.reason}; nothing was sent. ${this.fix(peer)}` }),
      (err: Error): Refusal => ({ reason: 'policy_unreadable', message: `${what}: refused, the xfrm policies could not be read (ip xfrm policy: ${err.message}); nothing was sent` }),
    );
    if (r) this.refusals.set(r.reason, (this.refusals.get(r.reason) ?? 0) + 1);
    return r;
  }

  /** refusal() for an RC session's GID: a GID that is no IPv4 address cannot be matched to a policy. */
  async sessionRefusal(gid: string, what: string): Promise<Refusal | undefined> {
    if (!this.config.requireEncryption) return undefined;
    const peer = gidIpv4(gid);
    if (peer !== undefined) return this.refusal(peer, `${what} from ${peer}`);
    this.refusals.set('not_ipv4', (this.refusals.get('not_ipv4') ?? 0) + 1);
    return { reason: 'not_ipv4', message: `${what}: refused, GID ${gid} is no IPv4-mapped address and security.requireEncryption covers RoCEv2 over IPv4 only` };
  }

  private fix(peer: string): string {
    return this.config.ipsec?.mode === 'keys'
      ? `Add ${peer} to security.ipsec.peers (with its SPIs and key files) and restart`
      : `Install an ESP transport policy for UDP between ${this.self} and ${peer} (ip xfrm policy, or your IKE daemon)`;
  }

  /** Whether out (and, for a unicast peer, in) policies require ESP for RoCEv2 with the peer; remembered for report(). */
  async check(peer: string): Promise<PeerProtection> {
    const policies = await this.policies();
    const flows: RoceFlow[] = [{ src: this.self, dst: peer, dir: 'out', flowHasPorts: this.flowHasPorts }];
    if (!isMulticast(peer)) flows.push({ src: peer, dst: this.self, dir: 'in', flowHasPorts: this.flowHasPorts });
    const missing = flows.map((f) => coverage(policies, f)).find((c) => !c.covered);
    const p: PeerProtection = { address: peer, covered: missing === undefined, ...(missing?.reason ? { reason: missing.reason } : {}) };
    this.peers.set(peer, p);
    return p;
  }

  report(): SecurityReport {
    const ipsec = this.config.ipsec;
    return {
      requireEncryption: this.config.requireEncryption,
      mode: ipsec?.mode ?? 'none',
      ...(ipsec ? { algorithm: `esp ${ESP_AEAD} transport` } : {}),
      sas: this.installed.map((s) => ({ ...s, spiHex: `0x${s.spi.toString(16).padStart(8, '0')}` })),
      peers: [...this.peers.values()],
    };
  }

  /** qpgate_security_refusals_total{reason} and the kernel's ESP errors (/proc/net/xfrm_stat). */
  metrics(registry: Registry): void {
    const refusals = this.refusals;
    new Counter({
      name: 'qpgate_security_refusals_total',
      help: 'Sessions and feed groups refused because no ESP policy covers their peer (security.requireEncryption), by reason.',
      labelNames: ['reason'],
      registers: [registry],
      collect() {
        for (const [reason, n] of refusals) this.inc({ reason }, n);
      },
    });
    new Counter({
      name: 'qpgate_security_xfrm_errors_total',
      help: "The kernel's xfrm error counters that are not zero (/proc/net/xfrm_stat): XfrmInStateProtoError is an ESP packet that failed authentication, e.g. a peer with another key.",
      labelNames: ['error'],
      registers: [registry],
      collect() {
        for (const [error, n] of xfrmStats()) if (n > 0) this.inc({ error }, n);
      },
    });
  }

  /** Removes the SAs and policies installed at start (the next start installs them again). */
  async close(): Promise<void> {
    if (this.installed.length > 0) await ipBatch(removeLines(this.installed), true).catch(() => undefined);
  }
}

/** /proc/net/xfrm_stat as (name, count); empty where the kernel has no xfrm. */
export function xfrmStats(path = '/proc/net/xfrm_stat'): Array<[string, number]> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f): f is [string, string] => f.length === 2 && /^\d+$/.test(f[1]!))
    .map(([k, v]) => [k, Number(v)]);
}

/** security.requireEncryption and a feed group no ESP policy covers: exit 2 before the feed sends its first frame. */
export async function refuseUnprotectedFeedGroups(guard: EncryptionGuard, feeds: FeedsConfig): Promise<void> {
  if (!feeds.enabled) return;
  for (const c of feeds.channels) {
    for (const group of [c.groupA, c.groupB]) {
      if (group === undefined) continue;
      const r = await guard.refusal(group, `feed channel ${c.id} group ${group}`);
      if (r !== undefined) throw new SecurityConfigError(r.message);
    }
  }
}
