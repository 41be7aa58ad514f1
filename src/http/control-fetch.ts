// Every HTTP request a client makes to the control plane (the CLI, the
// OrderClient / RiskClient handshake, a subscriber's recovery handshake) goes
// through controlFetch: an https URL is verified against `ca` (the CA that
// signed the gateway's certificate; default: Node's root store), and a
// certificate that does not verify is an error that says so. Nothing falls
// back to http: the URL's scheme is the only one tried.
import type { Agent } from 'undici';

/** What a client trusts and presents on an https control plane. PEM text, as Node's tls options take it. */
export interface ControlTlsOptions {
  /** The CA (bundle) the gateway's certificate must chain to; default: Node's root CAs. */
  ca?: string | Buffer;
  /** A client certificate and its key, for a gateway with control.tls.clientCaFile (mutual TLS). */
  cert?: string | Buffer;
  key?: string | Buffer;
}

// One agent (its keep-alive connections) per set of options, not one per request.
const agents = new WeakMap<ControlTlsOptions, Agent>();

async function agentFor(tls: ControlTlsOptions): Promise<Agent> {
  let agent = agents.get(tls);
  if (agent === undefined) {
    // Loaded only here: importing the undici package installs its own Agent as the global
    // dispatcher of Node's fetch, which a process that never asks for TLS options must not get
    // (with it, test/orders/client-reconnect.test.ts failed in 4 of 8 runs under load, 0 of 8 without the import).
    const { Agent } = await import('undici');
    const { ca, cert, key } = tls;
    agent = agents.get(tls) ?? new Agent({ connect: { ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) } });
    agents.set(tls, agent);
  }
  return agent;
}

const hasOptions = (tls: ControlTlsOptions | undefined): tls is ControlTlsOptions =>
  tls !== undefined && (tls.ca !== undefined || tls.cert !== undefined || tls.key !== undefined);

/** fetch(), with `tls` applied to an https URL. */
export async function controlFetch(url: string, init: RequestInit, tls?: ControlTlsOptions): Promise<Response> {
  if (!hasOptions(tls) || !url.startsWith('https:')) return fetch(url, init);
  // Node's fetch is undici's: it takes an undici dispatcher (not in lib.dom's RequestInit).
  return fetch(url, { ...init, dispatcher: await agentFor(tls) } as RequestInit);
}

// OpenSSL's verification results (X509_V_ERR_*) and Node's own host-name check, as Node names them.
const CERTIFICATE_ERRORS = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

// A certificate out of its dates verifies against no CA: what to do is the gateway's operator's, or the clock's.
const CERTIFICATE_DATE_HINTS: Record<string, string> = {
  CERT_HAS_EXPIRED: "it has expired: the gateway's operator must renew it (control.tls.certFile) and restart the gateway; no CA option makes it verify",
  CERT_NOT_YET_VALID: "it is not valid yet: check this host's clock against the certificate's notBefore",
};

/** What to tell the user beside the cause: how to trust the gateway's CA, and where to look when nothing answers. */
export interface FailureHints {
  certificate: string;
  /** How to present a client certificate (a gateway with control.tls.clientCaFile closes a connection without one). */
  clientCertificate: string;
  unreachable?: string;
}

/** Why a request to `base` got no answer: one sentence, with what to do about a certificate that did not verify. */
export function fetchFailure(err: unknown, base: string, hints: FailureHints): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code ?? (err as Error).name;
  if (CERTIFICATE_ERRORS.has(code)) {
    return `the certificate of the gateway at ${base} did not verify (${code}: ${cause?.message ?? ''}): ${CERTIFICATE_DATE_HINTS[code] ?? hints.certificate}`;
  }
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) {
    return `the TLS handshake with the gateway at ${base} failed (${code}: ${cause?.message ?? ''})`;
  }
  const closed = code === 'UND_ERR_SOCKET' || code === 'ECONNRESET';
  // TLS 1.3: the server checks the client's certificate after the client's side of the handshake is done.
  if (closed && base.startsWith('https:')) {
    return `the gateway at ${base} closed the connection (${code}): if it requires a client certificate (control.tls.clientCaFile), ${hints.clientCertificate}`;
  }
  // An https server closes a connection that speaks plain http to it.
  const https = closed && base.startsWith('http:') ? ' (if it serves https, use an https:// URL)' : '';
  return `no gateway answers at ${base} (${code})${https}${hints.unreachable ? `: ${hints.unreachable}` : ''}`;
}
