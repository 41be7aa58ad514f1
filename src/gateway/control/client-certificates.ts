// Mutual TLS (control.tls.clientCaFile): the https server asks every client
// for a certificate but takes the connection whether or not it verifies
// (rejectUnauthorized: false, tls.ts), so that a refused client is told why
// in the one error shape ("the client certificate CN=desk-8 expired on ...")
// rather than seeing a connection closed mid-handshake and guessing. Nothing
// runs for such a connection: this hook answers 401 before authentication,
// body parsing or any route, and closes it. Each refusal is counted with the
// handshake failures, by the verification error's code.
import type { FastifyInstance } from 'fastify';
import { TLSSocket } from 'node:tls';
import { CLIENT_CERTIFICATE_REFUSED, sendError } from './errors.js';

export interface ClientCertificateRefusal {
  /** OpenSSL's verification result as Node names it (CERT_HAS_EXPIRED, ...), or NO_CLIENT_CERTIFICATE. */
  reason: string;
  message: string;
}

/** Installs the hook on `app` (before its routes); `count` is told each refusal's reason. */
export function refuseUnverifiedClients(app: FastifyInstance, count: (reason: string) => void): void {
  app.addHook('onRequest', async (request, reply) => {
    const socket = request.raw.socket;
    if (!(socket instanceof TLSSocket) || socket.authorized) return;
    const refusal = clientCertificateRefusal(socket);
    count(refusal.reason);
    request.log.info({ reason: refusal.reason, remote: request.ip }, 'client certificate refused');
    reply.header('connection', 'close');
    return sendError(reply, 401, refusal.message, CLIENT_CERTIFICATE_REFUSED);
  });
}

/** Why the client certificate of an unauthorized `socket` is refused, in words its owner can act on. */
export function clientCertificateRefusal(socket: TLSSocket): ClientCertificateRefusal {
  const cert = socket.getPeerCertificate();
  if (cert === null || Object.keys(cert).length === 0) {
    return { reason: 'NO_CLIENT_CERTIFICATE', message: 'this gateway requires a client certificate (control.tls.clientCaFile) and none was presented: present one its CA signed' };
  }
  const subject = cert.subject?.CN !== undefined ? `CN=${String(cert.subject.CN)}` : 'presented';
  const reason = String(socket.authorizationError ?? 'UNVERIFIED');
  if (reason === 'CERT_HAS_EXPIRED') {
    return { reason, message: `the client certificate ${subject} expired on ${new Date(cert.valid_to).toISOString()}: renew it` };
  }
  if (reason === 'CERT_NOT_YET_VALID') {
    return { reason, message: `the client certificate ${subject} is not valid before ${new Date(cert.valid_from).toISOString()}: check its notBefore and the clocks of both hosts` };
  }
  return { reason, message: `the client certificate ${subject} did not verify (${reason}): present one signed by the CA in this gateway's control.tls.clientCaFile` };
}
