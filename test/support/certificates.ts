// Real certificates for the TLS tests, made by Debian's `openssl` CLI
// (scripts/setup.sh installs it): a CA, a gateway certificate it signed for
// 127.0.0.1, one that expired in 2020, a client certificate and one that
// expired in 2020, and a second CA that signed none of them; and, on demand,
// a gateway certificate that expires in a few seconds (shortLived).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  dir: string;
  ca: string;
  otherCa: string;
  gateway: { cert: string; key: string };
  expired: { cert: string; key: string };
  client: { cert: string; key: string };
  expiredClient: { cert: string; key: string };
}

const SERVER = 'subjectAltName = IP:127.0.0.1, DNS:localhost\nextendedKeyUsage = serverAuth';
const CLIENT = 'extendedKeyUsage = clientAuth';

const openssl = (cwd: string, ...args: string[]): void => void execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

function selfSignedCa(dir: string, name: string): void {
  openssl(dir, 'req', '-x509', ...EC, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-subj', `/CN=${name}`, '-days', '2');
}

/** `openssl ca` (not `x509 -req`, which in OpenSSL 3.0 cannot date a certificate in the past). */
function signed(dir: string, name: string, cn: string, extensions: string, dates: { start: string; end: string } | { days: number }): { cert: string; key: string } {
  openssl(dir, 'req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
  writeFileSync(join(dir, `${name}.ext`), `[ext]\n${extensions}\n`);
  const validity = 'days' in dates ? ['-days', String(dates.days)] : ['-startdate', dates.start, '-enddate', dates.end];
  openssl(dir, 'ca', '-batch', '-config', 'ca.cnf', '-cert', 'ca.crt', '-keyfile', 'ca.key', '-in', `${name}.csr`, '-out', `${name}.crt`,
    '-notext', '-extfile', `${name}.ext`, '-extensions', 'ext', ...validity);
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

export function makeCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-tls-'));
  mkdirSync(join(dir, 'db'));
  writeFileSync(join(dir, 'db', 'index.txt'), '');
  writeFileSync(join(dir, 'db', 'serial'), '01\n');
  writeFileSync(
    join(dir, 'ca.cnf'),
    '[ca]\ndefault_ca = test\n[test]\ndatabase = db/index.txt\nnew_certs_dir = db\nserial = db/serial\ndefault_md = sha256\npolicy = any\nunique_subject = no\n[any]\ncommonName = supplied\n',
  );
  selfSignedCa(dir, 'ca');
  selfSignedCa(dir, 'other-ca');
  return {
    dir,
    ca: join(dir, 'ca.crt'),
    otherCa: join(dir, 'other-ca.crt'),
    gateway: signed(dir, 'gateway', 'qpgate-gateway', SERVER, { days: 2 }),
    expired: signed(dir, 'expired', 'qpgate-expired', SERVER, { start: '20200101000000Z', end: '20200102000000Z' }),
    client: signed(dir, 'client', 'desk-7', CLIENT, { days: 2 }),
    expiredClient: signed(dir, 'expired-client', 'desk-8', CLIENT, { start: '20200101000000Z', end: '20200102000000Z' }),
  };
}

/** A gateway certificate of `certs`' CA, valid from an hour ago until `seconds` from now. */
export function shortLived(certs: TestCertificates, name: string, seconds: number): { cert: string; key: string; validTo: Date } {
  const validTo = new Date(Math.floor(Date.now() / 1000 + seconds) * 1000);
  const pair = signed(certs.dir, name, `qpgate-${name}`, SERVER, { start: opensslTime(new Date(Date.now() - 3_600_000)), end: opensslTime(validTo) });
  return { ...pair, validTo };
}

/** 2026-12-07T20:41:05.000Z -> 20261207204105Z, the form `openssl ca -startdate/-enddate` takes. */
const opensslTime = (d: Date): string => `${d.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
