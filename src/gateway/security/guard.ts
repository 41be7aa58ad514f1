// The gateway's encryption guard: installs the ESP SAs (mode 'keys') at start,
// and before an RC session opens or the feed publishes, checks that the
// kernel's xfrm policies cover the peer (both modes: the kernel, not the
// config, says what is protected). With security.requireEncryption an
// uncovered peer is refused: counted by reason, nothing sent.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Counter, type Registry } from 'prom-client';
import { ALTERNATE_ON_ONE_LINK, type SecurityConfig } from './config.js';
import type { FeedsConfig } from '../../feed/config.js';
import { coverage, parseXfrmPolicies, type RoceFlow, type XfrmPolicy } from './xfrm-policy.js';
import { readXfrmStates, type XfrmStateStats } from './xfrm-state.js';
import { ESP_AEAD, installSas, ipBatch, readPeerSas, removeLines, SecurityConfigError, spiHex, type InstalledSa } from './xfrm-keys.js';

export type RefusalReason = 'no_policy' | 'policy_unreadable' | 'not_ipv4' | 'esp_auth_failed';

export interface Refusal {
  reason: RefusalReason;
  message: string;
}

/** One of the gateway's links: its primary address, or its second one (issue 17's alternate path or device). */
export type Link = 'primary' | 'alternate';

/**
 * The address this gateway sends from on each link: primary is backend.address
 * (or the ibv GID's); alternate is backend.alternateAddress (soft) or
 * backend.alternateDevice's GID (ibv), where the gateway has a second link.
 */
export interface LocalAddresses {
  primary: string;
  alternate?: string;
}

export interface PeerProtection {
  address: string;
  /** The gateway's own address the flows were checked from (LocalAddresses). */
  local: string;
  link: Link;
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

/**
 * `read` with callers that arrive while a read is under way sharing its
 * answer: a burst of handshakes costs one `ip` exec, not one each, and a
 * client that opens sessions as fast as it may cannot make the gateway fork
 * for every one.
 */
export function coalesced<T>(read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => (pending ??= read().finally(() => (pending = undefined)));
}

export class EncryptionGuard {
  private readonly peers = new Map<string, PeerProtection>();
  private readonly refusals = new Map<RefusalReason, number>();
  /** Per (local, peer): the failed ICV checks of the peer's SA to us when its last session was let through. */
  private readonly authMarks = new Map<string, number>();

  private constructor(
    readonly config: SecurityConfig,
    readonly local: LocalAddresses,
    /** False on ibv (rxe): its flows carry no ports (xfrm-policy.ts). */
    private readonly flowHasPorts: boolean,
    private readonly installed: InstalledSa[],
    private readonly policies: () => Promise<XfrmPolicy[]>,
    private readonly states: () => Promise<XfrmStateStats[]>,
  ) {}

  /** Reads the key files and installs the SAs (mode 'keys'); throws SecurityConfigError (exit 2). */
  static async start(config: SecurityConfig, local: LocalAddresses, backend: 'soft' | 'ibv', policies = readPolicies, states = readXfrmStates): Promise<EncryptionGuard> {
    const ipsec = config.ipsec;
    const sas = ipsec?.mode === 'keys' ? readPeerSas((link) => localOf(local, link, 'security.ipsec.peers'), ipsec.peers) : [];
    if (sas.length > 0) await installSas(sas);
    const installed = sas.map(({ hex: _hex, ...sa }) => sa);
    const guard = new EncryptionGuard(config, local, backend === 'soft', installed, coalesced(policies), coalesced(states));
    if (ipsec !== undefined) for (const p of ipsec.peers) await guard.check(p.address, p.link).catch(() => undefined);
    return guard;
  }

  /** Whether this gateway has the link: a check on an alternate link it lacks has no flow to check. */
  has(link: Link): boolean {
    return link === 'primary' || this.local.alternate !== undefined;
  }

  /**
   * A refusal when requireEncryption is set and no ESP policy covers the peer
   * from this gateway's address on the link, else undefined. Counts refusals.
   */
  async refusal(peer: string, what: string, link: Link = 'primary'): Promise<Refusal | undefined> {
    if (!this.config.requireEncryption) return undefined;
    const r = await this.check(peer, link).then(
      (p): Refusal | undefined => (p.covered ? undefined : { reason: 'no_policy', message: `${what}: refused, ${p.reason}; nothing was sent. ${this.fix(p)}` }),
      (err: Error): Refusal => ({ reason: 'policy_unreadable', message: `${what}: refused, the xfrm policies could not be read (ip xfrm policy: ${err.message}); nothing was sent` }),
    );
    if (r) this.count(r.reason);
    return r;
  }

  /**
   * refusal() for an RC session's GID (a GID that is no IPv4 address cannot be
   * matched to a policy), then, with security.ipsec, authRefusal().
   */
  async sessionRefusal(gid: string, what: string, link: Link = 'primary'): Promise<Refusal | undefined> {
    const peer = gidIpv4(gid);
    if (peer !== undefined) {
      const from = `${what} from ${peer}`;
      return (await this.refusal(peer, from, link)) ?? (this.config.ipsec !== undefined ? await this.authRefusal(peer, from, link) : undefined);
    }
    if (!this.config.requireEncryption) return undefined;
    this.count('not_ipv4');
    return { reason: 'not_ipv4', message: `${what}: refused, GID ${gid} is no IPv4-mapped address and security.requireEncryption covers RoCEv2 over IPv4 only` };
  }

  /**
   * A peer with another key: its SA to us failed ICV checks since its last
   * session was let through, and not one of its packets ever authenticated.
   * The kernel drops such packets unseen, so without this the session only
   * times out (IBV_WC_RETRY_EXC_ERR). Every other attempt is let through, so
   * a peer that fixed its key proves it on the next one.
   */
  private async authRefusal(peer: string, what: string, link: Link): Promise<Refusal | undefined> {
    const local = localOf(this.local, link, 'an alternate-link check');
    // Several SAs from the peer (a rekey under way): any that ever authenticated means a key that works.
    const sas = (await this.states().catch(() => [])).filter((s) => s.src === peer && s.dst === local);
    const key = `${local} ${peer}`;
    const mark = this.authMarks.get(key);
    const failed = sas.reduce((n, s) => n + s.failed, 0);
    this.authMarks.set(key, failed);
    const neverPassed = sas.length > 0 && sas.every((s) => s.packets === 0);
    if (!neverPassed || mark === undefined || failed <= mark) return undefined;
    this.count('esp_auth_failed');
    const spis = sas.filter((s) => s.failed > 0).map((s) => spiHex(s.spi)).join(', ');
    return {
      reason: 'esp_auth_failed',
      message: `${what}: refused, ESP from ${peer} fails authentication at this gateway (${failed - mark} packets to SA ${spis} since its last session, none ever authenticated): the peer's key for that SA is not ours; nothing was sent. Give both ends the same key`,
    };
  }

  private count(reason: RefusalReason): void {
    this.refusals.set(reason, (this.refusals.get(reason) ?? 0) + 1);
  }

  private fix(p: PeerProtection): string {
    const onLink = p.link === 'alternate' ? `, link 'alternate'` : '';
    return this.config.ipsec?.mode === 'keys'
      ? `Add ${p.address} to security.ipsec.peers (with its SPIs and key files${onLink}) and restart`
      : `Install an ESP transport policy for UDP between ${p.local} and ${p.address} (ip xfrm policy, or your IKE daemon)`;
  }

  /**
   * Whether out (and, for a unicast peer, in) policies require ESP for RoCEv2
   * between the peer and this gateway's address on the link; remembered for report().
   */
  async check(peer: string, link: Link = 'primary'): Promise<PeerProtection> {
    const local = localOf(this.local, link, 'an alternate-link check');
    const policies = await this.policies();
    const flows: RoceFlow[] = [{ src: local, dst: peer, dir: 'out', flowHasPorts: this.flowHasPorts }];
    if (!isMulticast(peer)) flows.push({ src: peer, dst: local, dir: 'in', flowHasPorts: this.flowHasPorts });
    const missing = flows.map((f) => coverage(policies, f)).find((c) => !c.covered);
    const p: PeerProtection = { address: peer, local, link, covered: missing === undefined, ...(missing?.reason ? { reason: missing.reason } : {}) };
    this.peers.set(`${local} ${peer}`, p);
    return p;
  }

  report(): SecurityReport {
    const ipsec = this.config.ipsec;
    return {
      requireEncryption: this.config.requireEncryption,
      mode: ipsec?.mode ?? 'none',
      ...(ipsec ? { algorithm: `esp ${ESP_AEAD} transport` } : {}),
      sas: this.installed.map((s) => ({ ...s, spiHex: spiHex(s.spi) })),
      peers: [...this.peers.values()],
    };
  }

  /** qpgate_security_refusals_total{reason} and the kernel's ESP errors (/proc/net/xfrm_stat). */
  metrics(registry: Registry): void {
    const refusals = this.refusals;
    new Counter({
      name: 'qpgate_security_refusals_total',
      help: 'Sessions and feed groups refused: no ESP policy covers their peer (security.requireEncryption), or its ESP fails authentication here (esp_auth_failed), by reason.',
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

/** The gateway's address on a link; throws SecurityConfigError (exit 2) for an alternate link the gateway does not have. */
function localOf(local: LocalAddresses, link: Link | undefined, what: string): string {
  if (link !== 'alternate') return local.primary;
  if (local.alternate === undefined) {
    throw new SecurityConfigError(`${what}: link ${ALTERNATE_ON_ONE_LINK}`);
  }
  return local.alternate;
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

/**
 * security.requireEncryption and a feed group no ESP policy covers: exit 2
 * before the feed sends its first frame. Line B leaves from the alternate
 * link where the gateway has one (publisher.ts), so groupB is checked there.
 */
export async function refuseUnprotectedFeedGroups(guard: EncryptionGuard, feeds: FeedsConfig): Promise<void> {
  if (!feeds.enabled) return;
  const lineB: Link = guard.has('alternate') ? 'alternate' : 'primary';
  for (const c of feeds.channels) {
    for (const [group, link] of [[c.groupA, 'primary'], [c.groupB, lineB]] as const) {
      if (group === undefined) continue;
      const r = await guard.refusal(group, `feed channel ${c.id} group ${group}`, link);
      if (r !== undefined) throw new SecurityConfigError(r.message);
    }
  }
}
