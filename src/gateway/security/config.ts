// security: encryption of the RoCEv2 traffic itself (issue 17 item 2). qpgate
// does not encrypt: the kernel's xfrm does, with IPsec ESP in transport mode,
// so the wire stays RoCEv2 inside ESP and rxe (whose packets go through the
// kernel's IP stack) and the soft backend (a UDP socket) are covered alike.
// Two ways: 'keys' (the gateway installs the ESP states and policies for its
// configured peers, keys from 0600 files) or 'verify' (someone else, e.g.
// strongSwan, installs them; the gateway checks that a policy covers each peer).
import { Type, type Static } from '@sinclair/typebox';

const strict = { additionalProperties: false } as const;
const IPV4 = '^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])$';

export const EspSaConfig = Type.Object(
  {
    spi: Type.Integer({ minimum: 256, maximum: 0xffff_ffff, description: 'the SA\'s SPI: an integer 256..4294967295 (0..255 are reserved, RFC 4303)' }),
    keyFile: Type.String({
      minLength: 1,
      description: 'file (mode 0600) holding the rfc4106(gcm(aes)) key and salt in hex: 40 digits (AES-128) or 72 (AES-256), 0x optional',
    }),
  },
  strict,
);

export const IpsecPeerConfig = Type.Object(
  {
    address: Type.String({ pattern: IPV4, description: 'the peer\'s IPv4 address, or a feed\'s multicast group (then only `out`)' }),
    out: EspSaConfig,
    in: Type.Optional(EspSaConfig),
    link: Type.Optional(
      Type.Union([Type.Literal('primary'), Type.Literal('alternate')], {
        description:
          "which of the gateway's addresses the SAs are between: 'primary' (backend.address; the default) or 'alternate' (backend.alternateAddress, or backend.alternateDevice's): a peer's second link, and line B's group",
      }),
    ),
  },
  strict,
);

export const IpsecConfig = Type.Object(
  {
    mode: Type.Union([Type.Literal('keys'), Type.Literal('verify')], {
      description: "'keys' (the gateway installs ESP states and policies for ipsec.peers) or 'verify' (it checks that an xfrm policy covers each peer)",
    }),
    peers: Type.Array(IpsecPeerConfig, { default: [], description: "keys: the peers and feed groups to protect, each with its SAs' SPI and key file" }),
  },
  strict,
);

export const SecurityConfig = Type.Object(
  {
    requireEncryption: Type.Boolean({
      default: false,
      description: 'true: an RC session or feed group whose peer no ESP policy covers is refused (nothing is sent in the clear)',
    }),
    ipsec: Type.Optional(IpsecConfig),
  },
  { ...strict, default: {} },
);

export type SecurityConfig = Static<typeof SecurityConfig>;
export type IpsecConfig = Static<typeof IpsecConfig>;
export type IpsecPeerConfig = Static<typeof IpsecPeerConfig>;
export type IpsecLink = NonNullable<IpsecPeerConfig['link']>;

const isMulticast = (a: string): boolean => {
  const first = Number(a.split('.')[0]);
  return first >= 224 && first <= 239;
};

/** Why a link 'alternate' cannot be, said the same by the config check and the guard. */
export const ALTERNATE_ON_ONE_LINK = "'alternate' on a gateway with one link: set backend.alternateAddress (soft) or backend.alternateDevice (ibv), or leave link out";

/** Config problems of `security` that need no file read (load.ts validates with these). */
export function securityProblems(security: SecurityConfig, origin: (key: string) => string, hasAlternateLink = false): string[] {
  const problems: string[] = [];
  const ipsec = security.ipsec;
  if (security.requireEncryption && ipsec === undefined) {
    problems.push(`security.requireEncryption${origin('security.requireEncryption')}: true without security.ipsec: set security.ipsec.mode ('keys' or 'verify')`);
  }
  if (ipsec === undefined) return problems;
  if (ipsec.mode === 'verify' && ipsec.peers.length > 0) {
    problems.push(`security.ipsec.peers${origin('security.ipsec.peers')}: mode 'verify' installs nothing: remove the peers or use mode 'keys'`);
  }
  if (ipsec.mode === 'keys' && ipsec.peers.length === 0) {
    problems.push(`security.ipsec.peers${origin('security.ipsec.peers')}: mode 'keys' needs at least one peer (address, out, in)`);
  }
  const spis = new Map<number, string>();
  ipsec.peers.forEach((p, i) => {
    const key = `security.ipsec.peers.${i}`;
    if (isMulticast(p.address) && p.in !== undefined) problems.push(`${key}.in${origin(key)}: ${p.address} is a multicast group: it only receives (out); remove in`);
    if (!isMulticast(p.address) && p.in === undefined) problems.push(`${key}${origin(key)}: unicast peer ${p.address} needs in (the SA of its packets to us) as well as out`);
    if (p.link === 'alternate' && !hasAlternateLink) {
      problems.push(`${key}.link${origin(key)}: ${ALTERNATE_ON_ONE_LINK}`);
    }
    for (const [dir, sa] of [['out', p.out], ['in', p.in]] as const) {
      if (sa === undefined) continue;
      const other = spis.get(sa.spi);
      if (other !== undefined) problems.push(`${key}.${dir}.spi${origin(key)}: ${sa.spi} is already the SPI of ${other}: each SA needs its own`);
      spis.set(sa.spi, `${key}.${dir}`);
    }
  });
  return problems;
}
