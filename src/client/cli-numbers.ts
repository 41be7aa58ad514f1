// Numbers given on the command line (`--http-timeout 500`, `--seconds 1.5`),
// checked the same way by every command: one ClientError line naming the
// flag, what it takes and what it got (exit 1: src/gateway/cli.ts).
import { ClientError } from './client-error.js';

/** `text` as a whole number lo..hi; `takes` says what it is ("a whole number of milliseconds", "an IBA timeout code"). */
export function wholeNumberOption(text: string, flag: string, lo: number, hi: number, takes: string): number {
  const n = Number(text);
  if (!/^[0-9]+$/.test(text) || n < lo || n > hi) {
    throw new ClientError(`${flag} must be ${takes} from ${lo} to ${hi}, got ${JSON.stringify(text)}`);
  }
  return n;
}

/** `text` as seconds, a decimal number: more than 0, or 0 and more when `zero` is allowed (what 0 means is the flag's). */
export function secondsOption(text: string, flag: string, zero: 'zero allowed' | 'positive'): number {
  const s = Number(text);
  const ok = text.trim() !== '' && Number.isFinite(s) && (zero === 'zero allowed' ? s >= 0 : s > 0);
  if (!ok) {
    const range = zero === 'zero allowed' ? '0 or more' : 'more than 0';
    throw new ClientError(`${flag} must be a number of seconds, ${range} (1.5 is fine), got ${JSON.stringify(text)}`);
  }
  return s;
}
