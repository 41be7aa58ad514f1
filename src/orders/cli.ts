// `qpgate order`, `qpgate risk` and `qpgate sessions`: the order-entry client
// library driven from the shell.
//
//   qpgate order --name desk-1 --account 1 --address 127.0.0.2 [--file orders.txt]
//     one request per line (stdin or --file); '#' starts a comment:
//       buy  <instrument> <price> <quantity> [ioc] [account=<n>] [id=<n>]
//       sell <instrument> <price> <quantity> [ioc] [account=<n>] [id=<n>]
//       cancel  <orig id> <instrument> [id=<n>]
//       replace <orig id> <instrument> <price> <quantity> [id=<n>]
//     prints every answer and event, one line each (ack, reject, fill, cancel, replaced).
//   qpgate risk --account 1 --address 127.0.0.3 [--set-credit-limit N] [--add-credit N] [--kill | --unkill]
//   qpgate sessions [--close <id>]
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { baseUrl, ClientError, clientDevice, clientDeviceFailure, getJson, httpTimeoutMs, requestGateway, resolveTls, resolveToken, withAlternateDevice, type ClientDeviceFlags, type ClientOptions } from '../client/control-client.js';
import { secondsOption, wholeNumberOption } from '../client/cli-numbers.js';
import { table } from '../common/table.js';
import { ConnectionLostError, OrderClient } from './client.js';
import { RiskClient } from './risk-client.js';
import { HandshakeError } from './rc-endpoint.js';
import type { OpenIbvDeviceOptions } from '../native/verbs.js';
import { jsonLine } from '../common/json.js';
import { CancelReason, Side, TimeInForce, type CancelAck, type Fill, type Reject, type SequencedMessage } from './messages.js';

export interface SessionCliOptions extends ClientOptions, ClientDeviceFlags {
  name: string;
  account: string[];
  ackTimeout?: string;
}

/** --ack-timeout as the clients' ackTimeout option (IBA code 1..31), or nothing for their default. */
function ackTimeoutOption(opts: SessionCliOptions): { ackTimeout?: number } {
  if (opts.ackTimeout === undefined) return {};
  return { ackTimeout: wholeNumberOption(opts.ackTimeout, '--ack-timeout', 1, 31, 'an IBA timeout code (4.096 µs × 2^n)') };
}

export type Parsed =
  | { kind: 'newOrder'; id?: bigint; instrumentId: number; side: Side; price: number; quantity: number; tif: TimeInForce; account?: bigint }
  | { kind: 'cancel'; id?: bigint; orig: bigint; instrumentId: number }
  | { kind: 'replace'; id?: bigint; orig: bigint; instrumentId: number; price: number; quantity: number };

const int = (s: string | undefined, what: string): number => {
  if (s === undefined || !/^-?[0-9]+$/.test(s) || !Number.isSafeInteger(Number(s))) throw new Error(`${what}: expected an integer, got ${s ?? 'nothing'}`);
  return Number(s);
};
const u64 = (s: string | undefined, what: string): bigint => {
  if (s === undefined || !/^[0-9]{1,20}$/.test(s)) throw new Error(`${what}: expected an unsigned integer, got ${s ?? 'nothing'}`);
  return BigInt(s);
};

/** One line of `qpgate order` input; undefined for a blank or comment line. Throws naming what is wrong. */
export function parseOrderLine(line: string): Parsed | undefined {
  const words = line.replace(/#.*/, '').trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return undefined;
  const named = new Map<string, string>();
  const plain: string[] = [];
  let ioc = false;
  for (const w of words) {
    const eq = w.indexOf('=');
    if (eq > 0) named.set(w.slice(0, eq), w.slice(eq + 1));
    else if (w.toLowerCase() === 'ioc') ioc = true;
    else if (w.toLowerCase() !== 'day') plain.push(w);
  }
  for (const k of named.keys()) if (k !== 'id' && k !== 'account') throw new Error(`unknown option ${k}=; expected id= or account=`);
  const id = named.has('id') ? u64(named.get('id'), 'id') : undefined;
  const verb = plain[0]!.toLowerCase();
  const args = plain.slice(1);
  const arity = (n: number, usage: string): void => {
    if (args.length !== n) throw new Error(`${verb}: expected ${usage}, got ${args.length} values`);
  };
  switch (verb) {
    case 'buy':
    case 'sell': {
      arity(3, '<instrument> <price> <quantity>');
      return {
        kind: 'newOrder',
        ...(id === undefined ? {} : { id }),
        instrumentId: int(args[0], 'instrument'),
        side: verb === 'buy' ? Side.SIDE_BUY : Side.SIDE_SELL,
        price: int(args[1], 'price'),
        quantity: int(args[2], 'quantity'),
        tif: ioc ? TimeInForce.TIME_IN_FORCE_IOC : TimeInForce.TIME_IN_FORCE_DAY,
        ...(named.has('account') ? { account: u64(named.get('account'), 'account') } : {}),
      };
    }
    case 'cancel':
      arity(2, '<orig id> <instrument>');
      return { kind: 'cancel', ...(id === undefined ? {} : { id }), orig: u64(args[0], 'orig id'), instrumentId: int(args[1], 'instrument') };
    case 'replace':
      arity(4, '<orig id> <instrument> <price> <quantity>');
      return {
        kind: 'replace',
        ...(id === undefined ? {} : { id }),
        orig: u64(args[0], 'orig id'),
        instrumentId: int(args[1], 'instrument'),
        price: int(args[2], 'price'),
        quantity: int(args[3], 'quantity'),
      };
    default:
      throw new Error(`unknown request "${plain[0]}"; expected buy, sell, cancel or replace`);
  }
}

const sideName = (s: number): string => (s === Side.SIDE_BUY ? 'buy' : s === Side.SIDE_SELL ? 'sell' : String(s));

/** One line per gateway message, for the terminal. */
export function formatMessage(m: SequencedMessage): string {
  switch (m.kind) {
    case 'ack':
      return `ack ${m.clientOrderId} order ${m.orderId}${m.possibleResend ? ' (resend)' : ''}`;
    case 'reject':
      return `reject ${m.clientOrderId} ${m.reasonName}: ${m.text}`;
    case 'fill':
      return `fill ${m.clientOrderId} ${sideName(m.side)} ${m.quantity} @ ${m.price} leaves ${m.leavesQuantity} trade ${m.tradeId} ${m.liquidity === 1 ? 'maker' : 'taker'}`;
    case 'cancelAck':
      return `${m.reason === CancelReason.CANCEL_REASON_REQUESTED ? 'cancelled' : 'cancel'} ${m.origClientOrderId} ${m.reasonName} quantity ${m.cancelledQuantity}`;
    case 'replaceAck':
      return `replaced ${m.origClientOrderId} now ${m.quantity} @ ${m.price}${m.priorityKept ? ' (priority kept)' : ''}`;
  }
}

/**
 * Keeps `qpgate order`'s session through a lost connection (a restarted
 * gateway, a link that stopped answering): reconnect() once a second — the
 * same session, Hello with the last app_seq, the resend, the unanswered
 * requests again, each settled once — for up to `seconds`. After that the
 * client is closed, so the requests still waiting fail instead of waiting
 * for ever, onLost() is called, and lost() says why.
 */
function keepSessionUp(client: OrderClient, seconds: number, warn: (line: string) => void, onLost: () => void): { lost: () => string | undefined; stop: () => void } {
  let lostFor: string | undefined;
  let retrying = false;
  let stopped = false;
  const giveUp = (why: string): void => {
    lostFor = why;
    void client.close();
    onLost();
  };
  client.on('disconnect', (reason: string) => {
    if (retrying || stopped) return;  // a retry under way goes on; its failures are its own
    if (seconds === 0) return giveUp(`connection lost (${reason})`);
    retrying = true;
    warn(`qpgate order: connection lost (${reason}); reconnecting for up to ${seconds} s`);
    const until = Date.now() + seconds * 1000;
    const attempt = (): void => {
      client.reconnect().then(
        () => {
          retrying = false;
          warn(`qpgate order: reconnected (session ${client.id}, app_seq ${client.lastAppSeq})`);
        },
        (err: Error) => {
          if (stopped) return;
          // Refused (an entitlement, or ESP the gateway cannot authenticate): asking again changes nothing.
          if (err instanceof HandshakeError && err.status === 403) return giveUp(`connection lost (${reason}), and the gateway refused the session again: ${err.message}`);
          if (Date.now() + 1000 <= until) return void setTimeout(attempt, 1000);
          giveUp(`connection lost (${reason}) and ${seconds} s of reconnecting failed: ${err.message}`);
        },
      );
    };
    attempt();
  });
  return { lost: () => lostFor, stop: () => void (stopped = true) };
}

/**
 * `qpgate order`'s first connect, as keepSessionUp's reconnects: a connection
 * lost in its Hello or resend (a link that stopped answering; ESP the gateway
 * cannot authenticate, whose next handshake is refused saying so) is tried
 * again once a second for up to `seconds`; a refused handshake or any other
 * error ends it at once.
 */
async function connectRetrying(connect: () => Promise<OrderClient>, seconds: number, warn: (line: string) => void): Promise<OrderClient> {
  const until = Date.now() + seconds * 1000;
  for (;;) {
    try {
      return await connect();
    } catch (err) {
      if (!(err instanceof ConnectionLostError) || Date.now() + 1000 > until) throw err;
      warn(`qpgate order: ${err.message} while connecting; trying again for up to ${seconds} s`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** One request of `qpgate order` to the client; resolves with its answer. */
function sendRequest(client: OrderClient, p: Parsed, id: bigint, account: bigint): Promise<SequencedMessage> {
  if (p.kind === 'newOrder') {
    return client.newOrder({ clientOrderId: id, instrumentId: p.instrumentId, side: p.side, price: p.price, quantity: p.quantity, timeInForce: p.tif, account: p.account ?? account });
  }
  if (p.kind === 'cancel') return client.cancel({ clientOrderId: id, origClientOrderId: p.orig, instrumentId: p.instrumentId });
  return client.replace({ clientOrderId: id, origClientOrderId: p.orig, instrumentId: p.instrumentId, price: p.price, quantity: p.quantity });
}

/** Sends each request line in turn, waiting for its answer; returns how many lines failed (unparsable or rejected). */
async function sendLines(
  lines: AsyncIterable<string>,
  firstId: bigint,
  send: (p: Parsed, id: bigint) => Promise<SequencedMessage>,
  out: (line: string) => void,
  json: boolean,
): Promise<number> {
  let nextId = firstId;
  let failures = 0;
  let lineNo = 0;
  for await (const line of lines) {
    lineNo++;
    let p: Parsed | undefined;
    try {
      p = parseOrderLine(line);
    } catch (err) {
      out(json ? jsonLine({ line: lineNo, error: (err as Error).message }) : `line ${lineNo}: ${(err as Error).message}`);
      failures++;
      continue;
    }
    if (p === undefined) continue;
    const answer = await send(p, p.id ?? nextId++);
    if (answer.kind === 'reject') failures++;
  }
  return failures;
}

export async function orderCommand(
  opts: SessionCliOptions & { file?: string; firstId?: string; linger?: string; reconnectSeconds?: string; json?: boolean },
  out: (line: string) => void,
  warn: (line: string) => void = (line) => void process.stderr.write(`${line}\n`),
): Promise<number> {
  const show = (m: SequencedMessage | Reject) => out(opts.json ? jsonLine(m) : formatMessage(m));
  const { token } = resolveToken(opts);
  const accounts = opts.account.map((a) => u64(a, '--account'));
  if (accounts.length === 0) throw new ClientError('--account: at least one account is needed');
  const reconnectSeconds = secondsOption(opts.reconnectSeconds ?? '30', '--reconnect-seconds', 'zero allowed');
  // Read (and checked) once, before the first try: a bad option is a usage error, not a failed connect.
  const options = {
    url: baseUrl(opts),
    token,
    tls: resolveTls(opts),
    name: opts.name,
    accounts,
    device: clientDevice(opts),
    ...withAlternateDevice(opts),
    ...ackTimeoutOption(opts),
    takeover: true,
    timeoutMs: httpTimeoutMs(opts),
  };
  const client = await connectRetrying(() => OrderClient.connect(options), reconnectSeconds, warn).catch((err: unknown) => {
    throw clientDeviceFailure(err) ?? new ClientError(err instanceof HandshakeError ? err.message : `cannot connect: ${(err as Error).message}`);
  });
  // Client order ids must never repeat in a session (the gateway answers a repeat with its first answer):
  // by default they start at the current time in µs, so later runs start above earlier ones.
  const firstId = opts.firstId !== undefined ? u64(opts.firstId, '--first-id') : BigInt(Date.now()) * 1000n;
  // Everything the session is sent, in app_seq order: answers, fills, unsolicited cancels.
  client.on('message', show);
  client.on('reject', show);
  client.on('failover', (f: { device: string; reason: string; ms: number }) => warn(`qpgate order: failed over to the ${f.device} device in ${f.ms.toFixed(0)} ms (${f.reason})`));
  const input = opts.file ? createReadStream(opts.file) : process.stdin;
  const lines = createInterface({ input, crlfDelay: Infinity });
  // Lost for good: the input is closed too, so a command waiting for its next line ends at once.
  const session = keepSessionUp(client, reconnectSeconds, warn, () => lines.close());
  // A request still unanswered when the session is lost for good ends the command with the reason.
  const settle = <T>(answer: Promise<T>): Promise<T> =>
    answer.catch((err: Error) => {
      throw new ClientError(session.lost() ?? err.message);
    });
  let failures: number;
  try {
    const send = (p: Parsed, id: bigint) => settle(sendRequest(client, p, id, accounts[0]!));
    failures = await sendLines(lines, firstId, send, out, opts.json === true);
  } finally {
    // Ended before the input did (the session lost for good): an open stdin would keep the process alive.
    input.destroy();
  }
  await new Promise((r) => setTimeout(r, opts.linger !== undefined ? int(opts.linger, '--linger') : 200));
  session.stop();
  const lost = session.lost();
  if (lost !== undefined) throw new ClientError(lost);
  out(opts.json ? jsonLine({ session: client.id, lastAppSeq: client.lastAppSeq }) : `session ${client.id} last app_seq ${client.lastAppSeq}`);
  await client.close();
  return failures > 0 ? 1 : 0;
}

export async function riskCommand(
  opts: SessionCliOptions & { setCreditLimit?: string; addCredit?: string; kill?: boolean; unkill?: boolean; json?: boolean },
  out: (line: string) => void,
): Promise<number> {
  // --json: each change and each account's words as one JSON object per line.
  const changed = (text: string, fields: { account: bigint; word: string; op: string; before: bigint; after: bigint }) =>
    out(opts.json ? jsonLine(fields) : text);
  const { token } = resolveToken(opts);
  const accounts = opts.account.map((a) => u64(a, '--account'));
  if (accounts.length === 0) throw new ClientError('--account: at least one account is needed');
  if (opts.kill && opts.unkill) throw new ClientError('--kill and --unkill: choose one');
  const risk = await RiskClient.connect({ url: baseUrl(opts), token, tls: resolveTls(opts), name: opts.name, accounts, device: clientDevice(opts), ...withAlternateDevice(opts), ...ackTimeoutOption(opts), takeover: true, timeoutMs: httpTimeoutMs(opts) }).catch(
    (err: unknown) => {
      throw clientDeviceFailure(err) ?? new ClientError(err instanceof HandshakeError ? err.message : `cannot connect: ${(err as Error).message}`);
    },
  );
  try {
    for (const account of accounts) {
      if (opts.setCreditLimit !== undefined) {
        const target = u64(opts.setCreditLimit, '--set-credit-limit');
        // CMP_SWAP from the value just read: a concurrent change makes it fail, and it is tried again.
        for (;;) {
          const seen = await risk.read(account, 'creditLimit');
          if ((await risk.compareSwap(account, 'creditLimit', seen, target)) === seen) {
            changed(`account ${account}: credit limit ${seen} -> ${target} (CMP_SWAP)`, { account, word: 'creditLimit', op: 'CMP_SWAP', before: seen, after: target });
            break;
          }
        }
      }
      if (opts.addCredit !== undefined) {
        const add = BigInt(int(opts.addCredit, '--add-credit'));
        const before = await risk.fetchAdd(account, 'creditLimit', add);
        const after = BigInt.asUintN(64, before + add);
        changed(`account ${account}: credit limit ${before} -> ${after} (FETCH_ADD ${add})`, { account, word: 'creditLimit', op: 'FETCH_ADD', before, after });
      }
      if (opts.kill || opts.unkill) {
        const [from, to] = opts.kill ? [0n, 1n] : [1n, 0n];
        const before = await risk.compareSwap(account, 'killSwitch', from, to);
        changed(`account ${account}: kill switch ${before === from ? `${from} -> ${to}` : `was ${before}, left as is`} (CMP_SWAP)`, {
          account,
          word: 'killSwitch',
          op: 'CMP_SWAP',
          before,
          after: before === from ? to : before,
        });
      }
      const w = await risk.readAll(account);
      if (opts.json) {
        out(jsonLine({ account, ...w }));
        continue;
      }
      out(
        table(
          ['ACCOUNT', 'CREDIT-LIMIT', 'KILL', 'POSITION', 'OPEN-NOTIONAL', 'OPEN-ORDERS', 'TRADED-NOTIONAL'],
          [[String(account), String(w.creditLimit), String(w.killSwitch), String(w.position), String(w.openNotional), String(w.openOrders), String(w.tradedNotional)]],
        ),
      );
    }
  } finally {
    await risk.close();
  }
  return 0;
}

interface SessionRow {
  id: number;
  role: string;
  name: string;
  state: string;
  qpn: number;
  token: string | null;
  accounts: string[];
  lastAppSeq?: string;
  endedBy?: string | null;
  connected: boolean;
  activePath?: string | null;
  pathMigState?: string | null;
  pathMigrations?: number;
  device?: string;
  failovers?: number;
}

/** PATH: the active path and the migration state ('alternate MIGRATED'), '-' without an alternate path. */
const pathCell = (s: SessionRow): string => (s.activePath ? `${s.activePath} ${s.pathMigState ?? ''}`.trim() : '-');

export async function sessionsCommand(opts: ClientOptions & { json?: boolean; close?: string }): Promise<string> {
  if (opts.close !== undefined) {
    const res = await requestGateway(opts, `/v1/sessions/${encodeURIComponent(opts.close)}`, { method: 'DELETE' });
    const body = (await res.json().catch(() => ({}))) as { message?: string; state?: string };
    if (!res.ok) throw new ClientError(`DELETE /v1/sessions/${opts.close}: HTTP ${res.status}: ${body.message ?? res.statusText}`);
    return opts.json ? JSON.stringify(body) : `session ${opts.close} closed (QP ${body.state ?? 'gone'})`;
  }
  const r = await getJson<{ count: number; sessions: SessionRow[] }>(opts, '/v1/sessions');
  if (opts.json) return JSON.stringify(r.sessions, null, 2);
  if (r.sessions.length === 0) return 'no sessions';
  return table(
    ['ID', 'ROLE', 'NAME', 'STATE', 'QPN', 'TOKEN', 'ACCOUNTS', 'APP-SEQ', 'PATH', 'MIGRATIONS', 'DEVICE', 'FAILOVERS', 'ENDED-BY'],
    r.sessions.map((s) => [
      s.id, s.role, s.name, s.state, s.qpn, s.token ?? '-', s.accounts.join(',') || '-', s.lastAppSeq ?? '-', pathCell(s), s.pathMigrations ?? 0,
      s.device ?? 'primary', s.failovers ?? 0, s.endedBy ?? '-',
    ]),
  );
}

export type { CancelAck, Fill };
