// GET /v1/log-level (read) and PUT /v1/log-level (admin): the pino level of
// the running gateway, changed without a restart.
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { GatewayState } from '../../state.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const LogLevelBody = Type.Object(
  { level: Type.Unsafe<(typeof LOG_LEVELS)[number]>({ type: 'string', enum: [...LOG_LEVELS] }) },
  { additionalProperties: false },
);

const Level = Type.Unsafe<(typeof LOG_LEVELS)[number]>({ type: 'string', enum: [...LOG_LEVELS] });

export async function logLevelRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  const { state } = opts;
  app.get(
    '/log-level',
    { schema: { tags: ['log'], summary: 'the pino level', response: { 200: Type.Object({ level: Level }, { additionalProperties: false }) } } },
    async () => ({ level: state.logger.level }));
  app.put<{ Body: Static<typeof LogLevelBody> }>('/log-level', {
      schema: {
        tags: ['log'],
        summary: 'change the pino level without a restart',
        description: 'The body is `{"level": "debug"}`; the answer has the level before.',
        body: LogLevelBody,
        response: { 200: Type.Object({ level: Level, previous: Level }, { additionalProperties: false }) },
      },
    }, async (request) => {
    const previous = state.logger.level;
    state.logger.level = request.body.level;
    app.log.level = request.body.level;
    request.log.warn({ previous, level: request.body.level, by: request.principal?.name }, 'log level changed');
    return { level: state.logger.level, previous };
  });
}
