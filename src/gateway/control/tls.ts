// https for the control plane: control.tls names a PEM certificate and key
// (and optionally a CA for client certificates), read once at start and
// checked before anything else starts, so a wrong file is one line at exit 2
// rather than a handshake failure seen by every client later. A control.host
// off loopback without TLS is refused (its bearer tokens and the sessions'
// rkeys would cross the network in the clear) unless
// control.allowPlaintextOnNetwork says to accept that.
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { ControlTlsConfig, GatewayConfig } from '../config/schema.js';

/** A control.tls file that cannot serve: one line, naming the key, the file and the fix. */
export class TlsConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TlsConfigError';
  }
}

/** What Node's https server is given (tls.createSecureContext options). */
export interface HttpsOptions {
  cert: string;
  key: string;
  ca?: string;
  requestCert: boolean;
  /**
   * Always false: with clientCaFile the connection is taken even when the client's
   * certificate does not verify, and refused with a reason in the first request
   * (client-certificates.ts); without it no client certificate is asked for.
   */
  rejectUnauthorized: boolean;
}

/** The control plane's TLS state as /v1/device and `qpgate status` show it. */
export interface TlsReport {
  enabled: boolean;
  certFile?: string;
  subject?: string;
  issuer?: string;
  validFrom?: string;
  validTo?: string;
  fingerprint256?: string;
  /** 'required' with control.tls.clientCaFile (mutual TLS), else 'not requested'. */
  clientCertificates?: 'required' | 'not requested';
}

export interface ControlTls {
  https: HttpsOptions;
  report: TlsReport;
}

export const PLAINTEXT_REPORT: TlsReport = { enabled: false };

/** 127.0.0.0/8, ::1 (and its IPv4-mapped form) and `localhost`: the hosts only this machine reaches. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice('::ffff:'.length) : h;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/** Config problems of control.tls and control.host that need no file read (load.ts validates with these). */
export function controlTlsProblems(control: GatewayConfig['control'], origin: (key: string) => string): string[] {
  const { certFile, keyFile, clientCaFile } = control.tls;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    const [given, missing] = certFile === undefined ? ['keyFile', 'certFile'] : ['certFile', 'keyFile'];
    return [`control.tls.${given}${origin(`control.tls.${given}`)}: set without control.tls.${missing}; https needs both (or neither, for http)`];
  }
  if (clientCaFile !== undefined && certFile === undefined) {
    return [`control.tls.clientCaFile${origin('control.tls.clientCaFile')}: client certificates need https: set control.tls.certFile and control.tls.keyFile too`];
  }
  if (certFile === undefined && !isLoopbackHost(control.host) && !control.allowPlaintextOnNetwork) {
    return [
      `control.host${origin('control.host')}: ${JSON.stringify(control.host)} is not loopback and control.tls is not set: ` +
        'tokens would cross the network in the clear; set control.tls.certFile and control.tls.keyFile ' +
        '(or control.allowPlaintextOnNetwork=true to accept that)',
    ];
  }
  return [];
}

function readPem(key: string, path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new TlsConfigError(`control.tls.${key}: no such file ${path}: give the path of the ${what}`);
    throw new TlsConfigError(`control.tls.${key}: cannot read ${path} (${code ?? (err as Error).message}): make it readable by the gateway's user`);
  }
}

function parseCertificate(key: string, path: string, pem: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (err) {
    throw new TlsConfigError(`control.tls.${key}: ${path} is not a PEM certificate (${(err as Error).message}): expected -----BEGIN CERTIFICATE-----`);
  }
}

function parseKey(path: string, pem: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (err) {
    throw new TlsConfigError(
      `control.tls.keyFile: ${path} is not an unencrypted PEM private key (${(err as Error).message}): an encrypted key can be decrypted with \`openssl pkey -in ${path} -out <file>\``,
    );
  }
}

function checkValidity(path: string, cert: X509Certificate, now: Date): void {
  const from = new Date(cert.validFrom);
  const to = new Date(cert.validTo);
  if (now > to) {
    throw new TlsConfigError(`control.tls.certFile: the certificate in ${path} expired on ${to.toISOString()}: renew it and point control.tls.certFile at the new one`);
  }
  if (now < from) {
    throw new TlsConfigError(`control.tls.certFile: the certificate in ${path} is not valid before ${from.toISOString()}: check this host's clock or the certificate's notBefore`);
  }
}

/** Reads and checks control.tls's files (undefined: http). Throws TlsConfigError on the first problem. */
export function loadControlTls(tls: ControlTlsConfig, now = new Date()): ControlTls | undefined {
  if (tls.certFile === undefined || tls.keyFile === undefined) return undefined;
  const certPem = readPem('certFile', tls.certFile, 'PEM certificate the control plane serves');
  const keyPem = readPem('keyFile', tls.keyFile, "PEM private key of control.tls.certFile's certificate");
  const cert = parseCertificate('certFile', tls.certFile, certPem);
  const key = parseKey(tls.keyFile, keyPem);
  if (!cert.checkPrivateKey(key)) {
    throw new TlsConfigError(`control.tls.keyFile: the key in ${tls.keyFile} does not match the certificate in ${tls.certFile}: give the key the certificate was issued for`);
  }
  checkValidity(tls.certFile, cert, now);
  let ca: string | undefined;
  if (tls.clientCaFile !== undefined) {
    ca = readPem('clientCaFile', tls.clientCaFile, 'PEM CA bundle that signs client certificates');
    parseCertificate('clientCaFile', tls.clientCaFile, ca);
  }
  return {
    https: { cert: certPem, key: keyPem, ...(ca === undefined ? {} : { ca }), requestCert: ca !== undefined, rejectUnauthorized: false },
    report: {
      enabled: true,
      certFile: tls.certFile,
      subject: cert.subject.replace(/\n/g, ', '),
      issuer: cert.issuer.replace(/\n/g, ', '),
      validFrom: new Date(cert.validFrom).toISOString(),
      validTo: new Date(cert.validTo).toISOString(),
      fingerprint256: cert.fingerprint256,
      clientCertificates: ca === undefined ? 'not requested' : 'required',
    },
  };
}
