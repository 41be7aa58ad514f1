// What a control-plane token may open on POST /v1/sessions: session roles,
// accounts (trading, risk) and feed channels (recovery). From the token's
// config (control.tokens[].roles/accounts/channels); a key left out means
// "none" for a read token and "everything" for an admin token, as does the
// admin token the gateway generates when none is configured.
import type { SessionRole } from '../../common/session-provider.js';
import type { TokenConfig } from '../config/schema.js';
import { U64_MAX } from '../../orders/config.js';

export const ALL_ROLES: readonly SessionRole[] = ['trading', 'risk', 'recovery'];

export interface Entitlements {
  readonly roles: ReadonlySet<SessionRole>;
  /** undefined: every account. */
  readonly accounts: ReadonlySet<bigint> | undefined;
  /** undefined: every channel. */
  readonly channels: ReadonlySet<number> | undefined;
}

const NONE: Entitlements = { roles: new Set(), accounts: new Set(), channels: new Set() };
const EVERYTHING: Entitlements = { roles: new Set(ALL_ROLES), accounts: undefined, channels: undefined };

/** The entitlements of a token; `token` undefined is the generated admin token. */
export function entitlementsOf(token: Pick<TokenConfig, 'scope' | 'roles' | 'accounts' | 'channels'> | undefined): Entitlements {
  if (token === undefined) return EVERYTHING;
  const base = token.scope === 'admin' ? EVERYTHING : NONE;
  return {
    roles: token.roles === undefined ? base.roles : new Set(token.roles),
    accounts:
      token.accounts === undefined ? base.accounts : token.accounts.includes('*') ? undefined : new Set(token.accounts.map((a) => BigInt(a))),
    channels:
      token.channels === undefined ? base.channels : token.channels.includes('*') ? undefined : new Set(token.channels as number[]),
  };
}

export function entitledAccount(e: Entitlements, account: bigint): boolean {
  return e.accounts === undefined || e.accounts.has(account);
}

export function entitledChannel(e: Entitlements, channel: number): boolean {
  return e.channels === undefined || e.channels.has(channel);
}

/** Config problems the schema cannot see: duplicate token names, accounts beyond u64. */
export function validateTokens(tokens: readonly TokenConfig[], origin: (key: string) => string = () => ''): string[] {
  const problems: string[] = [];
  const names = new Map<string, number>();
  tokens.forEach((t, i) => {
    const key = `control.tokens.${i}`;
    const first = names.get(t.name);
    // Sessions are keyed by (token name, session name) and owned by the token that opened them.
    if (first !== undefined) problems.push(`${key}.name${origin(key)}: expected a name not used by control.tokens.${first}, got "${t.name}"`);
    names.set(t.name, i);
    t.accounts?.forEach((a, j) => {
      if (a !== '*' && BigInt(a) > U64_MAX) problems.push(`${key}.accounts.${j}${origin(key)}: expected at most 2^64-1, got ${a}`);
    });
  });
  return problems;
}
