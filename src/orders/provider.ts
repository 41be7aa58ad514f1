// The order service as the SessionProvider of roles 'trading' and 'risk'
// (src/common/session-provider.ts): POST /v1/sessions has authenticated the
// token, checked its entitlements and given the session its stable id; here
// the native service creates the session's PD, CQ and RC QP, takes the QP to
// RTS against the client's QPN/PSN/GID/MTU and registers the risk pages the
// session may reach: a risk session gets, per account, the remote-owned page
// (credit limit, kill switch: REMOTE_ATOMIC|REMOTE_READ) and the local-owned
// page (position, open notional...: REMOTE_READ); a trading session gets the
// local-owned pages of its accounts only.
import { SessionError, type SessionInfo, type SessionOpenAnswer, type SessionOpenRequest, type SessionProvider, type SessionRole } from '../common/session-provider.js';
import type { OrderService } from './service.js';

export class OrderSessionProvider implements SessionProvider {
  readonly roles: readonly SessionRole[] = ['trading', 'risk'];
  readonly #service: OrderService;
  readonly #names = new Map<number, { name: string; accounts: bigint[] }>();

  constructor(service: OrderService) {
    this.#service = service;
  }

  open(req: SessionOpenRequest): SessionOpenAnswer {
    if (req.role === 'recovery') throw new SessionError(503, 'order entry does not serve recovery sessions');
    const configured = new Set(this.#service.nativeConfig.accounts.map((a) => a.account));
    const unknown = req.accounts.find((a) => !configured.has(a));
    if (unknown !== undefined) throw new SessionError(404, `no account ${unknown} on this gateway (orders.accounts)`);
    const s = this.#service.config.sessions;
    let answer;
    try {
      answer = this.#service.openSession({
        session: req.id,
        ...(req.device !== undefined ? { device: req.device } : {}),
        role: req.role,
        accounts: req.accounts,
        throttle: { ordersPerSecond: s.throttle.ordersPerSecond, burst: s.throttle.burst },
        cancelOnDisconnect: s.cancelOnDisconnect,
        remote: {
          qpn: req.qpn,
          psn: req.psn,
          gid: req.gid,
          mtu: req.mtu,
          ...(req.alternateGid !== undefined ? { alternateGid: req.alternateGid } : {}),
          ...(req.ackHoldUs !== undefined ? { ackHoldUs: req.ackHoldUs } : {}),
        },
      });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === 'EEXIST') throw new SessionError(409, `session "${req.name}" (id ${req.id}) is connected already`);
      if (code === 'EINVAL') throw new SessionError(400, `body: ${(err as Error).message}`);
      throw err;
    }
    this.#names.set(req.id, { name: req.name, accounts: req.accounts });
    return {
      qpn: answer.qpn,
      psn: answer.psn,
      gid: answer.gid,
      mtu: answer.mtu,
      alternateGid: answer.alternateGid ?? null,
      ackHoldUs: answer.ackHoldUs,
      alternateDeviceGid: this.#service.alternateDeviceGid,
      regions: answer.regions.map((r) => ({ name: r.name, account: r.account, addr: r.addr, length: r.length, rkey: r.rkey, access: [...r.access] })),
      layout: this.#service.riskLayout(),
    };
  }

  close(id: number): boolean {
    return this.#service.closeSession(id);
  }

  /** The QP went fatal (an async event): the session is lost, listed with the event as its endedBy until closed or reopened. */
  end(id: number, event: string): boolean {
    const s = this.#service.sessions().find((x) => x.session === id);
    return s !== undefined && this.#service.onAsyncEvent({ type: event, elementId: s.qpn }, s.device);
  }

  /** The risk pages' words: name, offset within the page, meaning. */
  layout(): unknown {
    return this.#service.riskLayout();
  }

  list(): SessionInfo[] {
    return this.#service.sessions().map((s) => {
      const known = this.#names.get(s.session);
      return {
        id: s.session,
        role: s.role,
        device: s.device,
        name: known?.name ?? '',
        state: s.state,
        qpn: s.qpn,
        accounts: known?.accounts ?? [],
        lastAppSeq: BigInt(s.lastAppSeq),
        received: s.received,
        sent: s.sent,
        rnrHeld: s.rnrHeld,
        disconnected: s.disconnected,
        endedBy: s.endedBy,
        activePath: s.activePath,
        pathMigState: s.pathMigState,
        pathMigrations: s.pathMigrations,
      };
    });
  }
}
