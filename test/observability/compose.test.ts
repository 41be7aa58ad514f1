// compose.yaml (gateway + Prometheus + Grafana) checked for real without a
// Docker engine: the YAML parses, every file it mounts exists (the tokens as
// scripts/compose-setup.sh writes them), the Prometheus config and rules as
// the container sees them pass Debian's promtool, Grafana's provisioning
// points at the stack's Prometheus and at the dashboard, the gateway runs the
// Dockerfile's image with its HEALTHCHECK on the port the gateway loads, and
// the README says the ports the stack listens on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import YAML from 'yaml';
import { loadConfig } from '../../src/gateway/config/load.js';
import { REPO_ROOT } from '../support/paths.js';

interface Service {
  image: string;
  build?: string;
  network_mode?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes: string[];
  healthcheck?: unknown;
  depends_on?: unknown;
}

const compose = YAML.parse(readFileSync(join(REPO_ROOT, 'compose.yaml'), 'utf8')) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const { gateway, prometheus, grafana } = compose.services as Record<'gateway' | 'prometheus' | 'grafana', Service>;

// What scripts/compose-setup.sh writes, in a directory of this test's own (var/compose/ in a checkout).
const setupDir = join(mkdtempSync(join(tmpdir(), 'qpgate-compose-')), 'compose');
const setup = spawnSync('bash', [join(REPO_ROOT, 'scripts/compose-setup.sh'), setupDir], { encoding: 'utf8' });

/** A bind mount's source on this machine (var/compose/ is the setup script's) and its target in the container. */
function binds(s: Service): Array<{ source: string; target: string }> {
  return s.volumes
    .map((v) => v.split(':'))
    .filter(([source]) => source!.startsWith('./'))
    .map(([source, target]) => ({
      source: source!.startsWith('./var/compose/') ? join(setupDir, source!.slice('./var/compose/'.length)) : join(REPO_ROOT, source!),
      target: target!,
    }));
}
const flag = (s: Service, name: string): string | undefined => s.command?.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);

test('compose.yaml has the gateway, Prometheus and Grafana on the host network, each image pinned', () => {
  assert.deepEqual(Object.keys(compose.services).sort(), ['gateway', 'grafana', 'prometheus']);
  for (const [name, s] of Object.entries(compose.services)) {
    assert.equal(s.network_mode, 'host', `${name}: the soft backend's multicast is on the host's loopback`);
    if (name !== 'gateway') assert.match(s.image, /:v?\d+\.\d+\.\d+$/, `${name}: a pinned version`);
  }
  // Every named volume a service uses is declared.
  const named = Object.values(compose.services).flatMap((s) => s.volumes.map((v) => v.split(':')[0]!).filter((src) => !src.startsWith('./')));
  assert.deepEqual([...new Set(named)].sort(), Object.keys(compose.volumes).sort());
});

test('scripts/compose-setup.sh writes the tokens once; a rerun keeps them', () => {
  assert.equal(setup.status, 0, setup.stderr);
  const before = readFileSync(join(setupDir, 'qpgate.yaml'), 'utf8');
  assert.equal(statSync(setupDir).mode & 0o777, 0o700);
  assert.equal(statSync(join(setupDir, 'admin.token')).mode & 0o777, 0o600);
  const again = spawnSync('bash', [join(REPO_ROOT, 'scripts/compose-setup.sh'), setupDir], { encoding: 'utf8' });
  assert.equal(again.status, 0, again.stderr);
  assert.equal(readFileSync(join(setupDir, 'qpgate.yaml'), 'utf8'), before);
});

test('every file compose.yaml mounts exists', () => {
  const missing = Object.values(compose.services).flatMap(binds).filter((b) => !existsSync(b.source));
  assert.deepEqual(missing, []);
});

test("the gateway service runs the Dockerfile's image and health check, with Prometheus's read token", () => {
  assert.equal(gateway.image, 'qpgate');
  assert.equal(gateway.build, '.');
  assert.match(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'), /^# qpgate container image\. Build: docker build -t qpgate \.$/m);
  assert.equal(gateway.healthcheck, undefined, "the image's HEALTHCHECK is the one compose waits for");
  assert.deepEqual(prometheus.depends_on, { gateway: { condition: 'service_healthy' } });
  const plan = spawnSync(process.execPath, [join(REPO_ROOT, 'test/fresh-root/dockerfile-plan.mjs'), join(REPO_ROOT, 'Dockerfile'), 'json'], { encoding: 'utf8' });
  const stages = JSON.parse(plan.stdout) as Array<{ lines: Array<{ op: string; args: string }> }>;
  const health = stages.at(-1)!.lines.find((l) => l.op === 'HEALTHCHECK')!.args;

  // The gateway as compose starts it: --config is the setup script's file, mounted where the command says.
  const configTarget = gateway.command![gateway.command!.indexOf('--config') + 1];
  const mounted = binds(gateway).find((b) => b.target === configTarget);
  assert.ok(mounted, `${configTarget} is mounted`);
  const config = loadConfig({ file: mounted.source, env: {} });
  assert.match(health, new RegExp(`http://${config.control.host}:${config.control.port}/healthz`));
  const read = config.control.tokens.find((t) => t.scope === 'read');
  assert.equal(read?.token, readFileSync(join(setupDir, 'prometheus.token'), 'utf8').trim());
  assert.ok(config.control.tokens.some((t) => t.scope === 'admin' && t.token === readFileSync(join(setupDir, 'admin.token'), 'utf8').trim()));

  const scrape = YAML.parse(readFileSync(join(REPO_ROOT, 'config/prometheus/prometheus.yaml'), 'utf8')) as {
    scrape_configs: Array<{ authorization: { credentials_file: string }; static_configs: Array<{ targets: string[] }> }>;
  };
  assert.deepEqual(scrape.scrape_configs[0]!.static_configs[0]!.targets, [`${config.control.host}:${config.control.port}`]);
  const tokenMount = binds(prometheus).find((b) => b.target === scrape.scrape_configs[0]!.authorization.credentials_file);
  assert.equal(tokenMount?.source, join(setupDir, 'prometheus.token'));
});

test("Prometheus's config and rules, laid out as its container sees them, pass promtool", () => {
  // The container's files under a directory of ours; absolute paths in the config point into it.
  const root = mkdtempSync(join(tmpdir(), 'qpgate-prometheus-root-'));
  for (const b of binds(prometheus)) {
    mkdirSync(dirname(join(root, b.target)), { recursive: true });
    cpSync(b.source, join(root, b.target));
  }
  const configFile = join(root, flag(prometheus, '--config.file')!);
  const config = YAML.parse(readFileSync(configFile, 'utf8')) as { scrape_configs: Array<{ authorization: { credentials_file: string } }> };
  for (const s of config.scrape_configs) s.authorization.credentials_file = join(root, s.authorization.credentials_file);
  writeFileSync(configFile, YAML.stringify(config));
  const check = spawnSync('promtool', ['check', 'config', configFile], { encoding: 'utf8' });
  assert.equal(check.status, 0, `promtool check config: ${check.stdout}${check.stderr}`);
  assert.match(check.stdout, /SUCCESS: 1 rule files found/);
  const rules = spawnSync('promtool', ['check', 'rules', join(dirname(configFile), 'alerts.yaml')], { encoding: 'utf8' });
  assert.equal(rules.status, 0, `promtool check rules: ${rules.stdout}${rules.stderr}`);
});

test("Grafana's provisioning points at the stack's Prometheus and loads config/grafana/dashboard.json", () => {
  const mounted = (target: string) => binds(grafana).find((b) => b.target === target)?.source;
  const datasources = mounted('/etc/grafana/provisioning/datasources')!;
  const ds = YAML.parse(readFileSync(join(datasources, 'prometheus.yaml'), 'utf8')) as { datasources: Array<{ type: string; url: string; isDefault: boolean }> };
  assert.deepEqual(
    ds.datasources.map((d) => [d.type, d.url, d.isDefault]),
    [['prometheus', `http://${flag(prometheus, '--web.listen-address')}`, true]],
  );
  const providers = mounted('/etc/grafana/provisioning/dashboards')!;
  const dp = YAML.parse(readFileSync(join(providers, 'qpgate.yaml'), 'utf8')) as { providers: Array<{ type: string; options: { path: string } }> };
  const dashboard = binds(grafana).find((b) => b.source === join(REPO_ROOT, 'config/grafana/dashboard.json'));
  assert.ok(dashboard, 'config/grafana/dashboard.json is mounted');
  assert.deepEqual(dp.providers.map((p) => [p.type, p.options.path]), [['file', dirname(dashboard.target)]]);
  const json = JSON.parse(readFileSync(dashboard.source, 'utf8')) as { uid: string; templating: { list: Array<{ name: string; type: string; query: unknown }> } };
  assert.deepEqual(
    json.templating.list.filter((v) => v.type === 'datasource').map((v) => v.query),
    ['prometheus'],
    "the dashboard's datasource variable selects a Prometheus (the provisioned one is the default)",
  );
});

test("the README's compose section says how to start the stack and where each service listens", () => {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('## Monitoring with Docker Compose');
  assert.ok(start > 0, 'a "Monitoring with Docker Compose" section');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 5));
  assert.match(section, /bash scripts\/compose-setup\.sh/);
  assert.match(section, /docker compose up -d/);
  const config = loadConfig({ file: join(setupDir, 'qpgate.yaml'), env: {} });
  for (const url of [
    `http://${config.control.host}:${config.control.port}`,
    `http://${flag(prometheus, '--web.listen-address')}`,
    `http://${grafana.environment!['GF_SERVER_HTTP_ADDR']}:${grafana.environment!['GF_SERVER_HTTP_PORT']}`,
  ]) {
    assert.ok(section.includes(url), `the README's compose section names ${url}`);
  }
});
