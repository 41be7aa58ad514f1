// A batch of encoded messages for FeedPublisher.publishBatch(): the bytes of
// a FEED_PUBLISH record's message part (docs/protocol.md 2.11), built once
// and copied into the engine's toEngine ring with one set() per call. Reuse
// one batch per channel (clear() after publishing): adding a message writes
// its header and body here, nothing is allocated per message.
//
//   const batch = new MessageBatch();
//   batch.add({ type: MessageType.MESSAGE_TYPE_QUOTE, value: { instrumentId: 1, bidPrice: 100 } });
//   batch.addEncoded({ type, instrumentId, body });   // a body encoded elsewhere
//   pub.publishBatch(1, batch);
//   batch.clear();
import { MESSAGE_HEADER_BYTES, type MessageInput } from './frame.js';
import { encodeMessage, type MarketDataMessage } from './messages.js';
import { PUBLISH_HEADER_BYTES, writeMessage } from './records.js';

/** The most message bytes one batch holds: one toEngine record (as publish() splits them). */
export const MAX_BATCH_BYTES = 32 * 1024 - PUBLISH_HEADER_BYTES;
// Message count is a u16 in the record.
const MAX_BATCH_MESSAGES = 0xffff;

export class MessageBatch {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  #used = 0;
  #count = 0;
  #largestBody = 0;

  /** `capacity`: message bytes (headers + bodies) it holds, at most MAX_BATCH_BYTES (the default). */
  constructor(capacity = MAX_BATCH_BYTES) {
    if (!Number.isInteger(capacity) || capacity < MESSAGE_HEADER_BYTES || capacity > MAX_BATCH_BYTES) {
      throw new RangeError(`MessageBatch: capacity must be an integer ${MESSAGE_HEADER_BYTES}..${MAX_BATCH_BYTES}, got ${capacity}`);
    }
    this.#bytes = new Uint8Array(capacity);
    this.#view = new DataView(this.#bytes.buffer);
  }

  /** Messages in the batch. */
  get count(): number {
    return this.#count;
  }
  /** The encoded messages (a view; valid until the next add or clear). */
  get bytes(): Uint8Array {
    return this.#bytes.subarray(0, this.#used);
  }
  /** The largest body added (publishBatch checks it against the channel's frame size). */
  get largestBody(): number {
    return this.#largestBody;
  }

  /** Encodes `m` (protobuf) into the batch. False when it does not fit (nothing added). */
  add(m: MarketDataMessage): boolean {
    return this.addEncoded(encodeMessage(m));
  }

  /** Adds a message whose body is encoded already. False when it does not fit (nothing added). */
  addEncoded(m: MessageInput): boolean {
    if (m.type <= 0 || m.type > 0xffff) throw new RangeError(`MessageBatch: message type must be 1..65535, got ${m.type}`);
    const len = MESSAGE_HEADER_BYTES + m.body.byteLength;
    if (len > 0xffff) throw new RangeError(`MessageBatch: a ${m.body.byteLength}-byte body is larger than any frame`);
    if (this.#used + len > this.#bytes.byteLength || this.#count === MAX_BATCH_MESSAGES) return false;
    this.#used += writeMessage(this.#bytes, this.#view, this.#used, this.#used, m);
    this.#count++;
    if (m.body.byteLength > this.#largestBody) this.#largestBody = m.body.byteLength;
    return true;
  }

  /** Empties the batch for reuse. */
  clear(): void {
    this.#used = 0;
    this.#count = 0;
    this.#largestBody = 0;
  }
}
