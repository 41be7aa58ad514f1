// A loopback address of its own for each gateway a test starts: a soft device
// owns <address>:4791, and other suites (or engineers) may be running theirs.
import { randomInt } from 'node:crypto';

export function freeLoopbackAddress(): string {
  return `127.${randomInt(100, 250)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
}
