// The gateway side of the recovery handshake: a session provider for role
// 'recovery' (the POST /v1/sessions route dispatches to it by role;
// docs/protocol.md §2.8). Opening a session creates an RC QP on the
// feed's publisher (its own PD and buffers, in RTS towards the subscriber's
// QP) that answers retransmission and snapshot requests for the entitled
// channels, throttled per session; closing it takes the QP to ERR.
//
import { SessionError, type SessionInfo, type SessionOpenAnswer, type SessionOpenRequest, type SessionProvider, type SessionRole } from '../common/session-provider.js';
import type { FeedPublisher } from './publisher.js';
import type { NativeRecoverySession, RecoveryLimits } from './native.js';

/** One feed the provider serves: its publisher (while it runs) and channel ids. */
export interface RecoveryFeed {
  publisher(): FeedPublisher | undefined;
  readonly channels: readonly number[];
}

/** Feeds by name; the gateway's feed registry (feeds come and go) or a fixed Map. */
export type RecoveryFeeds = Pick<ReadonlyMap<string, RecoveryFeed>, 'get'>;

export class RecoverySessionProvider implements SessionProvider {
  readonly roles: readonly SessionRole[] = ['recovery'];
  readonly #feeds: RecoveryFeeds;
  readonly #limits: RecoveryLimits | undefined;
  readonly #alternateDeviceGid: string | null;
  readonly #open = new Map<number, { feed: string; name: string }>();

  /**
   * `alternateDeviceGid`: the GID of the gateway's alternate device (backend.alternateDevice), where a subscriber's
   * recovery session fails over to (its feeds' publishers were made with it); null without one.
   */
  constructor(feeds: RecoveryFeeds, options: { limits?: RecoveryLimits; alternateDeviceGid?: string | null } = {}) {
    this.#feeds = feeds;
    this.#limits = options.limits;
    this.#alternateDeviceGid = options.alternateDeviceGid ?? null;
  }

  open(req: SessionOpenRequest): SessionOpenAnswer {
    if (req.role !== 'recovery') throw new SessionError(400, `role: the recovery provider does not serve '${req.role}'`);
    if (req.device === 'alternate' && this.#alternateDeviceGid === null) {
      throw new SessionError(400, 'body/device: this gateway has no alternate device (backend.alternateDevice); leave device out or give "primary"');
    }
    const name = req.feed ?? 'default';
    const feed = this.#feeds.get(name);
    if (feed === undefined) throw new SessionError(404, `feed: unknown feed '${name}'`);
    const publisher = feed.publisher();
    if (publisher === undefined) throw new SessionError(503, `feed '${name}' is not publishing`);
    if (req.channels.length === 0) throw new SessionError(400, 'channels: at least one channel is needed');
    for (const c of req.channels) {
      if (!feed.channels.includes(c)) throw new SessionError(400, `channels: feed '${name}' has no channel ${c}`);
    }
    if (this.#open.has(req.id)) {
      // Same token and name again: refused while connected; a session whose QP is gone is replaced.
      const old = this.counters().find((s) => s.id === req.id)?.native;
      if (old !== undefined && old.state === 'RTS') throw new SessionError(409, `session ${req.id} is already connected`);
      this.close(req.id);
    }
    let answer;
    try {
      answer = publisher.openRecoverySession({
        session: req.id,
        channels: req.channels,
        remote: { qpn: req.qpn, psn: req.psn, gid: req.gid, mtu: req.mtu, ...(req.alternateGid !== undefined ? { alternateGid: req.alternateGid } : {}) },
        ...(this.#limits ? { limits: this.#limits } : {}),
        ...(req.device !== undefined ? { device: req.device } : {}),
      });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      throw new SessionError(/already open/.test(message) ? 409 : 400, message);
    }
    this.#open.set(req.id, { feed: name, name: req.name });
    return { ...answer, alternateGid: answer.alternateGid ?? null, regions: [], alternateDeviceGid: this.#alternateDeviceGid };
  }

  close(id: number): boolean {
    const s = this.#open.get(id);
    if (s === undefined) return false;
    this.#open.delete(id);
    return this.#feeds.get(s.feed)?.publisher()?.closeRecoverySession(id) ?? false;
  }

  /** Open sessions with their native counters (what the metrics export). */
  counters(): Array<{ id: number; name: string; feed: string; native: NativeRecoverySession | undefined }> {
    const out: Array<{ id: number; name: string; feed: string; native: NativeRecoverySession | undefined }> = [];
    const byFeed = new Map<string, NativeRecoverySession[]>();
    for (const [id, s] of this.#open) {
      let sessions = byFeed.get(s.feed);
      if (sessions === undefined) {
        sessions = this.#feeds.get(s.feed)?.publisher()?.recoverySessions() ?? [];
        byFeed.set(s.feed, sessions);
      }
      out.push({ id, name: s.name, feed: s.feed, native: sessions.find((x) => x.session === id) });
    }
    return out;
  }

  list(): SessionInfo[] {
    return this.counters().map(({ id, name, feed, native }) => {
      const { session: _session, qpn, state, ...counters } = native ?? { session: id, qpn: 0, state: 'CLOSED' };
      return { id, role: 'recovery' as const, name, feed, state, qpn, ...counters };
    });
  }
}
