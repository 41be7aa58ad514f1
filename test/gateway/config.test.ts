import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/gateway/config/load.js';

const noEnv = {};

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.problems;
  }
  assert.fail('expected the configuration to be rejected');
}

function writeYaml(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'qpgate-config-'));
  const path = join(dir, 'config.yaml');
  writeFileSync(path, text);
  return path;
}

test('the embedded default is the soft backend on loopback with the control plane on loopback', () => {
  const config = loadConfig({ env: noEnv });
  assert.equal(config.backend.kind, 'soft');
  assert.equal(config.backend.device, 'lo');
  assert.equal(config.backend.address, '127.0.0.1');
  assert.equal(config.control.host, '127.0.0.1');
  assert.equal(config.engine.idleStrategy, 'auto');
});

test('a config file overrides only the keys it names', () => {
  const file = writeYaml('control:\n  port: 9000\nengine:\n  backoff:\n    spins: 5\n');
  const config = loadConfig({ file, env: noEnv });
  assert.equal(config.control.port, 9000);
  assert.equal(config.control.host, '127.0.0.1');
  assert.equal(config.engine.backoff.spins, 5);
  assert.equal(config.engine.backoff.yields, 10);
});

test('QPGATE_<SECTION>__<KEY> environment variables override the file, camel-cased', () => {
  const file = writeYaml('control:\n  port: 9000\n');
  const config = loadConfig({
    file,
    env: { QPGATE_CONTROL__PORT: '9100', QPGATE_ENGINE__IDLE_STRATEGY: 'spin', QPGATE_ENGINE__CPUS: '[1]' },
  });
  assert.equal(config.control.port, 9100);
  assert.equal(config.engine.idleStrategy, 'spin');
  assert.deepEqual(config.engine.cpus, [1]);
});

test('environment variables without a section separator are not config', () => {
  const config = loadConfig({ env: { QPGATE_FUZZ_SECONDS: '5', QPGATE_REQUIRE_IBV: '1' } });
  assert.equal(config.control.port, 7470);
});

test('--set overrides the environment', () => {
  const config = loadConfig({ env: { QPGATE_CONTROL__PORT: '9100' }, overrides: ['control.port=9200'] });
  assert.equal(config.control.port, 9200);
});

test('a string key keeps digits verbatim: a numeric token stays a string', () => {
  const config = loadConfig({
    env: noEnv,
    overrides: ['control.tokens=[{name: ops, scope: admin, token: "12345678901234567890"}]'],
  });
  assert.equal(config.control.tokens[0]?.token, '12345678901234567890');
});

test('a wrong type names the key, what was expected, the value and where it came from', () => {
  const problems = problemsOf(() => loadConfig({ env: { QPGATE_CONTROL__PORT: 'eighty' } }));
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /^control\.port \(from environment QPGATE_CONTROL__PORT\): expected integer, got "eighty"$/);
});

test('an enum value outside its choices lists the choices', () => {
  const problems = problemsOf(() => loadConfig({ env: noEnv, overrides: ['engine.idleStrategy=fast'] }));
  assert.match(problems[0]!, /engine\.idleStrategy \(from --set engine\.idleStrategy=fast\): expected one of 'auto', 'spin', 'yield', 'backoff', got "fast"/);
});

test('an out-of-range port is rejected', () => {
  const problems = problemsOf(() => loadConfig({ env: noEnv, overrides: ['control.port=70000'] }));
  assert.match(problems[0]!, /^control\.port .*expected integer to be less or equal to 65535, got 70000$/);
});

test('an unknown key in a file is rejected by name', () => {
  const file = writeYaml('engine:\n  idleStrategey: spin\n');
  const problems = problemsOf(() => loadConfig({ file, env: noEnv }));
  assert.deepEqual(problems, [`engine.idleStrategey (from ${file}): unknown key`]);
});

test('an unknown key from the environment is rejected and the known keys are listed', () => {
  const problems = problemsOf(() => loadConfig({ env: { QPGATE_CONTROL__PROT: '1' } }));
  assert.match(problems[0]!, /^control\.prot \(environment QPGATE_CONTROL__PROT\): unknown key; known keys are .*control\.port/);
});

test('a ring size that is not a power of two is rejected', () => {
  const problems = problemsOf(() => loadConfig({ env: noEnv, overrides: ['engine.ringBytes=12288'] }));
  assert.match(problems[0]!, /engine\.ringBytes .*expected a power of two, got 12288/);
});

test('an invalid IPv4 address for the soft device is rejected', () => {
  const problems = problemsOf(() => loadConfig({ env: noEnv, overrides: ['backend.address=127.0.0.256'] }));
  assert.match(problems[0]!, /^backend\.address .*expected the IPv4 address this soft device owns/);
});

test('a file that is not YAML is rejected with the parser message', () => {
  const file = writeYaml('control: [unclosed\n');
  const problems = problemsOf(() => loadConfig({ file, env: noEnv }));
  assert.match(problems[0]!, /is not valid YAML/);
});

test('a missing config file is reported', () => {
  const problems = problemsOf(() => loadConfig({ file: '/nonexistent/qpgate.yaml', env: noEnv }));
  assert.match(problems[0]!, /cannot read config file \/nonexistent\/qpgate\.yaml/);
});

test('tokens shorter than 16 characters are rejected', () => {
  const problems = problemsOf(() =>
    loadConfig({ env: noEnv, overrides: ['control.tokens=[{name: ops, scope: admin, token: short}]'] }),
  );
  assert.match(problems[0]!, /^control\.tokens\.0\.token .*expected a secret of at least 16 characters/);
});

test('backend.alternateDevice is for ibv and must name a second device', () => {
  const soft = problemsOf(() => loadConfig({ env: noEnv, overrides: ['backend.alternateDevice=rxe1'] }));
  assert.deepEqual(soft, [
    `backend.alternateDevice (from --set backend.alternateDevice=rxe1): only for backend.kind 'ibv' (a second RDMA device), got "rxe1" with kind 'soft'; the soft backend's second link is backend.alternateAddress`,
  ]);
  const same = problemsOf(() => loadConfig({ env: noEnv, overrides: ['backend.kind=ibv', 'backend.device=rxe0', 'backend.alternateDevice=rxe0'] }));
  assert.deepEqual(same, ['backend.alternateDevice (from --set backend.alternateDevice=rxe0): expected a device other than backend.device, got "rxe0" for both']);
  const ok = loadConfig({ env: noEnv, overrides: ['backend.kind=ibv', 'backend.device=rxe0', 'backend.alternateDevice=rxe1'] });
  assert.equal(ok.backend.alternateDevice, 'rxe1');
});
