// The extension points /v1/feeds and /v1/sessions: the feed service and the
// order-session service register their routes here when they exist in
// GatewayState. Until then every /v1/<feature> route answers 404 with a
// message saying the feature is not enabled (after auth, like any /v1 route).
import type { FastifyInstance } from 'fastify';
import type { ControlExtension, GatewayState } from '../../state.js';

export const EXTENSIONS = ['feeds', 'sessions'] as const;
export type ExtensionName = (typeof EXTENSIONS)[number];

export const notEnabledMessage = (name: ExtensionName): string =>
  name === 'feeds' ? 'feeds are not enabled in this gateway yet' : 'order sessions are not enabled in this gateway yet';

export async function extensionRoutes(app: FastifyInstance, opts: { state: GatewayState }): Promise<void> {
  for (const name of EXTENSIONS) {
    const ext: ControlExtension | undefined = opts.state[name];
    if (ext) {
      await app.register(ext.routes, { prefix: `/${name}`, state: opts.state });
      continue;
    }
    const notEnabled = async (_request: unknown, reply: import('fastify').FastifyReply) =>
      reply.code(404).send({ error: 'not_enabled', message: notEnabledMessage(name) });
    app.all(`/${name}`, notEnabled);
    app.all(`/${name}/*`, notEnabled);
  }
}
