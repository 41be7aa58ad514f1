// One pino logger for the process; components take children with a `component`
// binding so a log line says where it came from.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = { level, base: { svc: 'qpgate', pid: process.pid } };
  return destination ? pino(options, destination) : pino(options);
}
