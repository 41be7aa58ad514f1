// Reads the kernel's xfrm policies (`ip xfrm policy`: iproute2 has no JSON
// output for xfrm) and answers whether ESP covers RoCEv2 (UDP 4791) between
// this gateway and a peer. The fixture test/fixtures/xfrm/policy.txt is real
// output captured in the rdma-vm guest.
import { BlockList, isIPv4 } from 'node:net';

export const ROCE_PORT = 4791;

export interface XfrmTemplate {
  proto: string;
  mode: string;
  src?: string;
  dst?: string;
  /** `level use`: the SA is optional, so the policy does not require ESP. */
  optional: boolean;
}

export interface XfrmPolicy {
  src: string;
  dst: string;
  /** 'any' when the selector names no protocol. */
  proto: string;
  sport: number;
  dport: number;
  dir: string;
  priority: number;
  action: 'allow' | 'block';
  tmpls: XfrmTemplate[];
}

const word = (line: string, key: string): string | undefined => {
  const m = new RegExp(`(?:^|\\s)${key} (\\S+)`).exec(line);
  return m?.[1];
};

function parseSelector(line: string): Pick<XfrmPolicy, 'src' | 'dst' | 'proto' | 'sport' | 'dport'> {
  return {
    src: word(line, 'src') ?? '0.0.0.0/0',
    dst: word(line, 'dst') ?? '0.0.0.0/0',
    proto: word(line, 'proto') ?? 'any',
    sport: Number(word(line, 'sport') ?? 0),
    dport: Number(word(line, 'dport') ?? 0),
  };
}

/** The policies of `ip xfrm policy` text output, in its order. */
export function parseXfrmPolicies(text: string): XfrmPolicy[] {
  const policies: XfrmPolicy[] = [];
  let cur: XfrmPolicy | undefined;
  let tmpl: XfrmTemplate | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (!/^\s/.test(raw) && line.startsWith('src ')) {
      cur = { ...parseSelector(line), dir: '', priority: 0, action: 'allow', tmpls: [] };
      tmpl = undefined;
      policies.push(cur);
      continue;
    }
    if (cur === undefined) continue;
    if (/^(dir|socket) /.test(line)) {
      cur.dir = line.startsWith('socket ') ? `socket ${word(line, 'socket')}` : (word(line, 'dir') ?? '');
      cur.priority = Number(word(line, 'priority') ?? 0);
      if (word(line, 'action') === 'block') cur.action = 'block';
    } else if (line.startsWith('tmpl ')) {
      tmpl = { proto: '', mode: 'transport', optional: false, ...addresses(line) };
      cur.tmpls.push(tmpl);
    } else if (tmpl !== undefined && line.startsWith('proto ')) {
      tmpl.proto = word(line, 'proto') ?? '';
      tmpl.mode = word(line, 'mode') ?? 'transport';
    } else if (tmpl !== undefined && line.startsWith('level ')) {
      tmpl.optional = word(line, 'level') === 'use';
    } else if (word(line, 'action') === 'block') {
      cur.action = 'block';
    }
  }
  return policies;
}

function addresses(line: string): { src?: string; dst?: string } {
  const src = word(line, 'src');
  const dst = word(line, 'dst');
  return { ...(src ? { src } : {}), ...(dst ? { dst } : {}) };
}

function inPrefix(prefix: string, address: string): boolean {
  const [net, bits] = prefix.split('/');
  if (net === undefined || !isIPv4(net)) return false;
  const list = new BlockList();
  list.addSubnet(net, bits === undefined ? 32 : Number(bits), 'ipv4');
  return list.check(address, 'ipv4');
}

/** The traffic a policy must cover: RoCEv2 from `src` to `dst`, with or without ports in the flow. */
export interface RoceFlow {
  src: string;
  dst: string;
  dir: 'out' | 'in';
  /**
   * False for rxe (backend ibv): its route lookup (rxe_find_route4) carries the
   * protocol but no ports, so a selector naming dport 4791 never matches it and
   * its packets leave in the clear (seen in the guest: docs/protocol.md).
   */
  flowHasPorts: boolean;
}

function matches(p: XfrmPolicy, f: RoceFlow): boolean {
  if (p.dir !== f.dir || !inPrefix(p.src, f.src) || !inPrefix(p.dst, f.dst)) return false;
  if (p.proto !== 'any' && p.proto !== 'udp' && p.proto !== '17') return false;
  if (p.sport !== 0) return false;
  return p.dport === 0 || (f.flowHasPorts && p.dport === ROCE_PORT);
}

export interface Coverage {
  covered: boolean;
  /** The policy that decides the flow (lowest priority value first), when there is one. */
  policy?: XfrmPolicy;
  /** Why not, for the refusal message. */
  reason?: string;
}

/** Whether the policies require ESP for the flow: the deciding policy allows and requires an ESP transport SA. */
export function coverage(policies: readonly XfrmPolicy[], f: RoceFlow): Coverage {
  const deciding = policies.filter((p) => matches(p, f)).sort((a, b) => a.priority - b.priority)[0];
  const what = `${f.dir === 'out' ? 'to' : 'from'} ${f.dir === 'out' ? f.dst : f.src}`;
  if (deciding === undefined) {
    const portOnly = policies.some((p) => p.dport === ROCE_PORT && matches({ ...p, dport: 0 }, f));
    return {
      covered: false,
      reason: portOnly
        ? `the xfrm policy ${what} names dport ${ROCE_PORT}, which rxe's route lookup never carries: use a selector without ports (proto udp)`
        : `no xfrm policy (dir ${f.dir}) covers UDP ${ROCE_PORT} ${what}`,
    };
  }
  if (deciding.action === 'block') return { covered: false, policy: deciding, reason: `the xfrm policy ${what} (${deciding.src} -> ${deciding.dst}) blocks it` };
  const esp = deciding.tmpls.find((t) => t.proto === 'esp' && t.mode === 'transport' && !t.optional);
  if (esp === undefined) {
    return { covered: false, policy: deciding, reason: `the xfrm policy ${what} (${deciding.src} -> ${deciding.dst}) requires no ESP transport SA` };
  }
  return { covered: true, policy: deciding };
}
