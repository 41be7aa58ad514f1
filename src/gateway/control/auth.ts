// Bearer-token auth for /v1. Tokens carry a scope: `read` may GET, `admin` may
// do anything. Comparison is constant-time over SHA-256 digests, so neither the
// content nor the length of a configured token leaks through timing.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';

export type Scope = 'read' | 'admin';

export interface Token {
  name: string;
  scope: Scope;
  token: string;
}

interface Principal {
  name: string;
  scope: Scope;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyContextConfig {
    /** The scope a route needs; routes without it need `read` for GET/HEAD and `admin` otherwise. */
    scope?: Scope;
  }
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

export class TokenStore {
  private readonly entries: Array<{ digest: Buffer; principal: Principal }>;

  constructor(tokens: Token[]) {
    this.entries = tokens.map((t) => ({ digest: digest(t.token), principal: { name: t.name, scope: t.scope } }));
  }

  get size(): number {
    return this.entries.length;
  }

  /** Checks every entry, match or not, so the time taken does not tell which one matched. */
  lookup(presented: string): Principal | undefined {
    const d = digest(presented);
    let found: Principal | undefined;
    for (const e of this.entries) {
      if (timingSafeEqual(d, e.digest) && !found) found = e.principal;
    }
    return found;
  }
}

/**
 * With no token configured the control plane would be open; instead generate
 * an admin token and leave it where only this user can read it.
 */
export function generateAdminToken(stateDir: string): { token: Token; path: string } {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const path = join(stateDir, 'admin.token');
  const token = randomBytes(24).toString('base64url');
  writeFileSync(path, `${token}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return { token: { name: 'generated-admin', scope: 'admin', token }, path };
}

export function requireToken(store: TokenStore) {
  return async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    const match = header ? /^Bearer ([^\s]+)$/i.exec(header) : null;
    if (!match) {
      await reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="qpgate"')
        .send({ error: 'unauthorized', message: 'missing bearer token: send "Authorization: Bearer <token>"' });
      return reply;
    }
    const principal = store.lookup(match[1] as string);
    if (!principal) {
      await reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="qpgate", error="invalid_token"')
        .send({ error: 'unauthorized', message: 'unknown bearer token' });
      return reply;
    }
    const readOnly = request.method === 'GET' || request.method === 'HEAD';
    const needed: Scope = request.routeOptions.config.scope ?? (readOnly ? 'read' : 'admin');
    if (needed === 'admin' && principal.scope !== 'admin') {
      await reply
        .code(403)
        .send({ error: 'forbidden', message: `token "${principal.name}" has scope read; this route needs admin` });
      return reply;
    }
    request.principal = principal;
  };
}
