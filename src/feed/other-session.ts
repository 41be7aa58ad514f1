// Two gateways on one host publishing to the same groups (the default
// 239.77.0.1/2): a channel's arbiter follows the feed session it saw last
// and drops the other one's frames (native/src/feed/arbiter.h,
// other_session_frames), so a subscriber can stop receiving the ticks it
// wants without any gap. A restarted gateway leaves a few frames of its old
// session in flight, never a second's worth: frames of the other session
// counted in two checks a second apart mean a second publisher, and the
// subscriber warns (FeedSubscriber's 'warning' event, once per channel).

export const OTHER_SESSION_WARNING = 'frames of another feed session on this group: is a second gateway publishing to it?';

export interface FeedWarning {
  readonly channel: number;
  /** Frames of the other session dropped so far on this channel. */
  readonly otherSessionFrames: number;
  /** The feed session this channel follows. */
  readonly session: number;
  readonly message: string;
}

interface ChannelCount {
  readonly id: number;
  readonly otherSessionFrames: number;
  readonly session: number;
}

export class OtherSessionWatch {
  readonly #seen = new Map<number, { frames: number; rose: boolean; warned: boolean }>();

  /** One check (call once a second): the warnings of channels whose count rose this check and the one before. */
  check(channels: readonly ChannelCount[]): FeedWarning[] {
    const out: FeedWarning[] = [];
    for (const c of channels) {
      const was = this.#seen.get(c.id) ?? { frames: 0, rose: false, warned: false };
      const rose = c.otherSessionFrames > was.frames;
      const warn = rose && was.rose && !was.warned;
      this.#seen.set(c.id, { frames: c.otherSessionFrames, rose, warned: was.warned || warn });
      if (warn) {
        const message = `channel ${c.id}: ${c.otherSessionFrames} ${OTHER_SESSION_WARNING} (this subscriber follows session ${c.session})`;
        out.push({ channel: c.id, otherSessionFrames: c.otherSessionFrames, session: c.session, message });
      }
    }
    return out;
  }
}
