// Logs what went wrong on the engine thread: every fault the engine reports
// (an agent stopped because it threw, a record whose handler threw; engine
// stats().faults) is logged once, at error level, with the agent's name and
// the message. Read from the engine's counters on a timer (no engine round
// trip); the timer does not keep the process alive.
import type { Engine } from './engine.js';

interface FaultLogger {
  error(obj: object, msg: string): void;
}

/** Starts watching; returns the function that stops it. */
export function watchEngineFaults(engine: Engine, log: FaultLogger, intervalMs = 1000): () => void {
  let seen = 0;
  let taskErrors = 0;
  const check = (): void => {
    if (!engine.running) return;
    const s = engine.stats();
    for (const f of s.faults.slice(seen)) {
      log.error({ agent: f.agent, error: f.message, stopped: f.stopped }, f.stopped ? 'engine agent threw and was stopped; the others go on' : 'engine record handler threw; the record was skipped');
    }
    seen = s.faults.length;
    if (s.taskErrors > taskErrors) log.error({ taskErrors: s.taskErrors }, 'engine tasks threw (their callers got the errors)');
    taskErrors = s.taskErrors;
  };
  const timer = setInterval(check, intervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    check();
  };
}
