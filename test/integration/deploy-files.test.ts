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
function dockerfile(text: string): {
  stages: { from: string; name: string | null }[];
  instructions: Instruction[];
} {
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
    for (const m of i.args.matchAll(/(\w+)=("[^"]*"|\S+)/g))
      env[m[1] as string] = (m[2] as string).replace(/^"|"$/g, '');
  }
  return env;
}

/** A shell script's commands, one per line (comments, `set`, `cd` and control lines dropped). */
function scriptCommands(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter(
      (l) => l && !l.startsWith('#') && !/^(set|cd|echo|if|else|fi|then|trap)\b/.test(l) && !/^\w+=/.test(l),
    );
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

/**
 * Whether .dockerignore keeps a path (relative to the build context) out of the context, as the
 * Docker builder decides: each pattern is matched against the path and each of its parent
 * directories, `**` stands for any number of directories, `*` and `?` never cross a `/`, a `!`
 * pattern brings back what an earlier one excluded, and the last matching pattern wins.
 */
function dockerignore(text: string): (file: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      const pattern = path.posix.normalize((negate ? line.slice(1) : line).trim()).replace(/^\/+/, '');
      let re = '';
      for (let i = 0; i < pattern.length; i++) {
        const c = pattern[i] as string;
        if (pattern.startsWith('**/', i)) {
          re += '(?:.*/)?';
          i += 2;
        } else if (pattern.startsWith('**', i)) {
          re += '.*';
          i += 1;
        } else if (c === '*') re += '[^/]*';
        else if (c === '?') re += '[^/]';
        else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
      }
      return { negate, re: new RegExp(`^${re}$`) };
    });
  return (file) => {
    const parts = file.split('/');
    const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let excluded = false;
    for (const r of rules) if (prefixes.some((p) => r.re.test(p))) excluded = !r.negate;
    return excluded;
  };
}

// ---------------------------------------------------------------------------------------------

const docker = dockerfile(read('Dockerfile'));
const finalStage = docker.stages.length - 1;
const imageEnv = envOf(docker.instructions, finalStage);
const masterKey = randomBytes(32).toString('hex');
const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };

describe('Dockerfile', () => {
  const of = (keyword: string, stage?: number) =>
    docker.instructions.filter((i) => i.keyword === keyword && (stage === undefined || i.stage === stage));

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
    const ignored = dockerignore(read('.dockerignore'));
    for (const local of [
      'node_modules/typescript/package.json',
      'dist/src/main.js',
      '.data/ferretdb/rampart.sqlite',
      '.tools/bin/ferretdb',
      '.git/HEAD',
    ])
      expect([local, ignored(local)]).toEqual([local, true]);
  });

  it('keeps every .env, key, secret, database and backup out of the build context, wherever it is, and nothing the build needs', () => {
    const ignored = dockerignore(read('.dockerignore'));
    const secrets = [
      '.env',
      'deploy/.env', // where docs/deploy.md puts the master key for Compose
      'deploy/.env.production',
      'deploy/kubernetes/.env',
      'deploy/rampart.env',
      'master.key',
      '.data/master.key',
      'deploy/.data/sandbox-secret.txt',
      'sandbox-secret.txt',
      'tls/server.pem',
      'tls/server.key',
      'tls/server.crt',
      'deploy/secrets/api-secret',
      'deploy/backups/rampart-embedded-20260101T000000Z.tgz',
      'deploy/backups/rampart-mongodb-20260101T000000Z.archive.gz',
      'rampart.sqlite',
      'backup/rampart.sqlite-wal',
      'test/node_modules/x/index.js',
    ];
    expect(secrets.filter((f) => !ignored(f))).toEqual([]);
    // Every file in the repository is still sent (the build compiles, bundles and checks them).
    const tracked = spawnSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' });
    expect(tracked.status).toBe(0);
    const files = tracked.stdout.split('\0').filter(Boolean);
    expect(files.length).toBeGreaterThan(100);
    expect(files.filter((f) => ignored(f))).toEqual([]);
  });

  it('installs exactly as .ci/run does: the same npm ci, whose postinstall is setup.sh, and no step of its own', () => {
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
    for (const step of setupSteps)
      expect(step).toMatch(/^(bash scripts\/[\w-]+\.sh|node scripts\/[\w-]+\.js( --if-stale)?)$/);
  });

  it('runs as a numeric non-root user, exposes both doors, keeps its data in a volume, checks its health', () => {
    const user = of('USER', finalStage).at(-1)?.args ?? '';
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    expect(of('EXPOSE', finalStage).flatMap((e) => e.args.split(/\s+/))).toEqual(
      expect.arrayContaining(['3000', '50051']),
    );
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
  type Service = {
    image?: string;
    build?: { context: string };
    profiles?: string[];
    command?: string[];
    entrypoint?: string[];
    user?: string;
    environment?: Record<string, string>;
    depends_on?: Record<string, { condition: string }>;
    volumes?: string[];
    ports?: string[];
    stop_grace_period?: string;
  };
  const compose = parseYaml(read('deploy/compose.yaml'), { merge: true }) as {
    services: Record<string, Service>;
    volumes: Record<string, unknown>;
  };
  const services = compose.services;
  /** ${VAR:-default} and ${VAR:?message} as compose resolves them with VAR unset (the master key given). */
  const resolve = (env: Record<string, string>) =>
    Object.fromEntries(
      Object.entries(env).map(([k, v]) => [
        k,
        v.replace(/\$\{(\w+)(?::-([^}]*)|:\?[^}]*)?\}/g, (_m, name: string, dflt?: string) =>
          name === 'RAMPART_MASTER_KEY' ? masterKey : (dflt ?? ''),
        ),
      ]),
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
    expect(init.command?.join(' ')).toContain(
      `rs.initiate({ _id: '${replSet}', members: [{ _id: 0, host: '${uri.host}' }] })`,
    );
    expect(init.depends_on?.mongo?.condition).toBe('service_healthy');
    expect(services.rampart?.depends_on?.['mongo-init']?.condition).toBe('service_completed_successfully');
    // The driver supports MongoDB 4.2 to 8.2 (mongodb 6.x).
    expect(mongo.image).toMatch(/^mongo:(4\.[24]|[5-7]\.0|8\.[0-2])$/);
  });
});

describe('the backups of deploy/compose.yaml', () => {
  type Service = {
    image?: string;
    profiles?: string[];
    command?: string[];
    entrypoint?: string[];
    user?: string;
    environment?: Record<string, string>;
    volumes?: string[];
    depends_on?: unknown;
  };
  const compose = parseYaml(read('deploy/compose.yaml'), { merge: true }) as {
    services: Record<string, Service>;
  };
  const services = compose.services;
  const mongoBackup = services['mongo-backup'] as Service;
  const embeddedBackup = services['embedded-backup'] as Service;
  const shell = (svc: Service) => {
    expect(svc.entrypoint).toEqual(['sh', '-c']);
    expect(svc.command).toHaveLength(1);
    return svc.command?.[0] as string;
  };
  /** Where a service mounts `source` (a named volume or a host directory), and whether read-only. */
  const mount = (svc: Service, source: string) => {
    const v = svc.volumes?.find((x) => x.split(':')[0] === source);
    return v ? { target: v.split(':')[1], readOnly: v.split(':')[2] === 'ro' } : null;
  };

  it('run only when asked (docker compose run), never with `up` of either profile', () => {
    for (const svc of [mongoBackup, embeddedBackup]) {
      expect(svc.profiles).toEqual(['backup']);
      expect(svc).not.toHaveProperty('depends_on');
      // Into deploy/backups/ on the host, which git and the image's build both leave out.
      expect(mount(svc, './backups')).toEqual({ target: '/backups', readOnly: false });
    }
    expect(read('.gitignore').split('\n')).toContain('deploy/backups/');
    expect(dockerignore(read('.dockerignore'))('deploy/backups/x.tgz')).toBe(true);
  });

  it("dumps MongoDB with its own image's mongodump, over Compose's network, from the database Rampart uses", () => {
    const mongo = services.mongo as Service;
    expect(mongoBackup.image).toBe(mongo.image);
    const cmd = shell(mongoBackup);
    expect(cmd).toMatch(/^umask 077 && mongodump /);
    const rampartUri = new URL(services.rampart?.environment?.MONGODB_URI as string);
    const dumpUri = new URL(/--uri '([^']+)'/.exec(cmd)?.[1] as string);
    expect([dumpUri.host, dumpUri.searchParams.get('replicaSet')]).toEqual([
      rampartUri.host,
      rampartUri.searchParams.get('replicaSet'),
    ]);
    // The database Rampart's configuration names (RAMPART_DB_NAME, unset in compose.yaml).
    expect(services.rampart?.environment).not.toHaveProperty('RAMPART_DB_NAME');
    expect(/--db (\S+)/.exec(cmd)?.[1]).toBe(loadConfig({}).dbName);
    expect(cmd).toMatch(
      /--gzip --archive=\/backups\/rampart-mongodb-\$\$\(date -u \+%Y%m%dT%H%M%SZ\)\.archive\.gz$/,
    );
  });

  it("archives the embedded database's volume, read-only, with the Rampart image's tar", () => {
    const embedded = services['rampart-embedded'] as Service & { image: string };
    expect(embeddedBackup.image).toBe(embedded.image);
    const volume = (embedded.volumes?.[0] as string).split(':')[0] as string;
    expect(mount(embeddedBackup, volume)).toEqual({ target: imageEnv.RAMPART_DATA_DIR, readOnly: true });
    const cmd = shell(embeddedBackup);
    expect(cmd).toMatch(
      new RegExp(
        `^umask 077 && tar -czf /backups/rampart-embedded-\\$\\$\\(date -u \\+%Y%m%dT%H%M%SZ\\)\\.tgz -C ${imageEnv.RAMPART_DATA_DIR} `,
      ),
    );
    // The image's slim Debian has tar and gzip, and no sqlite3 (which the recipe must not need).
    expect(docker.stages[finalStage]?.from).toMatch(/bookworm-slim$/);
    expect(cmd).not.toContain('sqlite3');
  });

  it('are what docs/deploy.md tells, the embedded one only with Rampart stopped', () => {
    const docs = read('docs/deploy.md');
    const section = docs.slice(
      docs.indexOf('## Backups'),
      docs.indexOf('\n## ', docs.indexOf('## Backups') + 1),
    );
    const lines = section.split('\n').map((l) => l.trim());
    const at = (text: string) => lines.findIndex((l) => l.includes(text));
    expect(at('run --rm mongo-backup')).toBeGreaterThanOrEqual(0);
    expect(at('stop rampart-embedded')).toBeGreaterThanOrEqual(0);
    expect(at('stop rampart-embedded')).toBeLessThan(at('run --rm embedded-backup'));
    expect(at('run --rm embedded-backup')).toBeLessThan(at('start rampart-embedded'));
  });
});

describe('deploy/kubernetes', () => {
  type Probe = { httpGet: { path: string; port: string; httpHeaders?: { name: string; value: string }[] } };
  type EnvVar = {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
  };
  type Container = {
    name: string;
    image: string;
    ports: { name: string; containerPort: number }[];
    env: EnvVar[];
    envFrom?: { configMapRef: { name: string } }[];
    livenessProbe: Probe;
    readinessProbe: Probe;
    startupProbe?: Probe;
    volumeMounts: { name: string; mountPath: string }[];
  };
  type Manifest = {
    apiVersion: string;
    kind: string;
    metadata: { name: string; labels?: Record<string, string> };
    spec: Record<string, unknown>;
    data?: Record<string, string>;
    resources?: string[];
  };

  const dir = path.join(ROOT, 'deploy', 'kubernetes');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
  const manifests = files.flatMap((f) =>
    parseAllDocuments(readFileSync(path.join(dir, f), 'utf8')).map((d) => ({
      file: f,
      m: d.toJS() as Manifest,
    })),
  );
  const kind = (k: string) => manifests.filter(({ m }) => m.kind === k).map(({ m }) => m);
  const deployment = kind('Deployment')[0] as Manifest & {
    spec: {
      replicas: number;
      selector: { matchLabels: Record<string, string> };
      template: {
        metadata: { labels: Record<string, string> };
        spec: {
          containers: Container[];
          securityContext: Record<string, unknown>;
          terminationGracePeriodSeconds: number;
          volumes: { name: string }[];
        };
      };
    };
  };
  const container = deployment.spec.template.spec.containers[0] as Container;
  const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
    Object.entries(selector).every(([k, v]) => labels[k] === v);

  it('every document has apiVersion, kind and a name, and kustomization.yaml lists every other file', () => {
    for (const { m } of manifests) {
      expect(m.apiVersion).toMatch(/^[\w./-]+\/v\w+$|^v1$/);
      expect(m.kind).toMatch(/^[A-Z]\w+$/);
      if (m.kind !== 'Kustomization') expect(m.metadata.name).toBe('rampart');
    }
    expect(kind('Kustomization')[0]?.resources?.sort()).toEqual(
      files.filter((f) => f !== 'kustomization.yaml').sort(),
    );
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
    const service = kind('Service')[0] as Manifest & {
      spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] };
    };
    expect(matches(service.spec.selector, labels)).toBe(true);
    for (const p of service.spec.ports) expect(container.ports.map((c) => c.name)).toContain(p.targetPort);
    const pdb = kind('PodDisruptionBudget')[0] as Manifest & {
      spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
    };
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(matches(pdb.spec.selector.matchLabels, labels)).toBe(true);
    expect(pdb.spec.minAvailable).toBeGreaterThanOrEqual(1);
    expect(pdb.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });

  it('takes the master key and the database from a Secret, under Rampart’s own variable names, as a valid production configuration', () => {
    const fromSecret = container.env.filter((e) => e.valueFrom?.secretKeyRef);
    expect(
      fromSecret
        .filter((e) => !e.valueFrom?.secretKeyRef?.optional)
        .map((e) => e.name)
        .sort(),
    ).toEqual(['MONGODB_URI', 'RAMPART_MASTER_KEY']);
    const configMap = kind('ConfigMap').find(
      (c) => c.metadata.name === container.envFrom?.[0]?.configMapRef.name,
    );
    expect(configMap).toBeDefined();
    for (const name of [...container.env.map((e) => e.name), ...Object.keys(configMap?.data ?? {})])
      expect(CONFIG_VARIABLES).toContain(name);
    // The Secret's keys are the ones deployment.yaml's instructions create.
    const instructions = read('deploy/kubernetes/deployment.yaml');
    for (const e of fromSecret.filter((x) => !x.valueFrom?.secretKeyRef?.optional))
      expect(instructions).toContain(`--from-literal=${e.valueFrom?.secretKeyRef?.key}=`);
    const secrets = { RAMPART_MASTER_KEY: masterKey, MONGODB_URI: 'mongodb://mongo-0.mongo/?replicaSet=rs0' };
    expect(() => loadConfig({ ...imageEnv, ...configMap?.data, ...secrets })).not.toThrow();
  });

  it('lets only the ingress controller, and Prometheus for /metrics, reach the pods (NetworkPolicy)', () => {
    type Peer = {
      namespaceSelector?: { matchLabels?: Record<string, string> };
      podSelector?: { matchLabels?: Record<string, string> };
      ipBlock?: unknown;
    };
    type Rule = { from?: Peer[]; ports?: { port: string | number }[] };
    const policies = kind('NetworkPolicy') as (Manifest & {
      spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: Rule[] };
    })[];
    expect(policies).toHaveLength(1);
    const policy = policies[0] as (typeof policies)[number];
    expect(policy.apiVersion).toBe('networking.k8s.io/v1');
    expect(matches(policy.spec.podSelector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
    expect(policy.spec.policyTypes).toContain('Ingress');
    const portNames = container.ports.map((p) => p.name);
    for (const rule of policy.spec.ingress) {
      // No rule open to every source: each names its peers, by namespace (and pod), never by address.
      expect(rule.from?.length).toBeGreaterThan(0);
      for (const peer of rule.from ?? []) {
        expect(peer.ipBlock).toBeUndefined();
        expect(Object.keys(peer.namespaceSelector?.matchLabels ?? {}).length).toBeGreaterThan(0);
      }
      // And names the ports it opens, each one the container's.
      expect(rule.ports?.length).toBeGreaterThan(0);
      for (const p of rule.ports ?? []) expect(portNames).toContain(p.port);
    }
    const opened = (port: string) => policy.spec.ingress.filter((r) => r.ports?.some((p) => p.port === port));
    // The proxy reaches both doors; gRPC is reached by the proxy alone.
    const proxy = opened('grpc');
    expect(proxy).toHaveLength(1);
    expect(proxy[0]?.ports?.map((p) => p.port).sort()).toEqual(['grpc', 'http']);
    // Prometheus reaches http (for /metrics), from its own pods only.
    const prometheus = opened('http').filter((r) => r !== proxy[0]);
    expect(prometheus).toHaveLength(1);
    expect(prometheus[0]?.from?.every((p) => Object.keys(p.podSelector?.matchLabels ?? {}).length > 0)).toBe(
      true,
    );
  });

  describe('monitoring/ (the Prometheus Operator)', () => {
    const monitoringDir = path.join(dir, 'monitoring');
    const monitoring = readdirSync(monitoringDir)
      .filter((f) => f.endsWith('.yaml'))
      .flatMap((f) =>
        parseAllDocuments(readFileSync(path.join(monitoringDir, f), 'utf8')).map((d) => ({
          file: f,
          m: d.toJS() as Manifest,
        })),
      );

    it('is a kustomization of its own (its CRD is not in every cluster) listing every file', () => {
      const k = monitoring.find(({ m }) => m.kind === 'Kustomization')?.m;
      expect(k?.resources?.sort()).toEqual(
        monitoring
          .filter(({ m }) => m.kind !== 'Kustomization')
          .map(({ file }) => file)
          .sort(),
      );
      expect(kind('ServiceMonitor')).toEqual([]);
    });

    it("scrapes /metrics on the Service's http port with the Secret's metrics token, which the Deployment gives Rampart", () => {
      type Endpoint = {
        port: string;
        path: string;
        scheme?: string;
        authorization?: { type: string; credentials: { name: string; key: string } };
      };
      const sm = monitoring.find(({ m }) => m.kind === 'ServiceMonitor')?.m as Manifest & {
        spec: { selector: { matchLabels: Record<string, string> }; endpoints: Endpoint[] };
      };
      expect(sm.apiVersion).toBe('monitoring.coreos.com/v1');
      const service = kind('Service')[0] as Manifest & {
        spec: { ports: { name: string; targetPort: string }[] };
      };
      expect(matches(sm.spec.selector.matchLabels, service.metadata.labels ?? {})).toBe(true);
      expect(sm.spec.endpoints).toHaveLength(1);
      const ep = sm.spec.endpoints[0] as Endpoint;
      expect(ep).toMatchObject({ path: '/metrics', scheme: 'http' });
      expect(service.spec.ports.find((p) => p.name === ep.port)?.targetPort).toBe('http');
      const token = container.env.find((e) => e.name === 'RAMPART_METRICS_TOKEN')?.valueFrom?.secretKeyRef;
      expect(ep.authorization).toEqual({
        type: 'Bearer',
        credentials: { name: token?.name, key: token?.key },
      });
    });
  });

  const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
  (kubectl ? it : it.skip)(
    `kubectl kustomize renders both kustomizations${kubectl ? '' : ' (SKIPPED: kubectl is not installed)'}`,
    () => {
      for (const k of [dir, path.join(dir, 'monitoring')]) {
        const r = spawnSync('kubectl', ['kustomize', k], { encoding: 'utf8' });
        expect([k, r.status, r.stderr]).toEqual([k, 0, '']);
        expect(parseAllDocuments(r.stdout).length).toBeGreaterThan(0);
      }
    },
  );

  it('runs as the image’s non-root user with a read-only root and its data directory mounted', () => {
    const user = (docker.instructions.filter((i) => i.keyword === 'USER').at(-1)?.args ?? '').split(':')[0];
    expect(deployment.spec.template.spec.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: Number(user),
    });
    expect(container.volumeMounts.map((v) => v.mountPath)).toContain(imageEnv.RAMPART_DATA_DIR);
    expect(
      (container as unknown as { securityContext: Record<string, unknown> }).securityContext,
    ).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
  });
});

describe('deploy/monitoring/prometheus.yaml', () => {
  type Job = {
    job_name: string;
    metrics_path?: string;
    scheme?: string;
    authorization?: { type?: string; credentials_file?: string };
    static_configs?: { targets: string[] }[];
    kubernetes_sd_configs?: { role: string }[];
    relabel_configs?: { source_labels?: string[]; regex?: string; action?: string }[];
  };
  const config = parseYaml(read('deploy/monitoring/prometheus.yaml')) as {
    rule_files: string[];
    scrape_configs: Job[];
  };
  const job = (name: string) => config.scrape_configs.find((j) => j.job_name === name) as Job;

  it('loads the alerting rules beside it', () => {
    for (const f of config.rule_files)
      expect(existsSync(path.join(ROOT, 'deploy', 'monitoring', f))).toBe(true);
    expect(config.rule_files).toContain('alerts.yaml');
  });

  it('scrapes /metrics over HTTP with the metrics token, on the port Compose publishes and systemd listens on', () => {
    for (const j of config.scrape_configs) {
      expect(j.metrics_path ?? '/metrics').toBe('/metrics');
      expect(j.scheme ?? 'http').toBe('http');
      expect(j.authorization).toEqual({ type: 'Bearer', credentials_file: expect.stringMatching(/^\//) });
    }
    const compose = parseYaml(read('deploy/compose.yaml'), { merge: true }) as {
      services: Record<string, { ports?: string[] }>;
    };
    const published = (compose.services.rampart?.ports ?? []).map((p) => p.split(':').slice(0, 2).join(':'));
    const targets = job('rampart').static_configs?.flatMap((c) => c.targets) ?? [];
    expect(targets).toEqual([`127.0.0.1:${loadConfig({}).httpPort}`]);
    expect(published).toContain(targets[0]);
  });

  it("finds the Deployment's pods on Kubernetes by their label and the http port's name", () => {
    const k = job('rampart-kubernetes');
    expect(k.kubernetes_sd_configs).toEqual([{ role: 'pod' }]);
    const keep = (label: string) =>
      k.relabel_configs?.find((r) => r.action === 'keep' && r.source_labels?.[0] === label)?.regex;
    const deployment = parseAllDocuments(read('deploy/kubernetes/deployment.yaml'))[0]?.toJS() as {
      spec: {
        template: {
          metadata: { labels: Record<string, string> };
          spec: { containers: { ports: { name: string; containerPort: number }[] }[] };
        };
      };
    };
    expect(keep('__meta_kubernetes_pod_label_app_kubernetes_io_name')).toBe(
      deployment.spec.template.metadata.labels['app.kubernetes.io/name'],
    );
    const port = keep('__meta_kubernetes_pod_container_port_name');
    expect(
      deployment.spec.template.spec.containers[0]?.ports.find((p) => p.name === port)?.containerPort,
    ).toBe(3000);
  });
});

/**
 * The commands of an install recipe (a comment of the unit, a block of the docs), checked for what
 * a fresh machine has: every file they create is in a directory that exists there or that an
 * earlier command made.
 */
function createsFilesOnlyInDirectoriesItMakes(commands: string[]): {
  made: string[];
  created: string[];
  orphans: string[];
} {
  // What a machine with systemd has before the recipe runs.
  const existing = new Set(['/', '/etc', '/etc/systemd/system', '/opt', '/var/lib', '/usr/bin']);
  const dirs = new Set(existing);
  const created: string[] = [];
  const orphans: string[] = [];
  const file = (f: string) => {
    created.push(f);
    if (!dirs.has(path.posix.dirname(f))) orphans.push(f);
  };
  for (const command of commands.flatMap((c) => c.split(/&&|;/)).map((c) => c.trim().split(/\s+/))) {
    const [word, ...args] = command;
    const operands = args.filter(
      (a, i) =>
        !a.startsWith('-') && !['-m', '-o', '-g', '--home-dir', '--shell'].includes(args[i - 1] ?? ''),
    );
    if (word === 'install' && args.includes('-d')) for (const d of operands) dirs.add(d.replace(/\/$/, ''));
    else if (word === 'mkdir') for (const d of operands) dirs.add(d.replace(/\/$/, ''));
    else if (word === 'git' && operands[0] === 'clone') dirs.add(operands.at(-1) as string);
    else if (word === 'install') file(operands.at(-1) as string);
    else if (word === 'cp') {
      const dest = operands.at(-1) as string;
      if (dest.endsWith('/')) {
        if (!dirs.has(dest.replace(/\/$/, ''))) orphans.push(dest);
      } else file(dest);
    }
    const append = command.findIndex((w) => w === '>' || w === '>>');
    if (append >= 0) file(command[append + 1] as string);
  }
  return { made: [...dirs].filter((d) => !existing.has(d)), created, orphans };
}

describe('deploy/systemd/rampart.service', () => {
  const unit = unitFile(read('deploy/systemd/rampart.service'));
  const service = unit.get('Service') as Map<string, string[]>;
  const one = (key: string) => service.get(key)?.at(-1);

  it('has the three sections and runs the built service as its own user, in its state directory', () => {
    expect([...unit.keys()]).toEqual(['Unit', 'Service', 'Install']);
    expect(unit.get('Install')?.get('WantedBy')).toEqual(['multi-user.target']);
    expect(one('ExecStart')).toMatch(/^\/\S+\/node dist\/src\/main\.js$/);
    expect(one('User')).toMatch(/^(?!root$)\w+$/);
    const env = Object.fromEntries(
      (service.get('Environment') ?? []).map((e) => e.split('=', 2) as [string, string]),
    );
    expect(env.RAMPART_DATA_DIR).toBe(`/var/lib/${one('StateDirectory')}`);
    for (const name of Object.keys(env)) expect([...CONFIG_VARIABLES, 'NODE_ENV']).toContain(name);
    expect(one('EnvironmentFile')).toMatch(/^\//);
  });

  it('installs as its comment and docs/deploy.md say: each file in a directory the recipe makes, the settings file included', () => {
    const fromUnit = read('deploy/systemd/rampart.service')
      .split('\n')
      .filter((l) => /^# {3}\S/.test(l))
      .map((l) => l.replace(/^#\s+/, '').replace(/\s+#.*$/, ''));
    const docs = read('docs/deploy.md');
    const block = /### systemd[\s\S]*?```sh\n([\s\S]*?)```/.exec(docs)?.[1] ?? '';
    const fromDocs = block
      .split('\n')
      .map((l) => l.replace(/\s+#.*$/, '').trim())
      .filter(Boolean);
    for (const recipe of [fromUnit, fromDocs]) {
      const r = createsFilesOnlyInDirectoriesItMakes(recipe);
      expect(r.orphans).toEqual([]);
      expect(r.created).toContain(one('EnvironmentFile'));
      expect(r.made).toContain(path.posix.dirname(one('EnvironmentFile') as string));
    }
    // The check itself: the recipe as it was, without making /etc/rampart, is caught.
    expect(
      createsFilesOnlyInDirectoriesItMakes(['install -m 0600 /dev/null /etc/rampart/rampart.env']).orphans,
    ).toEqual(['/etc/rampart/rampart.env']);
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
  (analyze ? it : it.skip)(
    `systemd-analyze verify finds nothing to say${analyze ? '' : ' (SKIPPED: systemd-analyze is not installed)'}`,
    () => {
      const r = spawnSync(
        'systemd-analyze',
        ['verify', path.join(ROOT, 'deploy', 'systemd', 'rampart.service')],
        { encoding: 'utf8' },
      );
      expect(`${r.stdout}${r.stderr}`.split('\n').filter((l) => l.includes('rampart.service'))).toEqual([]);
    },
  );
});

// ---------------------------------------------------------------------------------------------
// The image's HEALTHCHECK and the Deployment's probes, against a Rampart configured as the image
// configures it (production mode behind a trusted TLS proxy, listening on every address).

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;

embeddedOnly('a Rampart configured as the image configures it', () => {
  const apiSecret = `sk_image_${randomBytes(12).toString('hex')}`;
  const metricsToken = `mt_${randomBytes(12).toString('hex')}`;
  let rampart: Started;
  let dataDir: string;

  interface Started {
    child: ChildProcess;
    port: number;
    stop(): Promise<void>;
  }

  /** Rampart as the image runs it, on the embedded database in `dir`. */
  async function start(dir: string): Promise<Started> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...imageEnv,
      RAMPART_DATA_DIR: dir,
      RAMPART_MASTER_KEY: masterKey,
      RAMPART_HTTP_PORT: '0',
      RAMPART_GRPC_PORT: '0',
      RAMPART_ANALYST_READER: 'shared',
      RAMPART_API_SECRET: apiSecret,
      RAMPART_METRICS_TOKEN: metricsToken,
    };
    delete env.MONGODB_URI;
    const child = spawn(process.execPath, [path.join(ROOT, 'scripts', 'start.js')], {
      cwd: ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    let stdout = '';
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
    const port = Number(new URL((JSON.parse(line) as { http: string }).http).port);
    return {
      child,
      port,
      stop: async () => {
        if (child.pid && alive(child.pid)) {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await exited;
        }
      },
    };
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(ROOT, '.data', 'image-env-'));
    rampart = await start(dataDir);
  }, 240_000);
  afterAll(async () => {
    await rampart?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("passes the image's HEALTHCHECK command", () => {
    const check = docker.instructions.find(
      (i) => i.keyword === 'HEALTHCHECK' && i.stage === finalStage,
    ) as Instruction;
    const cmd = JSON.parse(/CMD\s+(\[.*\])$/.exec(check.args)?.[1] as string) as string[];
    expect(statSync(path.join(ROOT, cmd[1] as string)).isFile()).toBe(true);
    const env = { ...process.env, ...imageEnv, RAMPART_HTTP_PORT: String(rampart.port) };
    expect(spawnSync(cmd[0] as string, cmd.slice(1), { cwd: ROOT, env, encoding: 'utf8' }).status).toBe(0);
    // And fails when nothing answers there.
    expect(
      spawnSync(cmd[0] as string, cmd.slice(1), {
        cwd: ROOT,
        env: { ...env, RAMPART_HTTP_PORT: '1' },
        encoding: 'utf8',
      }).status,
    ).toBe(1);
  });

  it("answers the Deployment's probes as the kubelet sends them, over plain HTTP, while the API needs the proxy's HTTPS", async () => {
    type Get = { path: string; httpHeaders?: { name: string; value: string }[] };
    const deployment = parseAllDocuments(read('deploy/kubernetes/deployment.yaml'))[0]?.toJS() as {
      spec: {
        template: {
          spec: {
            containers: {
              livenessProbe: { httpGet: Get };
              readinessProbe: { httpGet: Get };
              startupProbe: { httpGet: Get };
            }[];
          };
        };
      };
    };
    const c = deployment.spec.template.spec.containers[0];
    for (const probe of [c?.startupProbe, c?.livenessProbe, c?.readinessProbe]) {
      const get = probe?.httpGet as Get;
      const headers = Object.fromEntries((get.httpHeaders ?? []).map((h) => [h.name, h.value]));
      const r = await fetch(`http://127.0.0.1:${rampart.port}${get.path}`, { headers });
      expect([get.path, r.status]).toEqual([get.path, 200]);
    }
    const api = (headers: Record<string, string>) =>
      fetch(`http://127.0.0.1:${rampart.port}/v1/devices/none`, {
        headers: { authorization: `Bearer ${apiSecret}`, ...headers },
      });
    expect((await api({})).status).toBe(400);
    expect((await api({ 'x-forwarded-proto': 'https' })).status).toBe(404);
  });

  it('answers Prometheus as the ServiceMonitor and the scrape configuration ask: /metrics over plain HTTP, with the token', async () => {
    const metrics = (headers: Record<string, string>) =>
      fetch(`http://127.0.0.1:${rampart.port}/metrics`, { headers });
    const scraped = await metrics({ authorization: `Bearer ${metricsToken}` });
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain('rampart_request_duration_seconds');
    expect((await metrics({})).status).toBe(401);
  });

  it("backs up with compose's embedded-backup command, Rampart stopped, and the archive restores every record", async () => {
    const api = (port: number, method: string, route: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${port}${route}`, {
        method,
        headers: {
          authorization: `Bearer ${apiSecret}`,
          'x-forwarded-proto': 'https',
          'content-type': 'application/json',
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const verdict = await api(rampart.port, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: 'backup-user' },
      context: { ip: '81.2.69.142', headers: { 'User-Agent': 'Mozilla/5.0' } },
    });
    expect(verdict.status).toBe(201);
    const token = ((await verdict.json()) as { device: { token: string } }).device.token;
    const devicesOf = async (port: number) =>
      (
        (await (await api(port, 'GET', '/v1/users/backup-user/devices')).json()) as {
          data: { token: string }[];
        }
      ).data.map((d) => d.token);
    // The verdict's writes are behind it: wait for the device to be readable, then stop (which writes the rest).
    await waitFor(async () => (await devicesOf(rampart.port)).includes(token), {
      what: 'the device to be recorded',
      timeoutMs: 30_000,
    });
    await rampart.stop();

    // The compose service's own command, with its two mounts where this machine has them.
    const compose = parseYaml(read('deploy/compose.yaml'), { merge: true }) as {
      services: Record<string, { command: string[] }>;
    };
    const backups = mkdtempSync(path.join(ROOT, '.data', 'backups-'));
    const restored = mkdtempSync(path.join(ROOT, '.data', 'restored-'));
    try {
      const command = (compose.services['embedded-backup']?.command[0] as string)
        .replaceAll('$$', '$')
        .replaceAll('/backups/', `${backups}/`)
        .replaceAll(imageEnv.RAMPART_DATA_DIR as string, dataDir);
      const backup = spawnSync('sh', ['-c', command], { encoding: 'utf8' });
      expect([backup.status, backup.stderr]).toEqual([0, '']);
      const archives = readdirSync(backups);
      expect(archives).toEqual([expect.stringMatching(/^rampart-embedded-\d{8}T\d{6}Z\.tgz$/)]);
      expect(statSync(path.join(backups, archives[0] as string)).mode & 0o077).toBe(0);
      // docs/deploy.md's restore, into an empty data directory.
      expect(
        spawnSync('tar', ['-xzf', path.join(backups, archives[0] as string), '-C', restored]).status,
      ).toBe(0);
      rampart = await start(restored);
      expect(await devicesOf(rampart.port)).toContain(token);
    } finally {
      await rampart.stop();
      rmSync(backups, { recursive: true, force: true });
      rmSync(restored, { recursive: true, force: true });
    }
  }, 300_000);
});
