// The control plane's one error shape, `{error, message}`: `error` a stable
// code from ERROR_CODES (one per HTTP status), `message` a sentence for a
// person naming what was wrong. Every error path answers it: the routes'
// own refusals, auth (401/403), Fastify's validation (400) and body limits
// (413), unknown routes (404) and anything that throws (500).
//
// Two codes say a feature cannot serve, and they mean different things:
//   not_enabled (404): this gateway does not serve the feature at all — it is
//                      off in the configuration (orders.enabled: false), or for
//                      recovery sessions no feed exists; retrying will not help
//                      until an operator changes the configuration (or, for
//                      recovery, creates a feed).
//   unavailable (503): the feature is on but cannot serve now (the gateway is
//                      shutting down, the named feed is not publishing); a retry
//                      later, or against another gateway, may succeed.
import type { FastifyReply } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';

export const ERROR_CODES = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'too_many_requests',
  500: 'internal',
  503: 'unavailable',
} as const;
export type ErrorStatus = keyof typeof ERROR_CODES;

/** The code of 404s for a feature this gateway does not serve (see above); every other 404 is not_found. */
export const NOT_ENABLED = 'not_enabled';
/** The code of 401s for a client certificate mutual TLS refused (client-certificates.ts); every other 401 is unauthorized. */
export const CLIENT_CERTIFICATE_REFUSED = 'client_certificate_refused';

/** The code for an HTTP status: a client error without a code of its own is bad_request, a server error internal. */
export function errorCode(status: number): string {
  const known = (ERROR_CODES as Record<number, string>)[status];
  if (known !== undefined) return known;
  return status >= 500 ? 'internal' : 'bad_request';
}

export function sendError(reply: FastifyReply, status: ErrorStatus, message: string, error: string = ERROR_CODES[status]): FastifyReply {
  return reply.code(status).send({ error, message });
}

const ALL_ERROR_CODES = [...new Set([...Object.values(ERROR_CODES), NOT_ENABLED, CLIENT_CERTIFICATE_REFUSED])];

export const ErrorBody = Type.Object(
  {
    error: Type.String({ enum: ALL_ERROR_CODES, description: 'a stable code: one per HTTP status, not_enabled for a 404 of a feature this gateway does not serve, and client_certificate_refused for a 401 of mutual TLS' }),
    message: Type.String({ description: 'what was wrong, for a person: names the field, the limit or the missing entitlement' }),
  },
  { $id: 'ErrorBody', additionalProperties: false, description: 'the error shape of every control-plane error' },
);
export type ErrorBody = Static<typeof ErrorBody>;

const DESCRIPTIONS: Record<ErrorStatus, string> = {
  400: 'bad_request: an invalid body, parameter or query; the message names the field (`body/level must be string`)',
  401: 'unauthorized: no bearer token, or an unknown one (also for a /v1 path that does not exist); client_certificate_refused: with control.tls.clientCaFile, no client certificate or one that did not verify (expired, another CA), named in the message',
  403: 'forbidden: the token lacks the scope (a read token on an admin route) or the entitlement (role, account, channel), named in the message',
  404: 'not_found: no such resource; not_enabled: the feature is not served by this gateway (off in the configuration)',
  409: 'conflict: the resource is taken or in use (a name, a group, a connected session, the memory budget)',
  413: 'payload_too_large: the request body is over the control plane\'s body limit (the message gives it in bytes)',
  415: 'unsupported_media_type: a body that is not application/json',
  429: 'too_many_requests: over a cap (control.sessions.maxPerToken / maxTotal / maxNamesPerToken)',
  500: 'internal: an unexpected failure; the gateway log has it',
  503: 'unavailable: the feature is on but cannot serve now (shutting down, a feed not publishing)',
};

/**
 * Response schemas for the given error statuses, for a route's `schema.response` (documentation only: see app.ts):
 * references to ErrorBody, which the control plane adds as a shared schema (components.schemas.ErrorBody in the document).
 */
export function errorResponses(...statuses: ErrorStatus[]): Record<number, unknown> {
  const out: Record<number, unknown> = {};
  for (const s of statuses) out[s] = { description: DESCRIPTIONS[s], $ref: 'ErrorBody#' };
  return out;
}
