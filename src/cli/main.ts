/**
 * `npx rampart …`: manage environments and credentials from the command line. It connects to
 * MONGODB_URI, to the embedded database of a running Rampart, or starts the embedded one itself.
 */
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Actor } from '../core/audit/model';
import type { Environment } from '../core/model';
import type { List, ListImport, ListItem } from '../core/lists/model';
import { linesOf } from '../core/lists/service';
import type { Services } from '../core/services';
import { DomainError, InvalidParameters, NotFound } from '../core/errors';
import { retentionDaysOf } from '../core/retention';
import { parseArgs, USAGE, UsageError } from './args';

type Out = (line: string) => void;

/** What a command reads and writes besides its lines of output (the lists' import and export). */
export interface CliIo {
  /** Text for standard output as it is (an export, a batch at a time), taken when the reader is ready for more. */
  write(text: string): Promise<void>;
  /** Progress, for standard error (never mixed with an export). */
  note(line: string): void;
  /** The bytes of a file, or of standard input for `-`. */
  read(file: string): AsyncIterable<Uint8Array | string>;
  /** Who the audit log names for a change made here. */
  actor: Actor;
  /** How often a running import job is looked at (ms). */
  pollMs: number;
}

/** A file as an import reads it; a missing file, or a directory, is refused before anything else. */
function readFileChunks(file: string): AsyncIterable<Uint8Array | string> {
  if (file === '-') return process.stdin;
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InvalidParameters([
      {
        field: 'file',
        message: `cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
      },
    ]);
  }
  if (!isFile) throw new InvalidParameters([{ field: 'file', message: `${file} is not a file` }]);
  return createReadStream(file);
}

function osUser(): string {
  try {
    return userInfo().username || 'cli';
  } catch {
    return 'cli';
  }
}

/** Run one CLI command against the services; returns the process exit code. Throws UsageError for a command line that is not a command. */
export async function runCommand(
  services: Services,
  argv: string[],
  out: Out,
  given: Partial<CliIo> = {},
): Promise<number> {
  const io: CliIo = {
    write: async (text) => {
      for (const line of text.replace(/\n$/, '').split('\n')) out(line);
    },
    note: () => undefined,
    read: readFileChunks,
    actor: { type: '$cli', identifier: osUser() },
    pollMs: 500,
    ...given,
  };
  const parsed = parseArgs(argv);
  if (parsed.kind === 'help') {
    for (const line of USAGE.trimEnd().split('\n')) out(line);
    return 0;
  }
  const [group, cmd] = parsed.command.split(' ') as [string, string];
  const positional = parsed.positional;
  const flag = (name: string): string | undefined => {
    const v = parsed.options[name];
    return typeof v === 'string' ? v : undefined;
  };
  const envs = services.environments;
  switch (parsed.command) {
    case 'env list': {
      for (const e of await envs.list()) {
        out(
          `${e.name}\t${e.id}\t${e.enabled ? 'enabled' : 'disabled'}\t${e.sandbox ? 'sandbox' : 'production'}\twebhook=${e.webhookUrl ?? '-'}\tprivacy=${e.privacyEmail ?? '-'}\tpublishable=${e.publishableKey}\torigins=${e.clientOrigins?.join(',') || '-'}\tapps=${e.clientApps?.join(',') || '-'}\tattestation=${attestationSummary(e)}\tretention=${retentionDaysOf(e)}d`,
        );
      }
      return 0;
    }
    case 'env create': {
      const { env, secret } = await envs.create(positional[0] as string, {
        sandbox: parsed.options.production !== true,
      });
      out(`created environment ${env.name} (${env.id})`);
      out(`API secret (shown only now): ${secret}`);
      out(`publishable key: ${env.publishableKey}`);
      return 0;
    }
    case 'env disable':
    case 'env enable': {
      const env = await envs.byName(positional[0] as string);
      await envs.setEnabled(env.id, cmd === 'enable');
      out(`${env.name} ${cmd}d`);
      return 0;
    }
    case 'env set-webhook': {
      const env = await envs.byName(positional[0] as string);
      const url = positional[1] === 'none' ? null : (positional[1] as string);
      await envs.setWebhookUrl(env.id, url);
      out(`${env.name} webhook URL: ${url ?? '(none)'}`);
      return 0;
    }
    case 'env set-origins': {
      const env = await envs.byName(positional[0] as string);
      const origins = positional[1] === 'none' ? [] : positional.slice(1);
      const updated = await envs.setClientOrigins(env.id, origins);
      out(
        `${env.name} client origins: ${updated.clientOrigins?.length ? updated.clientOrigins.join(' ') : '(none)'}; publishable key ${env.publishableKey}`,
      );
      return 0;
    }
    case 'env set-apps': {
      const env = await envs.byName(positional[0] as string);
      const apps = positional[1] === 'none' ? [] : positional.slice(1);
      const updated = await envs.setClientApps(env.id, apps);
      out(
        `${env.name} apps: ${updated.clientApps?.length ? updated.clientApps.join(' ') : '(none)'}; publishable key ${env.publishableKey}`,
      );
      return 0;
    }
    case 'env set-app-attest': {
      const env = await envs.byName(positional[0] as string);
      const app = positional[1] as string;
      const team = positional[2] === 'none' ? null : (positional[2] as string);
      await envs.setAttestation(env.id, app, { appleTeamId: team });
      out(
        `${env.name} ${app}: App Attest ${team ? `verified for the App ID ${team}.${app}` : 'not verified'}`,
      );
      return 0;
    }
    case 'env set-play-integrity': {
      const env = await envs.byName(positional[0] as string);
      const app = positional[1] as string;
      const file = positional[2] as string;
      await envs.setAttestation(env.id, app, { play: file === 'none' ? null : readPlayKeysFile(file) });
      out(
        `${env.name} ${app}: Play Integrity ${file === 'none' ? 'not verified (keys removed)' : 'verified with the keys given (stored sealed)'}`,
      );
      return 0;
    }
    case 'env require-attestation': {
      const env = await envs.byName(positional[0] as string);
      const app = positional[1] as string;
      const on = positional[2];
      if (on !== 'on' && on !== 'off') throw new UsageError('require-attestation takes on or off');
      await envs.setAttestation(env.id, app, { required: on === 'on' });
      out(
        `${env.name} ${app}: sessions without a verified attestation are ${on === 'on' ? 'flagged' : 'not flagged'}`,
      );
      return 0;
    }
    case 'env set-retention': {
      const env = await envs.byName(positional[0] as string);
      // Only digits are a number of days ("30d", "1e2" or "" are not): the core checks the bounds.
      const given = positional[1] as string;
      const updated = await envs.setRetentionDays(
        env.id,
        /^\d{1,9}$/.test(given) ? Number(given) : Number.NaN,
      );
      out(
        `${env.name} retention: ${retentionDaysOf(updated)} days (the running service deletes older events, rejected payloads and ended privacy requests within 6 hours)`,
      );
      return 0;
    }
    case 'env set-privacy-email': {
      const env = await envs.byName(positional[0] as string);
      const email = positional[1] === 'none' ? null : (positional[1] as string);
      await envs.setPrivacyEmail(env.id, email);
      out(`${env.name} privacy address: ${email ?? '(none)'}`);
      return 0;
    }
    case 'secret add':
    case 'analyst-key add': {
      const env = await envs.byName(positional[0] as string);
      const kind = group === 'secret' ? 'secret' : 'analyst';
      const { secret } = await envs.addCredential(
        env.id,
        kind,
        flag('label') ?? (kind === 'secret' ? 'cli' : 'analyst'),
      );
      out(`${kind === 'secret' ? 'API secret' : 'analyst key'} for ${env.name} (shown only now): ${secret}`);
      return 0;
    }
    case 'secret list': {
      const env = await envs.byName(positional[0] as string);
      for (const c of await envs.listCredentials(env.id)) {
        out(
          `${c.kind}\t…${c.hint}\t${c.label}\tcreated ${c.createdAt.toISOString()}\t${c.revokedAt ? `revoked ${c.revokedAt.toISOString()}` : 'live'}\t${c.hash}`,
        );
      }
      return 0;
    }
    case 'secret revoke': {
      const env = await envs.byName(positional[0] as string);
      await envs.revoke(env.id, positional[1] as string);
      out('revoked');
      return 0;
    }
    case 'lists list': {
      const env = await envs.byName(positional[0] as string);
      for (const l of await services.lists.all(env.id)) {
        const items = await services.lists.countItems(env.id, l.id, undefined);
        out(`${l.id}\t${l.name}\t${l.primaryField}\titems=${items}`);
      }
      return 0;
    }
    case 'lists export': {
      const env = await envs.byName(positional[0] as string);
      const list = await listNamed(services, env, positional[1] as string);
      const format = flag('format') ?? 'csv';
      const archived = parsed.options.archived === true;
      if (format === 'csv') {
        for await (const text of services.lists.exportCsv(env.id, list.id, archived)) await io.write(text);
        return 0;
      }
      let first = true;
      for await (const batch of services.lists.exportItems(env.id, list.id, archived)) {
        await io.write(
          batch
            .map((i) => `${first ? ((first = false), '[\n') : ',\n'}${JSON.stringify(itemOut(i))}`)
            .join(''),
        );
      }
      await io.write(first ? '[]\n' : '\n]\n');
      return 0;
    }
    case 'lists import': {
      const env = await envs.byName(positional[0] as string);
      const list = await listNamed(services, env, positional[1] as string);
      const replace = parsed.options.replace === true;
      const outcome = await services.lists.importCsv(
        env.id,
        io.actor,
        list.id,
        linesOf(io.read(positional[2] as string)),
        { replace },
      );
      if (outcome.report) {
        const r = outcome.report;
        out(imported(list, r.rows, r.created, r.updated, r.archived));
        return 0;
      }
      // A job: it runs in this process; the command ends with it.
      let job: ListImport = outcome.job;
      let shown = -1;
      while (job.state === 'queued' || job.state === 'running') {
        if (job.written !== shown) io.note(`${list.name}: ${job.written} of ${job.items} items written`);
        shown = job.written;
        await sleep(io.pollMs);
        job = await services.lists.importJob(env.id, list.id, job.id);
      }
      if (job.state === 'failed')
        throw new Error(`${list.name}: import ${job.id} failed: ${job.error ?? 'no reason recorded'}`);
      out(imported(list, job.rows, job.created, job.updated, job.archived));
      return 0;
    }
    default:
      throw new UsageError(`unknown command "${parsed.command}"`);
  }
}

/** A list of the environment by id, else by name. */
async function listNamed(services: Services, env: Environment, idOrName: string): Promise<List> {
  const lists = await services.lists.all(env.id);
  const list = lists.find((l) => l.id === idOrName) ?? lists.find((l) => l.name === idOrName);
  if (!list) throw new NotFound(`${env.name} has no list with the id or name "${idOrName}"`);
  return list;
}

/** What an import did, in one line. */
function imported(list: List, rows: number, created: number, updated: number, archived?: number): string {
  return `${list.name}: ${rows} row${rows === 1 ? '' : 's'} imported: ${created} items created, ${updated} updated${archived === undefined ? '' : `, ${archived} not in the file archived`}`;
}

/** An item as `lists export --format json` writes it: the CSV export's columns, with JSON's types. */
function itemOut(i: ListItem): Record<string, unknown> {
  return {
    id: i.id,
    value: i.primaryValue,
    secondary_value: i.secondaryValue,
    comment: i.comment,
    expires_at: i.expiresAt?.toISOString() ?? null,
    archived: i.archived,
    archived_at: i.archivedAt?.toISOString() ?? null,
    author: { type: i.author.type, identifier: i.author.identifier },
    created_at: i.createdAt.toISOString(),
    updated_at: i.updatedAt.toISOString(),
  };
}

/** What `env list` shows of an environment's attestation settings (never the keys). */
function attestationSummary(e: Environment): string {
  const list = (e.attestation ?? []).map(
    (a) =>
      `${a.app}:${[a.appleTeamId ? `app_attest(${a.appleTeamId})` : '', a.play ? 'play_integrity' : ''].filter(Boolean).join('+') || 'none'}${a.required ? ':required' : ''}`,
  );
  return list.join(',') || '-';
}

/** A Play Integrity keys file: JSON `{"decryptionKey", "verificationKey"}` (the core checks the keys themselves). */
function readPlayKeysFile(file: string): { decryptionKey: string; verificationKey: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new InvalidParameters([
      { field: 'keys-file', message: `cannot read ${file} as JSON: ${(err as Error).message}` },
    ]);
  }
  const o = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  if (typeof o.decryptionKey !== 'string' || typeof o.verificationKey !== 'string')
    throw new InvalidParameters([
      { field: 'keys-file', message: `${file} must hold {"decryptionKey": "…", "verificationKey": "…"}` },
    ]);
  return { decryptionKey: o.decryptionKey.trim(), verificationKey: o.verificationKey.trim() };
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  // The command line first: help and mistakes are answered at once, before the configuration is
  // read, the database started or even the modules that do it loaded.
  const parsed = parseArgs(argv);
  if (parsed.kind === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const [
    { loadConfig },
    { createLogger },
    { buildServices, resolveMasterKey },
    { connect },
    { attachOrStartEmbedded },
  ] = await Promise.all([
    import('../config'),
    import('../app/logger'),
    import('../app/build'),
    import('../store/database'),
    import('../store/embedded'),
  ]);
  const config = loadConfig(process.env);
  const log = createLogger(process.env.RAMPART_LOG_LEVEL ?? 'warn');
  const db = config.mongoUri
    ? { uri: config.mongoUri, stop: async () => undefined }
    : await attachOrStartEmbedded(config.dataDir);
  const database = await connect(db.uri, config.dbName);
  let built: Awaited<ReturnType<typeof buildServices>> | undefined;
  try {
    built = await buildServices({
      db: database.db,
      log,
      masterKey: resolveMasterKey(config.masterKey, config.dataDir),
      authCacheMs: 0,
      rateLimitPerSecond: config.rateLimitPerSecond,
      publicUrl: config.publicUrl ?? 'http://127.0.0.1',
      smtpUrl: undefined,
      mailFrom: config.mailFrom,
    });
    const write = (text: string): Promise<void> =>
      new Promise((resolve, reject) => {
        const ready = process.stdout.write(text, (err) => err && reject(err));
        if (ready) resolve();
        else process.stdout.once('drain', () => resolve());
      });
    return await runCommand(built.services, argv, (l) => process.stdout.write(`${l}\n`), {
      write,
      note: (l) => process.stderr.write(`${l}\n`),
    });
  } finally {
    // An import job still running (the command failed while it waited) ends recorded as interrupted.
    await built?.services.lists.stop();
    await database.close();
    await db.stop();
  }
}

/** Entry point used by bin/rampart.js. */
export function cli(): void {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      // 64: a command line that is not a command (EX_USAGE), with the usage; 1: the command failed.
      if (err instanceof UsageError) process.stderr.write(`rampart: ${err.message}\n\n${USAGE}`);
      else if (err instanceof DomainError || (err instanceof Error && err.name === 'ConfigError'))
        process.stderr.write(`rampart: ${err.message}\n`);
      else process.stderr.write(`rampart: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(err instanceof UsageError ? 64 : 1);
    },
  );
}
