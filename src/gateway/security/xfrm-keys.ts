// security.ipsec.mode 'keys': the gateway installs the ESP states and
// policies for its configured peers. The keys go to `ip -batch -` on stdin,
// never on a command line (/proc/<pid>/cmdline is world-readable), and come
// from files that only their owner may read.
import { execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import type { IpsecPeerConfig, IpsecLink } from './config.js';

/** The one AEAD: AES-GCM with a 4-byte salt after the key (RFC 4106), a 128-bit ICV. */
export const ESP_AEAD = 'rfc4106(gcm(aes))';
export const ESP_ICV_BITS = 128;

/** A security.ipsec file or xfrm install that cannot work: one line, exit 2. */
export class SecurityConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecurityConfigError';
  }
}

/** The key and salt of a key file, as hex without 0x; checks its mode first. */
export function readEspKey(key: string, path: string): string {
  let mode: number;
  let text: string;
  try {
    mode = statSync(path).mode;
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SecurityConfigError(`${key}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if ((mode & 0o077) !== 0) {
    throw new SecurityConfigError(`${key}: ${path} has mode 0${(mode & 0o777).toString(8)}: others may read the key; expected 0600 (chmod 600 ${path})`);
  }
  const hex = text.trim().replace(/^0x/i, '');
  if (!/^[0-9a-fA-F]*$/.test(hex) || (hex.length !== 40 && hex.length !== 72)) {
    throw new SecurityConfigError(
      `${key}: ${path}: expected the ${ESP_AEAD} key and salt in hex, 40 digits (AES-128) or 72 (AES-256), got ${/^[0-9a-fA-F]*$/.test(hex) ? `${hex.length} digits` : 'a non-hex character'}`,
    );
  }
  return hex.toLowerCase();
}

export interface InstalledSa {
  src: string;
  dst: string;
  spi: number;
  dir: 'out' | 'in';
  /** AES key length in bits (the salt excluded). */
  keyBits: number;
}

interface SaLine extends InstalledSa {
  hex: string;
}

/** The SAs of the configured peers, each from this gateway's address on the peer's link, keys read (and checked) from their files. */
export function readPeerSas(localOf: (link: IpsecLink | undefined) => string, peers: readonly IpsecPeerConfig[]): SaLine[] {
  return peers.flatMap((p, i) => {
    const self = localOf(p.link);
    const sas: SaLine[] = [];
    for (const dir of ['out', 'in'] as const) {
      const sa = p[dir];
      if (sa === undefined) continue;
      const hex = readEspKey(`security.ipsec.peers.${i}.${dir}.keyFile`, sa.keyFile);
      const [src, dst] = dir === 'out' ? [self, p.address] : [p.address, self];
      sas.push({ src, dst, spi: sa.spi, dir, keyBits: (hex.length - 8) * 4, hex });
    }
    return sas;
  });
}

/** An SPI as `ip xfrm` writes it: 0x and 8 hex digits. */
export const spiHex = (spi: number): string => `0x${spi.toString(16).padStart(8, '0')}`;

/** `ip -batch` lines that remove what installLines adds (each may be absent: run with -force). */
export function removeLines(sas: readonly InstalledSa[]): string[] {
  return sas.flatMap((s) => [
    `xfrm state delete src ${s.src} dst ${s.dst} proto esp spi ${spiHex(s.spi)}`,
    `xfrm policy delete src ${s.src}/32 dst ${s.dst}/32 proto udp dir ${s.dir}`,
  ]);
}

/**
 * One state and one policy per SA. The selector is all of UDP between the two
 * addresses, not dport 4791: rxe's route lookup has no ports (xfrm-policy.ts).
 */
export function installLines(sas: readonly SaLine[]): string[] {
  return sas.flatMap((s) => [
    `xfrm state add src ${s.src} dst ${s.dst} proto esp spi ${spiHex(s.spi)} mode transport aead ${ESP_AEAD} 0x${s.hex} ${ESP_ICV_BITS}`,
    `xfrm policy update src ${s.src}/32 dst ${s.dst}/32 proto udp dir ${s.dir} tmpl src ${s.src} dst ${s.dst} proto esp mode transport`,
  ]);
}

/** Runs `ip [-force] -batch -` with the lines on stdin; resolves with ip's stderr, rejects with it. */
export function ipBatch(lines: readonly string[], force: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile('ip', [...(force ? ['-force'] : []), '-batch', '-'], { timeout: 10_000 }, (err, _stdout, stderr) => {
      if (err) reject(new Error(stderr.trim().split('\n')[0] || err.message));
      else resolve();
    });
    child.stdin?.end(lines.join('\n') + '\n');
  });
}

/** Replaces any earlier states and policies of these SAs with the configured ones. */
export async function installSas(sas: readonly SaLine[]): Promise<void> {
  await ipBatch(removeLines(sas), true).catch(() => undefined);
  try {
    await ipBatch(installLines(sas), false);
  } catch (err) {
    await ipBatch(removeLines(sas), true).catch(() => undefined);
    throw new SecurityConfigError(`security.ipsec: installing the ESP states and policies failed: ${(err as Error).message} (needs root or CAP_NET_ADMIN, and the esp4 and xfrm_user modules)`);
  }
}
