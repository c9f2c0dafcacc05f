/**
 * `npx rampart …`: manage environments and credentials from the command line. It connects to
 * MONGODB_URI, to the embedded database of a running Rampart, or starts the embedded one itself.
 */
import { readFileSync } from 'node:fs';
import type { Environment } from '../core/model';
import type { Services } from '../core/services';
import { DomainError, InvalidParameters } from '../core/errors';
import { retentionDaysOf } from '../core/retention';
import { parseArgs, USAGE, UsageError } from './args';

type Out = (line: string) => void;

/** Run one CLI command against the services; returns the process exit code. Throws UsageError for a command line that is not a command. */
export async function runCommand(services: Services, argv: string[], out: Out): Promise<number> {
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
    default:
      throw new UsageError(`unknown command "${parsed.command}"`);
  }
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
  try {
    const built = await buildServices({
      db: database.db,
      log,
      masterKey: resolveMasterKey(config.masterKey, config.dataDir),
      authCacheMs: 0,
      rateLimitPerSecond: config.rateLimitPerSecond,
      publicUrl: config.publicUrl ?? 'http://127.0.0.1',
      smtpUrl: undefined,
      mailFrom: config.mailFrom,
    });
    return await runCommand(built.services, argv, (l) => process.stdout.write(`${l}\n`));
  } finally {
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
