// /v1/sessions: the one handshake for every RC session (trading, risk,
// recovery), and the list of them (docs/protocol.md §3.1).
//
//   POST   /v1/sessions      open (a token entitled to the role, accounts, channels)
//   GET    /v1/sessions      list (read: the token's own sessions; admin: all)
//   GET    /v1/sessions/:id  one (read: the token's own; admin: any)
//   DELETE /v1/sessions/:id  close: the gateway QP goes to ERR (admin, or the token that opened it)
//
// The route authenticates and authorises, validates the body, gives the
// session its id — stable for (token name, session name) across reconnects
// and restarts, persisted before the answer — and hands the rest to the
// provider registered for the role, which creates the QP, takes it to RTS
// and answers with it and the memory regions the session may use.
//
// Statuses: 201 opened; 400 a bad body (the message names the field, what
// was expected and what was given); 401 no or unknown token; 403 the token
// is not entitled to the role, an account or a channel (named); 404 unknown
// session (or the provider's: unknown feed, unknown account), or
// not_enabled: no service for the role in this gateway (order entry off in
// the configuration, no feed for recovery); 409 the name is connected
// already; 429 the token or the gateway holds as many sessions as
// control.sessions.maxPerToken / maxTotal allow, or a new name would pass
// the token's control.sessions.maxNamesPerToken (names are kept for good:
// session-ids.ts) (counted in qpgate_control_sessions_refused_total{limit});
// 503 unavailable: shutting
// down, or the provider cannot serve now (the feed is not publishing).
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { jsonSafe } from '../../../common/json.js';
import { looseObject } from '../openapi.js';
import { Value } from '@sinclair/typebox/value';
import { Counter, type Registry } from 'prom-client';
import type { ControlExtension, GatewayState } from '../../state.js';
import { SessionIds, type SessionIdEntry } from '../../sessions/session-ids.js';
import { entitledAccount, entitledChannel, entitlementsOf } from '../../sessions/entitlements.js';
import { isConnected, SessionError, type SessionDevice, type SessionInfo, type SessionOpenAnswer, type SessionProvider, type SessionRole } from '../../../common/session-provider.js';
import { U64_MAX } from '../../../orders/config.js';
import { errorResponses, NOT_ENABLED, sendError } from '../errors.js';

const U24 = 0xffffff;

export const SessionOpenBody = Type.Object(
  {
    role: Type.Union([Type.Literal('trading'), Type.Literal('risk'), Type.Literal('recovery')], {
      description: "one of 'trading', 'risk', 'recovery'",
    }),
    name: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$',
      description: 'a session name: 1..64 of A-Z a-z 0-9 _ . : - (not starting with a symbol)',
    }),
    qpn: Type.Integer({ minimum: 1, maximum: U24, description: 'the client QP number: an integer 1..16777215 (24 bits)' }),
    psn: Type.Integer({ minimum: 0, maximum: U24, description: 'the client first send PSN: an integer 0..16777215 (24 bits)' }),
    gid: Type.String({ minLength: 2, maxLength: 45, description: "the client GID in IPv6 text form, e.g. '::ffff:127.0.0.1'" }),
    mtu: Type.Union([256, 512, 1024, 2048, 4096].map((m) => Type.Literal(m)), { description: 'one of 256, 512, 1024, 2048, 4096' }),
    alternateGid: Type.Optional(
      Type.String({ minLength: 2, maxLength: 45, description: "the client's alternate path GID (a second address) in IPv6 text form, e.g. '::ffff:10.1.0.2'" }),
    ),
    ackHoldUs: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000,
        description: "how long the client's RC responder holds the ACK of a request that did not ask for one (µs; 0 or absent: it never sends one): the gateway's requester then asks for ACKs to the window only (docs/protocol.md, The ACK hold)",
      }),
    ),
    device: Type.Optional(
      Type.Union([Type.Literal('primary'), Type.Literal('alternate')], {
        description:
          "which of the gateway's devices to open on: 'primary' (default) or 'alternate' (backend.alternateDevice). A client fails over with it: a name connected on the other device is closed first (docs/protocol.md §1.11)",
      }),
    ),
    accounts: Type.Optional(
      Type.Array(Type.String({ pattern: '^[1-9][0-9]{0,19}$', description: 'an account: a decimal u64 string, e.g. "1001"' }), {
        maxItems: 64,
        uniqueItems: true,
        description: 'up to 64 distinct accounts, decimal u64 strings',
      }),
    ),
    feed: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'a feed name' })),
    channels: Type.Optional(
      Type.Array(Type.Integer({ minimum: 0, maximum: 65535, description: 'a channel id 0..65535' }), {
        maxItems: 1024,
        uniqueItems: true,
        description: 'distinct feed channel ids',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SessionOpenBody = Static<typeof SessionOpenBody>;

const BODY_FIELDS = Object.keys(SessionOpenBody.properties);

/** The first problem with a value against a TypeBox schema, naming the field, the expectation and the value. */
export function firstProblem(schema: TSchema, value: unknown, where: string): string | undefined {
  const first = Value.Errors(schema, value).First();
  if (first === undefined) return undefined;
  const path = `${where}${first.path}`;
  if (first.message.startsWith('Unexpected property')) return `${path}: unknown field; expected one of ${BODY_FIELDS.join(', ')}`;
  if (first.message.startsWith('Expected required property')) return `${path}: required; expected ${first.schema.description ?? 'a value'}`;
  if (first.path === '' && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    return `${where}: expected a JSON object, got ${describe(value)}`;
  }
  return `${path}: expected ${first.schema.description ?? first.message.replace(/^Expected /, '')}, got ${describe(first.value)}`;
}

const describe = (v: unknown): string => (v === undefined ? 'nothing' : JSON.stringify(v) ?? String(v));

interface OpenSession {
  id: number;
  role: SessionRole;
  token: string;
  name: string;
  provider: SessionProvider;
  openedAt: string;
  answer: SessionOpenAnswer;
  accounts: bigint[];
}

const Region = Type.Object(
  {
    name: Type.String(),
    account: Type.Union([Type.String(), Type.Null()]),
    addr: Type.String({ description: 'a u64 address, decimal string' }),
    length: Type.Integer(),
    rkey: Type.Integer(),
    access: Type.Array(Type.String()),
  },
  { additionalProperties: true, description: 'a memory region the session may use (RDMA READ/WRITE/atomics)' },
);
const SessionOpened = Type.Object(
  {
    id: Type.Integer({ description: 'stable for (token, name) across reconnects and restarts' }),
    role: Type.String(),
    name: Type.String(),
    accounts: Type.Array(Type.String()),
    feed: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    channels: Type.Optional(Type.Array(Type.Integer())),
    qpn: Type.Integer({ description: "the gateway's QP number" }),
    psn: Type.Integer(),
    gid: Type.String(),
    mtu: Type.Integer(),
    alternateGid: Type.Union([Type.String(), Type.Null()], { description: "the gateway's alternate path GID when the path is armed (both ends gave one), else null" }),
    ackHoldUs: Type.Integer({ description: "how long the gateway's RC responder holds the ACK of a request that did not ask for one (µs; 0: never sends one)" }),
    device: Type.Union([Type.Literal('primary'), Type.Literal('alternate')], { description: "the gateway's device the session opened on" }),
    alternateDeviceGid: Type.Union([Type.String(), Type.Null()], {
      description: "the GID of the gateway's alternate device (backend.alternateDevice), where a client fails over to; null without one",
    }),
    regions: Type.Array(Region),
    layout: Type.Optional(looseObject('risk sessions: the risk pages\' layout, as GET /v1/sessions/risk-layout')),
  },
  { additionalProperties: true },
);
const SessionView = looseObject('a session: id, role, name, token, openedAt, connected, accounts, QP state, app_seq, counters and endedBy (what ended it, once not connected)');
const IdParams = Type.Object({ id: Type.String({ description: 'a session id: an integer 1..4294967295' }) });

const bad = (reply: FastifyReply, message: string) => reply.code(400).send({ error: 'bad_request', message });
const forbidden = (reply: FastifyReply, message: string) => reply.code(403).send({ error: 'forbidden', message });
const notFound = (reply: FastifyReply, message: string) => reply.code(404).send({ error: 'not_found', message });

export interface SessionsExtensionOptions {
  /** Adds to the extension's summary (e.g. the order service's counters). */
  summary?: () => Record<string, unknown>;
}

/**
 * The sessions extension: /v1/sessions over the providers registered in
 * `state.sessionProviders`, with ids kept in <state.dir>/sessions.json.
 */
// long because: a fastify plugin (its routes) and the extension's lifecycle over one closure of
// session state (ids, open sessions, refusals); the POST handler alone is 137 lines. To split: issue 16.
export function sessionsExtension(state: GatewayState, options: SessionsExtensionOptions = {}): ControlExtension {
  const ids = new SessionIds(state.config.state.dir);
  const open = new Map<number, OpenSession>();
  // Reopens of a session on the other device than its last (failovers, docs/protocol.md §1.11), by id.
  const failovers = new Map<number, { device: SessionDevice; count: number }>();
  // (token, name) keys between the checks and the provider's answer: a second open of one is a 409.
  const opening = new Map<string, string>();
  const refused = { maxPerToken: 0, maxTotal: 0, maxNamesPerToken: 0 };
  let accepting = true;
  const log = state.logger.child({ component: 'sessions' });
  const limits = state.config.control.sessions;

  /** The 429 message when opening one more session for `token` (not reopening `reopens`, a known name) passes a cap. */
  const overLimit = (token: string, reopens: number | undefined): string | undefined => {
    if (reopens === undefined && ids.names(token) >= limits.maxNamesPerToken) {
      refused.maxNamesPerToken++;
      return `token "${token}" has used ${ids.names(token)} session names, the most control.sessions.maxNamesPerToken allows; reuse one of them (a name is kept for good: its id holds the journal's state for it)`;
    }
    const held = [...open.values()].filter((o) => o.id !== reopens);
    const mine = held.filter((o) => o.token === token).length + [...opening.values()].filter((t) => t === token).length;
    if (mine >= limits.maxPerToken) {
      refused.maxPerToken++;
      return `token "${token}" holds ${mine} sessions, the most control.sessions.maxPerToken allows; close one first (DELETE /v1/sessions/:id)`;
    }
    if (held.length + opening.size >= limits.maxTotal) {
      refused.maxTotal++;
      return `the gateway holds ${held.length + opening.size} sessions, the most control.sessions.maxTotal allows; try again once some close`;
    }
    return undefined;
  };
  /** Sessions a principal may see: its own; an admin token every one. */
  const visible = (principal: { name: string; scope: string }, id: number): boolean =>
    principal.scope === 'admin' || ids.get(id)?.token === principal.name;

  const providerFor = (role: SessionRole): SessionProvider | undefined => state.sessionProviders.find((p) => p.roles.includes(role));
  const infoOf = (id: number): SessionInfo | undefined => {
    for (const p of state.sessionProviders) {
      const found = p.list().find((s) => s.id === id);
      if (found) return found;
    }
    return undefined;
  };
  const view = (s: SessionInfo) => {
    const o = open.get(s.id);
    const e = ids.get(s.id);
    return jsonSafe({
      ...s,
      token: e?.token ?? null,
      openedAt: o?.openedAt ?? null,
      connected: isConnected(s),
      accounts: o?.accounts ?? (s as { accounts?: unknown }).accounts ?? [],
      device: s.device ?? 'primary',
      failovers: failovers.get(s.id)?.count ?? 0,
    });
  };
  const listAll = (): SessionInfo[] => state.sessionProviders.flatMap((p) => p.list()).sort((a, b) => a.id - b.id);

  async function routes(app: FastifyInstance): Promise<void> {
    app.post(
      '/',
      {
        config: { scope: 'read' },
        // Validated by the route itself (firstProblem: messages naming the field, the expectation and the value);
        // the schema is here for the document.
        attachValidation: true,
        schema: {
          tags: ['sessions'],
          summary: 'open an RC session (trading, risk, recovery): the handshake',
          description:
            'A token entitled to the role, the accounts and the channels (control.tokens roles, accounts, channels); 403 names the missing entitlement. ' +
            'The answer has the gateway\'s QPN, PSN, GID and MTU for the RC handshake and the memory regions the session may use. ' +
            '404 not_enabled when no service of this gateway serves the role (order entry off, or no feed for recovery); ' +
            '403 also when security.requireEncryption is set and no ESP policy covers the client (counted in qpgate_security_refusals_total{reason}); ' +
            '409 if the name is connected (or being opened by another request); 429 past control.sessions.maxPerToken / maxTotal / maxNamesPerToken. ' +
            'Session ids are persisted in <state.dir>/sessions.json before the 201 (temporary file, fsync, rename, directory fsync).',
          'x-qpgate-scope': 'entitlement',
          body: SessionOpenBody,
          response: { 201: SessionOpened, ...errorResponses(404, 409, 429, 503) },
        },
      },
      async (request: FastifyRequest, reply: FastifyReply) => {
      if (!accepting) return reply.code(503).send({ error: 'unavailable', message: 'the gateway is shutting down: no new sessions' });
      const problem = firstProblem(SessionOpenBody, request.body, 'body');
      if (problem) return bad(reply, problem);
      const body = request.body as SessionOpenBody;
      if (isIP(body.gid) !== 6) return bad(reply, `body/gid: expected an IPv6 address in text form, e.g. '::ffff:127.0.0.1', got ${JSON.stringify(body.gid)}`);
      if (body.alternateGid !== undefined && isIP(body.alternateGid) !== 6) {
        return bad(reply, `body/alternateGid: expected an IPv6 address in text form, e.g. '::ffff:10.1.0.2', got ${JSON.stringify(body.alternateGid)}`);
      }
      if (body.alternateGid === body.gid) return bad(reply, `body/alternateGid: expected a GID other than body/gid (a second address), got ${JSON.stringify(body.alternateGid)} for both`);
      const accounts = (body.accounts ?? []).map((a) => BigInt(a));
      const tooBig = accounts.find((a) => a > U64_MAX);
      if (tooBig !== undefined) return bad(reply, `body/accounts: expected accounts of at most 2^64-1, got "${tooBig}"`);
      if (body.role !== 'recovery' && accounts.length === 0) {
        return bad(reply, `body/accounts: required for a ${body.role} session; expected at least one account, got ${describe(body.accounts)}`);
      }
      if (body.role !== 'recovery' && (body.feed !== undefined || body.channels !== undefined)) {
        return bad(reply, `body/${body.feed !== undefined ? 'feed' : 'channels'}: only for recovery sessions, got it on a ${body.role} session`);
      }
      if (body.role === 'recovery' && body.accounts !== undefined) return bad(reply, 'body/accounts: only for trading and risk sessions, got it on a recovery session');
      // Before anything is closed for a failover: a device the session cannot open on.
      if (body.device === 'alternate' && state.alternateDevice === undefined) {
        return bad(reply, 'body/device: this gateway has no alternate device (backend.alternateDevice); leave device out or give "primary"');
      }

      const principal = request.principal!;
      const rights = entitlementsOf(state.config.control.tokens.find((t) => t.name === principal.name));
      const who = `token "${principal.name}"`;
      if (!rights.roles.has(body.role)) return forbidden(reply, `${who} is not entitled to role ${body.role}`);
      const account = accounts.find((a) => !entitledAccount(rights, a));
      if (account !== undefined) return forbidden(reply, `${who} is not entitled to account ${account}`);
      const channels = body.channels ?? [];
      const channel = channels.find((c) => !entitledChannel(rights, c));
      if (channel !== undefined) return forbidden(reply, `${who} is not entitled to channel ${channel}`);

      const provider = providerFor(body.role);
      if (provider === undefined) {
        return sendError(reply, 404, `no ${body.role} sessions: ${serviceOf(body.role)} is not enabled on this gateway`, NOT_ENABLED);
      }
      // security.requireEncryption: before the QP exists, so nothing reaches the peer in the clear.
      // Each flow from the gateway's address on its link: a session on the alternate device is
      // all on the second link, and an alternate path (armed only where the gateway has a second
      // link) must not take the session into the clear when it migrates.
      const security = state.security;
      const link = body.device ?? 'primary';
      const unprotected =
        (await security?.sessionRefusal(body.gid, `${body.role} session "${body.name}"`, link)) ??
        (body.alternateGid !== undefined && security?.has('alternate')
          ? await security.sessionRefusal(body.alternateGid, `${body.role} session "${body.name}" (its alternate path)`, 'alternate')
          : undefined);
      if (unprotected !== undefined) return forbidden(reply, unprotected.message);
      const openingKey = `${principal.name}\u0000${body.name}`;
      if (opening.has(openingKey)) {
        return reply.code(409).send({ error: 'conflict', message: `session "${body.name}" is being opened by another request` });
      }
      const known = ids.find(principal.name, body.name);
      const over = overLimit(principal.name, known?.id);
      if (over !== undefined) return reply.code(429).send({ error: 'too_many_requests', message: over });
      const device = body.device ?? 'primary';
      if (known !== undefined) {
        const info = infoOf(known.id);
        if (info !== undefined && isConnected(info)) {
          if ((info.device ?? 'primary') === device) {
            return reply.code(409).send({
              error: 'conflict',
              message: `session "${body.name}" (id ${known.id}) is connected already; close it first (DELETE /v1/sessions/${known.id})`,
            });
          }
          // A failover: the client lost its device and comes on the other, while
          // the gateway's QP on the one it left may not have noticed yet.
          closeSession(known.id, `failed over to the ${device} device`);
        } else if (info !== undefined) {
          // A session whose QP left RTS (the client went away): free it before reopening the name.
          closeSession(known.id, 'reopened');
        }
      }
      opening.set(openingKey, principal.name);
      let entry: SessionIdEntry;
      let answer: SessionOpenAnswer;
      try {
        entry = await ids.acquire(principal.name, body.name, body.role);
        answer = provider.open({
          role: body.role,
          id: entry.id,
          name: body.name,
          qpn: body.qpn,
          psn: body.psn,
          gid: body.gid,
          mtu: body.mtu,
          ...(body.alternateGid !== undefined ? { alternateGid: body.alternateGid } : {}),
          ...(body.ackHoldUs !== undefined ? { ackHoldUs: body.ackHoldUs } : {}),
          ...(body.device !== undefined ? { device: body.device } : {}),
          accounts,
          ...(body.feed !== undefined ? { feed: body.feed } : {}),
          channels,
        });
      } catch (err) {
        if (err instanceof SessionError) {
          return reply.code(err.status).send({ error: ERROR_NAMES[err.status], message: err.message });
        }
        throw err;
      } finally {
        opening.delete(openingKey);
      }
      const last = failovers.get(entry.id);
      failovers.set(entry.id, { device, count: (last?.count ?? 0) + (last !== undefined && last.device !== device ? 1 : 0) });
      open.set(entry.id, {
        id: entry.id,
        role: body.role,
        token: principal.name,
        name: body.name,
        provider,
        openedAt: new Date().toISOString(),
        answer,
        accounts,
      });
      log.info({ id: entry.id, role: body.role, name: body.name, token: principal.name, qpn: answer.qpn, peerQpn: body.qpn, device }, 'session opened');
      return reply.code(201).send(
        jsonSafe({
          id: entry.id,
          role: body.role,
          name: body.name,
          accounts,
          ...(body.role === 'recovery' ? { feed: body.feed ?? null, channels } : {}),
          qpn: answer.qpn,
          psn: answer.psn,
          gid: answer.gid,
          mtu: answer.mtu,
          alternateGid: answer.alternateGid,
          ackHoldUs: answer.ackHoldUs ?? 0,
          device,
          alternateDeviceGid: answer.alternateDeviceGid ?? null,
          regions: answer.regions,
          ...(answer.layout !== undefined ? { layout: answer.layout } : {}),
        }),
      );
    });

    // The risk pages' layout (word names, offsets within each page, meanings) without opening a session.
    app.get(
      '/risk-layout',
      {
        schema: {
          tags: ['sessions'],
          summary: "the risk pages' layout (word names, offsets, meanings) without opening a session",
          response: { 200: looseObject('pageBytes and the words of each page'), ...errorResponses(404) },
        },
      },
      async (_request, reply) => {
      const provider = state.sessionProviders.find((p) => typeof (p as { layout?: unknown }).layout === 'function') as
        | (SessionProvider & { layout(): unknown })
        | undefined;
      if (provider === undefined) return sendError(reply, 404, 'order entry is not enabled on this gateway', NOT_ENABLED);
      return provider.layout();
    });

    app.get(
      '/',
      {
        schema: {
          tags: ['sessions'],
          summary: 'the sessions: a read token sees the ones it opened, an admin token every one',
          description: 'By role, each with its QP state, app_seq and counters; a lost one with endedBy, what ended it (an error completion\'s status, an async event, the state check).',
          response: { 200: Type.Object({ count: Type.Integer(), roles: Type.Array(Type.String()), sessions: Type.Array(SessionView) }, { additionalProperties: false }) },
        },
      },
      async (request) => {
      const principal = request.principal!;
      const sessions = listAll().filter((s) => visible(principal, s.id)).map(view);
      return { count: sessions.length, roles: state.sessionProviders.flatMap((p) => p.roles), sessions };
    });

    app.get(
      '/:id',
      {
        schema: {
          tags: ['sessions'],
          summary: "one session (another token's is 404 for a read token)",
          params: IdParams,
          response: { 200: SessionView, ...errorResponses(404) },
        },
      },
      async (request, reply) => {
      const id = parseId((request.params as { id: string }).id);
      if (typeof id === 'string') return bad(reply, id);
      const info = infoOf(id);
      // Another token's session is not even said to exist.
      if (info === undefined || !visible(request.principal!, id)) return notFound(reply, `no session ${id} on this gateway`);
      return view(info);
    });

    app.delete(
      '/:id',
      {
        config: { scope: 'read' },
        schema: {
          tags: ['sessions'],
          summary: 'close a session: its QP to ERR (cancel-on-disconnect for trading)',
          description: 'An admin token, or the token that opened the session.',
          'x-qpgate-scope': 'entitlement',
          params: IdParams,
          response: {
            200: Type.Object({ id: Type.Integer(), closed: Type.Boolean(), state: Type.String() }, { additionalProperties: false }),
            ...errorResponses(404),
          },
        },
      },
      async (request, reply) => {
      const id = parseId((request.params as { id: string }).id);
      if (typeof id === 'string') return bad(reply, id);
      const info = infoOf(id);
      const principal = request.principal!;
      // Another token's session is not found, as in GET: its existence is not told.
      if (info === undefined || !visible(principal, id)) return notFound(reply, `no session ${id} on this gateway`);
      const closed = closeSession(id, `DELETE by token "${principal.name}"`);
      return { id, closed, state: infoOf(id)?.state ?? 'closed' };
    });
  }

  function closeSession(id: number, why: string): boolean {
    let closed = false;
    for (const p of state.sessionProviders) if (p.list().some((s) => s.id === id)) closed = p.close(id) || closed;
    open.delete(id);
    log.info({ id, why, closed }, 'session closed');
    return closed;
  }

  return {
    routes,
    summary: () => {
      const sessions = listAll();
      const byRole: Record<string, { total: number; connected: number }> = {};
      for (const s of sessions) {
        const r = (byRole[s.role] ??= { total: 0, connected: 0 });
        r.total++;
        if (isConnected(s)) r.connected++;
      }
      return jsonSafe({ roles: state.sessionProviders.flatMap((p) => p.roles), sessions: byRole, ...(options.summary?.() ?? {}) });
    },
    exportMetrics: (registry: Registry) => {
      new Counter({
        name: 'qpgate_control_sessions_refused_total',
        help: 'POST /v1/sessions refused with 429, by the cap reached (maxPerToken, maxTotal, maxNamesPerToken: control.sessions).',
        labelNames: ['limit'],
        registers: [registry],
        collect() {
          this.reset();
          for (const [limit, n] of Object.entries(refused)) this.inc({ limit }, n);
        },
      });
    },
    stopAccepting: () => {
      accepting = false;
    },
    close: () => ids.flush(),
  };
}

const ERROR_NAMES = { 400: 'bad_request', 403: 'forbidden', 404: 'not_found', 409: 'conflict', 503: 'unavailable' } as const;

function serviceOf(role: SessionRole): string {
  return role === 'recovery' ? 'feed recovery' : 'order entry';
}

/** A session id from the path, or the 400 message. */
function parseId(raw: string): number | string {
  const id = /^[0-9]{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(id) || id < 1 || id > 0xffffffff) return `params/id: expected a session id (an integer 1..4294967295), got ${JSON.stringify(raw)}`;
  return id;
}
