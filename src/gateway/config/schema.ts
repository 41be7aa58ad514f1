// The configuration schema: one TypeBox schema gives both the JSON Schema that
// validates config/default.yaml (+ environment + CLI overrides) and the static
// type the rest of the gateway reads. Unknown keys are errors, so a typo in a
// key is reported rather than silently ignored.
import { Type, type Static } from '@sinclair/typebox';
import { FeedsConfig } from '../../feed/config.js';
import { OrdersConfig, U64 } from '../../orders/config.js';
import { DURATION_PATTERN } from '../slo/duration.js';
import { SecurityConfig } from '../security/config.js';

const strict = { additionalProperties: false } as const;

export const IdleStrategy = Type.Union(
  [Type.Literal('auto'), Type.Literal('spin'), Type.Literal('yield'), Type.Literal('backoff')],
  { description: "one of 'auto', 'spin', 'yield', 'backoff'" },
);

export const BackendConfig = Type.Object(
  {
    kind: Type.Union([Type.Literal('soft'), Type.Literal('ibv')], {
      description: "'soft' (RoCEv2 in user space over UDP) or 'ibv' (libibverbs)",
    }),
    device: Type.String({ minLength: 1, description: 'network interface (soft) or RDMA device (ibv)' }),
    address: Type.String({
      format: 'ipv4',
      description: 'the IPv4 address this soft device owns (one address per device: UDP port 4791)',
    }),
    alternateAddress: Type.Optional(
      Type.String({
        format: 'ipv4',
        description:
          "soft: a second IPv4 address of this host (another link): RC sessions whose client gives one too get an alternate path and migrate to it when the primary fails (docs/protocol.md §1.10); unset: one path. Not for 'ibv' (no automatic path migration: its second link is backend.alternateDevice)",
      }),
    ),
    alternateDevice: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "ibv: a second RDMA device on another link (e.g. 'rxe1'), port 1: trading and risk sessions may open on it, and a client with an alternate device of its own fails over to it, a new handshake there and a resend by app_seq, when its session on the first is lost (docs/protocol.md §1.11); unset: one device",
      }),
    ),
    port: Type.Integer({ minimum: 1, maximum: 255, description: 'ibv: the port of the RDMA device' }),
    gidIndex: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 255,
        description: "ibv: the source GID entry; unset: the RoCE v2 IPv4-mapped GID of the port's interface, chosen and logged",
      }),
    ),
  },
  strict,
);

export const BackoffConfig = Type.Object(
  {
    spins: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    yields: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    minParkNs: Type.Integer({ minimum: 1_000, maximum: 1_000_000_000 }),
    maxParkNs: Type.Integer({ minimum: 1_000, maximum: 1_000_000_000 }),
  },
  strict,
);

export const EngineConfig = Type.Object(
  {
    idleStrategy: IdleStrategy,
    cpus: Type.Array(Type.Integer({ minimum: 0, maximum: 4095 }), {
      uniqueItems: true,
      description: 'CPUs the engine thread may run on; empty = the CPUs of the device NUMA node',
    }),
    backoff: BackoffConfig,
    lendWhenParked: Type.Boolean({
      description: "true: a parked engine runs the JS thread's publishes and calls on the JS thread at once instead of being woken",
    }),
    ringBytes: Type.Integer({
      minimum: 4096,
      maximum: 1 << 30,
      multipleOf: 4096,
      description: 'capacity of each JS <-> engine ring in bytes (a power of two, at least 4096)',
    }),
  },
  strict,
);

export const SessionRoleName = Type.Union([Type.Literal('trading'), Type.Literal('risk'), Type.Literal('recovery')], {
  description: "one of 'trading', 'risk', 'recovery'",
});

// Entitlements (what POST /v1/sessions may open with this token): absent
// means "none" for a read token and "everything" for an admin token; '*' is
// every account / every channel.
export const TokenConfig = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64 }),
    scope: Type.Union([Type.Literal('read'), Type.Literal('admin')], { description: "'read' or 'admin'" }),
    token: Type.String({ minLength: 16, description: 'a secret of at least 16 characters' }),
    roles: Type.Optional(Type.Array(SessionRoleName, { uniqueItems: true, description: 'session roles this token may open' })),
    accounts: Type.Optional(
      Type.Array(Type.Union([U64, Type.Literal('*')], { description: "an account (u64) or '*' (every account)" }), {
        description: 'accounts its trading and risk sessions may use',
      }),
    ),
    channels: Type.Optional(
      Type.Array(Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Literal('*')], { description: "a feed channel id or '*'" }), {
        description: 'feed channels its recovery sessions may ask for',
      }),
    ),
  },
  strict,
);

// Caps on the RC sessions POST /v1/sessions holds at once (open, connected or
// not, until closed or reopened): each holds a QP and its buffers; and on the
// names a token may ever use, each kept for good in sessions.json
// (session-ids.ts says why), so that file is bounded by tokens x maxNamesPerToken.
export const ControlSessionsConfig = Type.Object(
  {
    maxPerToken: Type.Integer({ minimum: 1, maximum: 65535, default: 64, description: 'sessions one token may hold at once: an integer 1..65535' }),
    maxTotal: Type.Integer({ minimum: 1, maximum: 65535, default: 256, description: 'sessions the gateway holds at once: an integer 1..65535' }),
    maxNamesPerToken: Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      default: 1024,
      description: 'session names one token may ever use (kept for good in sessions.json): an integer 1..1000000',
    }),
  },
  { ...strict, default: {} },
);

// /healthz and /readyz: the engine is alive while its duty-cycle counter moves.
export const ControlHealthConfig = Type.Object(
  {
    engineStaleMs: Type.Integer({
      minimum: 10,
      maximum: 60_000,
      default: 1000,
      description: 'how long the engine may go without completing a duty cycle before /healthz is 503: an integer 10..60000 (ms)',
    }),
  },
  { ...strict, default: {} },
);

// https for the control plane (src/gateway/control/tls.ts reads the files once at start):
// certFile and keyFile together turn it on; clientCaFile also asks every client for a certificate.
const PemFile = (description: string) => Type.Optional(Type.String({ minLength: 1, description }));
export const ControlTlsConfig = Type.Object(
  {
    certFile: PemFile('PEM certificate (chain, leaf first) the control plane serves https with; with keyFile: https, without: http'),
    keyFile: PemFile('PEM private key of certFile (unencrypted)'),
    clientCaFile: PemFile('PEM CA bundle: when set, every client must present a certificate it signed (mutual TLS)'),
  },
  { ...strict, default: {} },
);

export const ControlConfig = Type.Object(
  {
    host: Type.String({ minLength: 1, description: 'listen address; loopback unless you mean it' }),
    port: Type.Integer({ minimum: 0, maximum: 65535 }),
    tls: ControlTlsConfig,
    allowPlaintextOnNetwork: Type.Boolean({
      default: false,
      description: 'true: a non-loopback control.host may serve plain http, its bearer tokens and session keys readable on the network; false: such a bind needs control.tls',
    }),
    tokens: Type.Array(TokenConfig),
    sessions: ControlSessionsConfig,
    health: ControlHealthConfig,
    metricsAuth: Type.Union([Type.Literal('token'), Type.Literal('none')], {
      default: 'token',
      description: "'token' (GET /metrics needs a bearer token of any scope) or 'none' (open)",
    }),
  },
  strict,
);

export const LogConfig = Type.Object(
  {
    level: Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
      { description: "one of 'fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'" },
    ),
  },
  strict,
);

export const StateConfig = Type.Object(
  {
    dir: Type.String({ minLength: 1, description: 'directory for the journal and generated secrets' }),
  },
  strict,
);

const Duration = (description: string) =>
  Type.String({ pattern: DURATION_PATTERN, description: `${description}: a duration like "10s", "1m", "10m"` });

export const SloObjectiveConfig = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z0-9][a-z0-9_.-]{0,63}$', description: 'a label value: lower case, digits, _ . -' }),
    latency: Type.Union([Type.Literal('tick_publish'), Type.Literal('order_ack')], {
      description: "one of 'tick_publish', 'order_ack'",
    }),
    percentile: Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 100, description: 'a percentile in (0, 100), e.g. 99' }),
    thresholdUs: Type.Number({ exclusiveMinimum: 0, description: 'the latency the percentile must stay at or below, in µs' }),
    windows: Type.Array(Duration('a window'), { minItems: 1, uniqueItems: true }),
    minEvents: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: 'events a window needs before it is judged (default: the fewest whose percentile is not simply the slowest, 100 for p99, 1000 for p99.9)',
      }),
    ),
  },
  strict,
);

export const SloConfig = Type.Object(
  {
    evaluationInterval: Duration('how often the SLOs are evaluated'),
    objectives: Type.Array(SloObjectiveConfig),
  },
  strict,
);

export const GatewayConfig = Type.Object(
  {
    backend: BackendConfig,
    engine: EngineConfig,
    control: ControlConfig,
    log: LogConfig,
    state: StateConfig,
    slo: SloConfig,
    // The feed's own schema (src/feed/config.ts), with its defaults: an empty
    // `feeds:` block is the embedded default (one channel, synthetic source).
    feeds: FeedsConfig,
    // Order entry (src/orders/config.ts), with its defaults: enabled, eight
    // instruments, four accounts, the journal under state.dir.
    orders: OrdersConfig,
    // ESP for the RoCEv2 traffic (src/gateway/security/config.ts): off by default.
    security: SecurityConfig,
  },
  strict,
);

export type GatewayConfig = Static<typeof GatewayConfig>;
export type IdleStrategy = Static<typeof IdleStrategy>;
export type SloConfig = Static<typeof SloConfig>;
export type SloObjectiveConfig = Static<typeof SloObjectiveConfig>;
export type TokenConfig = Static<typeof TokenConfig>;
export type ControlTlsConfig = Static<typeof ControlTlsConfig>;
export type SessionRoleName = Static<typeof SessionRoleName>;
