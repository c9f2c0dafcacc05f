/**
 * The deployment files (Dockerfile, deploy/compose.yaml, deploy/kubernetes/, deploy/systemd/) as
 * far as a machine without a container engine or a cluster can check them: each is parsed, the
 * fields each kind requires are there and agree with each other and with Rampart (its variables,
 * its routes, its install), and the image's health check and the Deployment's probes are asked of
 * a Rampart configured as the image configures it, over HTTP.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../../src/config';
import { alive } from '../support/process';
import { waitFor } from '../support/wait';

const ROOT = path.resolve(__dirname, '..', '..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

// ---------------------------------------------------------------------------------------------
// Parsers: the Dockerfile's instructions, a shell script's commands, a systemd unit (INI).

interface Instruction {
  keyword: string;
  args: string;
  stage: number;
}

/** Dockerfile instructions, continuation lines joined, comments and parser directives dropped. */
function dockerfile(text: string): { stages: { from: string; name: string | null }[]; instructions: Instruction[] } {
  const stages: { from: string; name: string | null }[] = [];
  const instructions: Instruction[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!pending && (line === '' || line.startsWith('#'))) continue;
    if (pending && line.startsWith('#')) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    const full = `${pending}${line}`.trim();
    pending = '';
    const m = /^(\S+)\s+(.*)$/.exec(full);
    if (!m) throw new Error(`not an instruction: ${full}`);
    const keyword = (m[1] as string).toUpperCase();
    const args = m[2] as string;
    if (keyword === 'FROM') {
      const from = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      stages.push({ from: from?.[1] as string, name: from?.[2] ?? null });
    }
    instructions.push({ keyword, args, stage: stages.length - 1 });
  }
  return { stages, instructions };
}

/** The words of a RUN (shell form, flags such as --mount dropped), split into its `&&` commands. */
function runCommands(args: string): string[] {
  return args
    .replace(/^(--\S+\s+)+/, '')
    .split('&&')
    .map((c) => c.trim().replace(/\s+/g, ' '))
    .filter(Boolean);
}

/** ENV instructions (KEY=value form) of one stage. */
function envOf(instructions: Instruction[], stage: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of instructions.filter((x) => x.keyword === 'ENV' && x.stage === stage)) {
    for (const m of i.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) env[m[1] as string] = (m[2] as string).replace(/^"|"$/g, '');
  }
  return env;
}

/** A shell script's commands, one per line (comments, `set`, `cd` and control lines dropped). */
function scriptCommands(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l && !l.startsWith('#') && !/^(set|cd|echo|if|else|fi|then|trap)\b/.test(l) && !/^\w+=/.test(l));
}

/** The section of .ci/run between `echo "== <title>…"` and the next such line. */
function ciSection(text: string, title: string): string[] {
  const out: string[] = [];
  let inside = false;
  for (const line of scriptCommands(text.replace(/^echo "== (.*)"$/gm, '== $1'))) {
    if (line.startsWith('== ')) inside = line.startsWith(`== ${title}`);
    else if (inside) out.push(line);
  }
  return out;
}

/** A systemd unit: section → key → values (a key may repeat). */
function unitFile(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[(\w+)\]$/.exec(line);
    if (section) {
      current = new Map();
      sections.set(section[1] as string, current);
      continue;
    }
    const kv = /^(\w+)=(.*)$/.exec(line);
    if (!kv || !current) throw new Error(`not a unit line: ${line}`);
    current.set(kv[1] as string, [...(current.get(kv[1] as string) ?? []), kv[2] as string]);
  }
  return sections;
}

// ---------------------------------------------------------------------------------------------

const docker = dockerfile(read('Dockerfile'));
const finalStage = docker.stages.length - 1;
const imageEnv = envOf(docker.instructions, finalStage);
const masterKey = randomBytes(32).toString('hex');
const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };

describe('Dockerfile', () => {
  const of = (keyword: string, stage?: number) => docker.instructions.filter((i) => i.keyword === keyword && (stage === undefined || i.stage === stage));

  it('builds in stages: FerretDB with Go, the install with Node, and runs on a slim image', () => {
    expect(docker.stages.length).toBeGreaterThanOrEqual(3);
    const go = docker.stages.findIndex((s) => /^golang:/.test(s.from));
    expect(go).toBeGreaterThanOrEqual(0);
    expect(of('RUN', go).flatMap((r) => runCommands(r.args))).toContain('bash scripts/install-ferretdb.sh');
    expect(docker.stages[finalStage]?.from).toMatch(/^node:20[\w.-]*-slim$/);
    // Built files reach the final stage from the build stages, not from the build context.
    for (const copy of of('COPY', finalStage)) expect(copy.args).toMatch(/^--from=\S+/);
  });

  it('copies from the build context only files that exist, and keeps local installs and data out of it', () => {
    for (const copy of of('COPY').filter((c) => !c.args.startsWith('--from='))) {
      const sources = copy.args.split(/\s+/).slice(0, -1);
      for (const s of sources) expect(s === '.' || existsSync(path.join(ROOT, s))).toBe(true);
    }
    const ignored = read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', '.data', '.tools', '.env', '.git']));
  });

  it("installs exactly as .ci/run does: the same npm ci, whose postinstall is setup.sh, and no step of its own", () => {
    const ciInstall = ciSection(read('.ci/run'), 'install');
    expect(ciInstall).toEqual([expect.stringMatching(/^npm ci\b/)]);
    expect(pkg.scripts.postinstall).toBe('bash scripts/setup.sh');
    expect(pkg.scripts.setup).toBe(pkg.scripts.postinstall);

    const setupSteps = scriptCommands(read('scripts/setup.sh'));
    const runs = of('RUN').flatMap((r) => runCommands(r.args).map((c) => ({ stage: r.stage, c })));
    const project = runs.filter(({ c }) => /^(npm|node|bash scripts\/)/.test(c));
    // The Node stage runs .ci/run's npm ci, word for word, with its scripts.
    const npmCi = project.filter(({ c }) => c.startsWith('npm ci'));
    expect(npmCi.map(({ c }) => c)).toEqual(ciInstall);
    // Every other project step is one setup.sh runs (so one .ci/run runs), or the final prune.
    for (const { c } of project.filter(({ c }) => !c.startsWith('npm ci'))) {
      if (c.startsWith('npm prune')) expect(c).toMatch(/--omit=dev/);
      else expect(setupSteps).toContain(c);
    }
    // And setup.sh runs nothing the image build would not have: only the project's scripts.
    for (const step of setupSteps) expect(step).toMatch(/^(bash scripts\/[\w-]+\.sh|node scripts\/[\w-]+\.js( --if-stale)?)$/);
  });

  it('runs as a numeric non-root user, exposes both doors, keeps its data in a volume, checks its health', () => {
    const user = of('USER', finalStage).at(-1)?.args ?? '';
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    expect(of('EXPOSE', finalStage).flatMap((e) => e.args.split(/\s+/))).toEqual(expect.arrayContaining(['3000', '50051']));
    const volumes = of('VOLUME', finalStage).flatMap((v) => JSON.parse(v.args) as string[]);
    expect(volumes).toContain(imageEnv.RAMPART_DATA_DIR);
    expect(of('HEALTHCHECK', finalStage)).toHaveLength(1);
    const cmd = JSON.parse((of('CMD', finalStage).at(-1)?.args ?? '[]') as string) as string[];
    expect(cmd).toEqual(['node', 'dist/src/main.js']);
    // Every variable the image sets is one Rampart reads (or Node's), and together they are a valid production configuration.
    for (const name of Object.keys(imageEnv)) expect([...CONFIG_VARIABLES, 'NODE_ENV']).toContain(name);
    expect(() => loadConfig({ ...imageEnv, RAMPART_MASTER_KEY: masterKey })).not.toThrow();
    expect(() => loadConfig(imageEnv)).toThrow(/RAMPART_MASTER_KEY/);
  });
});

describe('deploy/compose.yaml', () => {
  type Service = { image?: string; build?: { context: string }; profiles?: string[]; command?: string[]; environment?: Record<string, string>; depends_on?: Record<string, { condition: string }>; volumes?: string[]; ports?: string[]; stop_grace_period?: string };
  const compose = parseYaml(read('deploy/compose.yaml'), { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
  const services = compose.services;
  /** ${VAR:-default} and ${VAR:?message} as compose resolves them with VAR unset (the master key given). */
  const resolve = (env: Record<string, string>) =>
    Object.fromEntries(
      Object.entries(env).map(([k, v]) => [k, v.replace(/\$\{(\w+)(?::-([^}]*)|:\?[^}]*)?\}/g, (_m, name: string, dflt?: string) => (name === 'RAMPART_MASTER_KEY' ? masterKey : (dflt ?? '')))]),
    );

  it('has Rampart on a MongoDB replica set (profile mongodb) and on its embedded database (profile embedded)', () => {
    const rampart = Object.entries(services).filter(([, s]) => s.build);
    expect(rampart.map(([n, s]) => [n, s.profiles])).toEqual([
      ['rampart', ['mongodb']],
      ['rampart-embedded', ['embedded']],
    ]);
    for (const [, s] of rampart) {
      expect(existsSync(path.join(ROOT, 'deploy', s.build?.context as string, 'Dockerfile'))).toBe(true);
      expect(s.ports).toEqual(['127.0.0.1:3000:3000', '127.0.0.1:50051:50051']);
      expect(s.volumes?.[0]).toMatch(new RegExp(`^[\\w-]+:${imageEnv.RAMPART_DATA_DIR}$`));
      expect(compose.volumes).toHaveProperty((s.volumes?.[0] as string).split(':')[0] as string);
      // Longer than Rampart's drain (30 s of writes, 10 s of webhooks).
      expect(parseInt(s.stop_grace_period ?? '10s', 10)).toBeGreaterThan(40);
      const env = resolve(s.environment ?? {});
      for (const name of Object.keys(env)) expect(CONFIG_VARIABLES).toContain(name);
      expect(() => loadConfig({ ...imageEnv, ...env })).not.toThrow();
    }
    expect(services['rampart-embedded']?.environment).not.toHaveProperty('MONGODB_URI');
  });

  it('starts MongoDB as the replica set Rampart names, initiated before Rampart starts', () => {
    const mongo = services.mongo as Service;
    const replSet = mongo.command?.[mongo.command.indexOf('--replSet') + 1];
    expect(replSet).toBeTruthy();
    const uri = new URL(services.rampart?.environment?.MONGODB_URI as string);
    expect(uri.searchParams.get('replicaSet')).toBe(replSet);
    expect(uri.hostname).toBe('mongo');
    const init = services['mongo-init'] as Service;
    expect(init.command?.join(' ')).toContain(`rs.initiate({ _id: '${replSet}', members: [{ _id: 0, host: '${uri.host}' }] })`);
    expect(init.depends_on?.mongo?.condition).toBe('service_healthy');
    expect(services.rampart?.depends_on?.['mongo-init']?.condition).toBe('service_completed_successfully');
    // The driver supports MongoDB 4.2 to 8.2 (mongodb 6.x).
    expect(mongo.image).toMatch(/^mongo:(4\.[24]|[5-7]\.0|8\.[0-2])$/);
  });
});

describe('deploy/kubernetes', () => {
  type Probe = { httpGet: { path: string; port: string; httpHeaders?: { name: string; value: string }[] } };
  type EnvVar = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } } };
  type Container = { name: string; image: string; ports: { name: string; containerPort: number }[]; env: EnvVar[]; envFrom?: { configMapRef: { name: string } }[]; livenessProbe: Probe; readinessProbe: Probe; startupProbe?: Probe; volumeMounts: { name: string; mountPath: string }[] };
  type Manifest = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; spec: Record<string, unknown>; data?: Record<string, string>; resources?: string[] };

  const dir = path.join(ROOT, 'deploy', 'kubernetes');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
  const manifests = files.flatMap((f) => parseAllDocuments(readFileSync(path.join(dir, f), 'utf8')).map((d) => ({ file: f, m: d.toJS() as Manifest })));
  const kind = (k: string) => manifests.filter(({ m }) => m.kind === k).map(({ m }) => m);
  const deployment = kind('Deployment')[0] as Manifest & { spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: { containers: Container[]; securityContext: Record<string, unknown>; terminationGracePeriodSeconds: number; volumes: { name: string }[] } } } };
  const container = deployment.spec.template.spec.containers[0] as Container;
  const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

  it('every document has apiVersion, kind and a name, and kustomization.yaml lists every other file', () => {
    for (const { m } of manifests) {
      expect(m.apiVersion).toMatch(/^[\w./-]+\/v\w+$|^v1$/);
      expect(m.kind).toMatch(/^[A-Z]\w+$/);
      if (m.kind !== 'Kustomization') expect(m.metadata.name).toBe('rampart');
    }
    expect(kind('Kustomization')[0]?.resources?.sort()).toEqual(files.filter((f) => f !== 'kustomization.yaml').sort());
    expect(kind('Deployment')).toHaveLength(1);
  });

  it('probes liveness on /healthz and readiness on /readyz, on the HTTP port', () => {
    const http = container.ports.find((p) => p.name === 'http');
    expect(http?.containerPort).toBe(3000);
    expect(container.ports.find((p) => p.name === 'grpc')?.containerPort).toBe(50051);
    expect(container.livenessProbe.httpGet).toMatchObject({ path: '/healthz', port: 'http' });
    expect(container.readinessProbe.httpGet).toMatchObject({ path: '/readyz', port: 'http' });
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(40);
  });

  it('selects its own pods in the Service and the PodDisruptionBudget, which leaves an instance up', () => {
    const labels = deployment.spec.template.metadata.labels;
    expect(matches(deployment.spec.selector.matchLabels, labels)).toBe(true);
    const service = kind('Service')[0] as Manifest & { spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] } };
    expect(matches(service.spec.selector, labels)).toBe(true);
    for (const p of service.spec.ports) expect(container.ports.map((c) => c.name)).toContain(p.targetPort);
    const pdb = kind('PodDisruptionBudget')[0] as Manifest & { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } };
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(matches(pdb.spec.selector.matchLabels, labels)).toBe(true);
    expect(pdb.spec.minAvailable).toBeGreaterThanOrEqual(1);
    expect(pdb.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });

  it('takes the master key and the database from a Secret, under Rampart’s own variable names, as a valid production configuration', () => {
    const fromSecret = container.env.filter((e) => e.valueFrom?.secretKeyRef);
    expect(fromSecret.filter((e) => !e.valueFrom?.secretKeyRef?.optional).map((e) => e.name).sort()).toEqual(['MONGODB_URI', 'RAMPART_MASTER_KEY']);
    const configMap = kind('ConfigMap').find((c) => c.metadata.name === container.envFrom?.[0]?.configMapRef.name);
    expect(configMap).toBeDefined();
    for (const name of [...container.env.map((e) => e.name), ...Object.keys(configMap?.data ?? {})]) expect(CONFIG_VARIABLES).toContain(name);
    // The Secret's keys are the ones deployment.yaml's instructions create.
    const instructions = read('deploy/kubernetes/deployment.yaml');
    for (const e of fromSecret.filter((x) => !x.valueFrom?.secretKeyRef?.optional)) expect(instructions).toContain(`--from-literal=${e.valueFrom?.secretKeyRef?.key}=`);
    const secrets = { RAMPART_MASTER_KEY: masterKey, MONGODB_URI: 'mongodb://mongo-0.mongo/?replicaSet=rs0' };
    expect(() => loadConfig({ ...imageEnv, ...configMap?.data, ...secrets })).not.toThrow();
  });

  it('runs as the image’s non-root user with a read-only root and its data directory mounted', () => {
    const user = (docker.instructions.filter((i) => i.keyword === 'USER').at(-1)?.args ?? '').split(':')[0];
    expect(deployment.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: Number(user) });
    expect(container.volumeMounts.map((v) => v.mountPath)).toContain(imageEnv.RAMPART_DATA_DIR);
    expect((container as unknown as { securityContext: Record<string, unknown> }).securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
  });
});

describe('deploy/systemd/rampart.service', () => {
  const unit = unitFile(read('deploy/systemd/rampart.service'));
  const service = unit.get('Service') as Map<string, string[]>;
  const one = (key: string) => service.get(key)?.at(-1);

  it('has the three sections and runs the built service as its own user, in its state directory', () => {
    expect([...unit.keys()]).toEqual(['Unit', 'Service', 'Install']);
    expect(unit.get('Install')?.get('WantedBy')).toEqual(['multi-user.target']);
    expect(one('ExecStart')).toMatch(/^\/\S+\/node dist\/src\/main\.js$/);
    expect(one('User')).toMatch(/^(?!root$)\w+$/);
    const env = Object.fromEntries((service.get('Environment') ?? []).map((e) => e.split('=', 2) as [string, string]));
    expect(env.RAMPART_DATA_DIR).toBe(`/var/lib/${one('StateDirectory')}`);
    for (const name of Object.keys(env)) expect([...CONFIG_VARIABLES, 'NODE_ENV']).toContain(name);
    expect(one('EnvironmentFile')).toMatch(/^\//);
  });

  it('stops Rampart first and gives it its drain', () => {
    // The whole control group at once would stop the embedded database under the drain.
    expect(one('KillMode')).toBe('mixed');
    expect(parseInt(one('TimeoutStopSec') ?? '0', 10)).toBeGreaterThan(40);
  });

  it('is hardened, short of what V8 needs', () => {
    expect(Object.fromEntries([...service].map(([k, v]) => [k, v.at(-1)]))).toMatchObject({
      NoNewPrivileges: 'yes',
      ProtectSystem: 'strict',
      ProtectHome: 'yes',
      PrivateTmp: 'yes',
      PrivateDevices: 'yes',
      CapabilityBoundingSet: '',
      RestrictAddressFamilies: 'AF_UNIX AF_INET AF_INET6',
      SystemCallFilter: '@system-service',
      UMask: '0077',
      StateDirectoryMode: '0700',
    });
    // V8's JIT writes executable memory: MemoryDenyWriteExecute=yes would stop Node.
    expect(one('MemoryDenyWriteExecute')).toBeUndefined();
  });

  const analyze = spawnSync('systemd-analyze', ['--version']).status === 0;
  (analyze ? it : it.skip)(`systemd-analyze verify finds nothing to say${analyze ? '' : ' (SKIPPED: systemd-analyze is not installed)'}`, () => {
    const r = spawnSync('systemd-analyze', ['verify', path.join(ROOT, 'deploy', 'systemd', 'rampart.service')], { encoding: 'utf8' });
    expect(`${r.stdout}${r.stderr}`.split('\n').filter((l) => l.includes('rampart.service'))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// The image's HEALTHCHECK and the Deployment's probes, against a Rampart configured as the image
// configures it (production mode behind a trusted TLS proxy, listening on every address).

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;

embeddedOnly('a Rampart configured as the image configures it', () => {
  let child: ChildProcess;
  let dataDir: string;
  let port = 0;
  let stdout = '';

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(ROOT, '.data', 'image-env-'));
    const env: NodeJS.ProcessEnv = { ...process.env, ...imageEnv, RAMPART_DATA_DIR: dataDir, RAMPART_MASTER_KEY: masterKey, RAMPART_HTTP_PORT: '0', RAMPART_GRPC_PORT: '0', RAMPART_ANALYST_READER: 'shared', RAMPART_API_SECRET: `sk_image_${randomBytes(12).toString('hex')}` };
    delete env.MONGODB_URI;
    child = spawn(process.execPath, [path.join(ROOT, 'scripts', 'start.js')], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env });
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    const line = await waitFor(
      () => {
        const found = stdout.split('\n').find((l) => l.includes('"rampart listening"'));
        if (!found && child.exitCode !== null) throw new Error(`Rampart exited:\n${stdout}`);
        return found;
      },
      // A start after a source change builds first: most of a minute on a loaded machine.
      { what: 'Rampart to log "rampart listening"', timeoutMs: 200_000, intervalMs: 100 },
    );
    port = Number(new URL((JSON.parse(line) as { http: string }).http).port);
  }, 240_000);
  afterAll(async () => {
    if (child?.pid && alive(child.pid)) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("passes the image's HEALTHCHECK command", () => {
    const check = docker.instructions.find((i) => i.keyword === 'HEALTHCHECK' && i.stage === finalStage) as Instruction;
    const cmd = JSON.parse(/CMD\s+(\[.*\])$/.exec(check.args)?.[1] as string) as string[];
    expect(statSync(path.join(ROOT, cmd[1] as string)).isFile()).toBe(true);
    const env = { ...process.env, ...imageEnv, RAMPART_HTTP_PORT: String(port) };
    expect(spawnSync(cmd[0] as string, cmd.slice(1), { cwd: ROOT, env, encoding: 'utf8' }).status).toBe(0);
    // And fails when nothing answers there.
    expect(spawnSync(cmd[0] as string, cmd.slice(1), { cwd: ROOT, env: { ...env, RAMPART_HTTP_PORT: '1' }, encoding: 'utf8' }).status).toBe(1);
  });

  it("answers the Deployment's probes as the kubelet sends them, and refuses them without the proxy's header", async () => {
    const deployment = parseAllDocuments(read('deploy/kubernetes/deployment.yaml'))[0]?.toJS() as { spec: { template: { spec: { containers: { livenessProbe: { httpGet: { path: string; httpHeaders?: { name: string; value: string }[] } }; readinessProbe: { httpGet: { path: string; httpHeaders?: { name: string; value: string }[] } }; startupProbe: { httpGet: { path: string; httpHeaders?: { name: string; value: string }[] } } }[] } } } };
    const c = deployment.spec.template.spec.containers[0];
    for (const probe of [c?.startupProbe, c?.livenessProbe, c?.readinessProbe]) {
      const get = probe?.httpGet as { path: string; httpHeaders?: { name: string; value: string }[] };
      const headers = Object.fromEntries((get.httpHeaders ?? []).map((h) => [h.name, h.value]));
      const r = await fetch(`http://127.0.0.1:${port}${get.path}`, { headers });
      expect([get.path, r.status]).toEqual([get.path, 200]);
      const bare = await fetch(`http://127.0.0.1:${port}${get.path}`);
      expect([get.path, bare.status]).toEqual([get.path, 400]);
    }
  });
});
