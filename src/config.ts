/**
 * Typed configuration, read once from the environment and validated. Nothing else in Rampart
 * reads process.env: every service receives only the slice of Config it needs.
 */
import { z } from 'zod';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_MAX_EVENT_AGE_MS, DEFAULT_VERDICT_BUDGET_MS } from './core/verdicts/evaluate';
import { DEFAULT_POW_BITS, MAX_POW_BITS } from './core/client/proof';
import { DEFAULT_FAILED_AUTHENTICATION_LIMIT } from './core/access';
import {
  DEFAULT_AUTH_CACHE_MS,
  DEFAULT_CLIENT_RATE_LIMIT_PER_SECOND,
  DEFAULT_RATE_LIMIT_PER_SECOND,
} from './core/create-services';
import { parseTrustedProxies, type TrustedProxies } from './doors/proxies';
import { DEFAULT_CACHE_ENTRIES } from './store/state/layer';
import { DEFAULT_KNOWN_IDS_MAX } from './store/state/known-ids';

const port = z.coerce.number().int().min(0).max(65535);
const optionalUrl = (protocols: string[]) =>
  z
    .string()
    .url()
    .refine((v) => URL.canParse(v) && protocols.includes(new URL(v).protocol), {
      message: `must use ${protocols.join(' or ')}`,
    })
    .optional();

const schema = z.object({
  RAMPART_MODE: z.enum(['development', 'production']).default('development'),
  RAMPART_HOST: z.string().min(1).default('127.0.0.1'),
  RAMPART_HTTP_PORT: port.default(3000),
  RAMPART_GRPC_PORT: port.default(50051),
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must start with mongodb:// or mongodb+srv://')
    .optional(),
  RAMPART_DB_NAME: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,60}$/)
    .default('rampart'),
  RAMPART_DATA_DIR: z.string().min(1).default('.data'),
  RAMPART_API_SECRET: z.string().min(16, 'must be at least 16 characters').max(256).optional(),
  RAMPART_WEBHOOK_URL: optionalUrl(['http:', 'https:']),
  RAMPART_TLS_CERT: z.string().optional(),
  RAMPART_TLS_KEY: z.string().optional(),
  RAMPART_TRUST_PROXY: z
    .string()
    .default('false')
    .transform((v, ctx) => {
      try {
        return parseTrustedProxies(v);
      } catch (err) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          message: `${(err as Error).message} (false, true, or a comma-separated list of addresses, CIDRs, "loopback", "private")`,
        });
        return z.NEVER;
      }
    }),
  RAMPART_MASTER_KEY: z
    .string()
    .regex(/^[0-9a-f]{64}$/i, 'must be 64 hex characters (32 bytes)')
    .optional(),
  RAMPART_PUBLIC_URL: optionalUrl(['http:', 'https:']),
  RAMPART_SMTP_URL: optionalUrl(['smtp:', 'smtps:']),
  RAMPART_MAIL_FROM: z
    .string()
    .regex(/^[^\s@<>]+@[^\s@<>]+$/, 'must be an e-mail address')
    .default('rampart@localhost'),
  RAMPART_BODY_LIMIT: z.coerce
    .number()
    .int()
    .min(1024)
    .max(10 * 1024 * 1024)
    .default(100 * 1024),
  RAMPART_RATE_LIMIT: z.coerce.number().int().min(1).default(DEFAULT_RATE_LIMIT_PER_SECOND),
  RAMPART_CLIENT_RATE_LIMIT: z.coerce.number().int().min(1).default(DEFAULT_CLIENT_RATE_LIMIT_PER_SECOND),
  RAMPART_CLIENT_POW_BITS: z.coerce.number().int().min(0).max(MAX_POW_BITS).default(DEFAULT_POW_BITS),
  RAMPART_AUTH_FAILURE_LIMIT: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_FAILED_AUTHENTICATION_LIMIT.limit),
  RAMPART_AUTH_CACHE_MS: z.coerce.number().int().min(0).max(60000).default(DEFAULT_AUTH_CACHE_MS),
  RAMPART_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  RAMPART_VERDICT_BUDGET_MS: z.coerce.number().int().min(5).max(10_000).default(DEFAULT_VERDICT_BUDGET_MS),
  RAMPART_MAX_EVENT_AGE_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3650)
    .default(DEFAULT_MAX_EVENT_AGE_MS / 86_400_000),
  RAMPART_ANALYST_POOL: z.coerce.number().int().min(1).max(100).default(1),
  RAMPART_ANALYST_SHARE: z.coerce.number().min(0.05).max(1).default(0.5),
  RAMPART_ANALYST_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  RAMPART_ANALYST_WAIT_MS: z.coerce.number().int().min(100).max(3_600_000).optional(),
  RAMPART_ANALYST_READER: z.enum(['separate', 'shared']).default('separate'),
  RAMPART_ANALYST_NICE: z.coerce.number().int().min(0).max(19).default(10),
  RAMPART_ANALYST_READER_MEMORY_MB: z.coerce.number().int().min(32).max(1_048_576).default(256),
  RAMPART_EMBEDDED_WAL_LIMIT_MB: z.coerce.number().int().min(8).max(1_048_576).default(64),
  RAMPART_EMBEDDED_MEMORY_MB: z.coerce.number().int().min(32).max(1_048_576).default(512),
  RAMPART_ANALYST_MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// or mongodb+srv:// URI')
    .optional(),
  RAMPART_DB_PROBE_MS: z.coerce.number().int().min(0).max(60_000).default(100),
  RAMPART_DB_STALL_MS: z.coerce.number().int().min(50).max(60_000).default(300),
  RAMPART_DB_STALL_MAX_MS: z.coerce.number().int().min(50).max(600_000).default(5000),
  RAMPART_STATE_CACHE_ENTRIES: z.coerce
    .number()
    .int()
    .min(100)
    .max(10_000_000)
    .default(DEFAULT_CACHE_ENTRIES),
  RAMPART_KNOWN_IDS_MAX: z.coerce.number().int().min(0).max(100_000_000).default(DEFAULT_KNOWN_IDS_MAX),
  RAMPART_STATE_MAX_AGE_MS: z.coerce.number().int().min(0).max(3_600_000).optional(),
  RAMPART_WRITE_INTERVAL_MS: z.coerce.number().int().min(1).max(500).default(20),
  RAMPART_WRITE_QUEUE_LIMIT: z.coerce.number().int().min(100).max(10_000_000).default(100_000),
  RAMPART_MAX_UNWRITTEN_MS: z.coerce.number().int().min(100).max(60_000).default(1000),
  RAMPART_WRITE_TIMEOUT_MS: z.coerce.number().int().min(500).max(600_000).default(10_000),
  RAMPART_WRITE_STALL_MS: z.coerce.number().int().min(500).max(600_000).default(5000),
  RAMPART_MAX_CONCURRENT_VERDICTS: z.coerce.number().int().min(1).max(100_000).default(128),
  RAMPART_QUEUE_WAIT_MS: z.coerce.number().int().min(1).max(600_000).default(1000),
  // Event-loop delay, summed over two seconds, past which new requests are refused at once (0: never).
  RAMPART_MAX_LOOP_DELAY_MS: z.coerce.number().int().min(0).max(600_000).default(1000),
  RAMPART_ACK_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(2000),
  RAMPART_METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').max(256).optional(),
});

export type RawConfig = z.infer<typeof schema>;

/** Every environment variable Rampart reads. */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(schema.shape);

export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
}

export interface Config {
  mode: 'development' | 'production';
  host: string;
  httpPort: number;
  grpcPort: number;
  mongoUri: string | undefined;
  dbName: string;
  dataDir: string;
  apiSecret: string | undefined;
  webhookUrl: string | undefined;
  tls: TlsFiles | undefined;
  /**
   * Proxies whose `X-Forwarded-*` headers are believed (empty: none), as CIDRs. The client is the
   * right-most hop of `X-Forwarded-For` that is not one of them (doors/proxies.ts).
   */
  trustProxy: TrustedProxies;
  masterKey: string | undefined;
  publicUrl: string | undefined;
  smtpUrl: string | undefined;
  mailFrom: string;
  bodyLimit: number;
  rateLimitPerSecond: number;
  /** Browser-client collections per second per environment and source address. */
  clientRateLimitPerSecond: number;
  /** The browser client's proof of work: leading zero bits of SHA-256 (docs/client.md). */
  clientPowBits: number;
  /** Failed authentications per minute from one address before it gets 429. */
  authFailuresPerMinute: number;
  authCacheMs: number;
  logLevel: RawConfig['RAMPART_LOG_LEVEL'];
  /** How long a verdict may wait for its state before answering `degraded`. */
  verdictBudgetMs: number;
  /** Oldest event time (`timestamp`) a verdict takes as such; older ones are scored as now. */
  maxEventAgeMs: number;
  /**
   * Dashboards' reads (GraphQL searches and analytics): their own connections, at most `pool` at
   * once, each stopped after `timeoutMs`; on the embedded database through a second FerretDB at a
   * lower CPU priority (`reader` 'separate', niceness `nice`); on MONGODB_URI through `uri` when
   * given (e.g. a secondary).
   */
  analyst: {
    pool: number;
    timeoutMs: number;
    waitMs: number | undefined;
    share: number;
    reader: 'separate' | 'shared';
    nice: number;
    readerMemoryMb: number;
    uri: string | undefined;
  };
  /**
   * The embedded database: its write-ahead log is checkpointed and truncated past `walLimitMb`
   * (store/embedded-wal.ts); its FerretDB's soft memory limit (Go's GOMEMLIMIT) is `memoryMb`.
   */
  embedded: { walLimitMb: number; memoryMb: number };
  /**
   * The database probe (store/health.ts): a ping every `probeEveryMs` (0: none); unanswered for
   * longer than the recent pings' own times allow (at least `stallMs`, at most `stallMaxMs`), the
   * database is taken as hung.
   */
  databaseHealth: { probeEveryMs: number; stallMs: number; stallMaxMs: number };
  /** The state layer: cache size, write-behind interval and bound, cache staleness. */
  state: StateConfig;
  /**
   * Verdicts computed at once (at most `maxConcurrent`; the bound adapts to how quickly they are
   * answered), and how long one waits for its turn before it is refused (503).
   */
  work: { maxConcurrent: number; queueWaitMs: number; maxLoopDelayMs: number };
  /** Bearer token GET /metrics requires; unset: /metrics is open (scrape it on a private network). */
  metricsToken: string | undefined;
}

export interface StateConfig {
  cacheEntries: number;
  /**
   * On the embedded database, the most documents of `users` or `counters` whose ids are read at
   * start so that documents never seen are known absent without a look-up (0: none; see
   * store/state/known-ids.ts).
   */
  knownIdsMax: number;
  flushIntervalMs: number;
  queueLimit: number;
  /** Age (ms) of the oldest unwritten change at which new work is refused (503): the crash loss bound. */
  maxUnwrittenMs: number;
  /** How long a database command of the writer (or a look-up) may take before it is abandoned and retried. */
  writeTimeoutMs: number;
  /** How long writes may be due without a flush writing them before /readyz answers 503. */
  writeStallMs: number;
  /** How long a track, log or app-events call waits for its events to be written before it answers 503. */
  ackTimeoutMs: number;
  /**
   * Re-read a cached document older than this; null: never. Unset, it is null on the embedded
   * database (this process is its only writer) and 2 s on MONGODB_URI (other instances may write).
   */
  maxAgeMs: number | null;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** Validate the environment once; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') picked[key] = value;
  }
  const parsed = schema.safeParse(picked);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const c = parsed.data;
  if (Boolean(c.RAMPART_TLS_CERT) !== Boolean(c.RAMPART_TLS_KEY)) {
    throw new ConfigError('invalid configuration: RAMPART_TLS_CERT and RAMPART_TLS_KEY must be set together');
  }
  let tls: TlsFiles | undefined;
  if (c.RAMPART_TLS_CERT && c.RAMPART_TLS_KEY) {
    tls = {
      cert: readTlsFile('RAMPART_TLS_CERT', c.RAMPART_TLS_CERT),
      key: readTlsFile('RAMPART_TLS_KEY', c.RAMPART_TLS_KEY),
    };
  }
  if (c.RAMPART_MODE === 'production') {
    if (!tls && c.RAMPART_TRUST_PROXY.length === 0) {
      throw new ConfigError(
        "invalid configuration: RAMPART_MODE=production needs RAMPART_TLS_CERT and RAMPART_TLS_KEY, or RAMPART_TRUST_PROXY (true, or the proxies' addresses) behind a TLS-terminating proxy",
      );
    }
    if (!c.RAMPART_MASTER_KEY) {
      throw new ConfigError(
        'invalid configuration: RAMPART_MASTER_KEY is required in production (64 hex characters)',
      );
    }
  } else if (!tls && !LOOPBACK.has(c.RAMPART_HOST)) {
    throw new ConfigError(
      `invalid configuration: RAMPART_HOST=${c.RAMPART_HOST}: plain HTTP is only allowed on loopback; configure TLS or RAMPART_MODE=production`,
    );
  }
  return {
    mode: c.RAMPART_MODE,
    host: c.RAMPART_HOST,
    httpPort: c.RAMPART_HTTP_PORT,
    grpcPort: c.RAMPART_GRPC_PORT,
    mongoUri: c.MONGODB_URI,
    dbName: c.RAMPART_DB_NAME,
    dataDir: path.resolve(c.RAMPART_DATA_DIR),
    apiSecret: c.RAMPART_API_SECRET,
    webhookUrl: c.RAMPART_WEBHOOK_URL,
    tls,
    trustProxy: c.RAMPART_TRUST_PROXY,
    masterKey: c.RAMPART_MASTER_KEY,
    publicUrl: c.RAMPART_PUBLIC_URL,
    smtpUrl: c.RAMPART_SMTP_URL,
    mailFrom: c.RAMPART_MAIL_FROM,
    bodyLimit: c.RAMPART_BODY_LIMIT,
    rateLimitPerSecond: c.RAMPART_RATE_LIMIT,
    clientRateLimitPerSecond: c.RAMPART_CLIENT_RATE_LIMIT,
    clientPowBits: c.RAMPART_CLIENT_POW_BITS,
    authFailuresPerMinute: c.RAMPART_AUTH_FAILURE_LIMIT,
    authCacheMs: c.RAMPART_AUTH_CACHE_MS,
    logLevel: c.RAMPART_LOG_LEVEL,
    verdictBudgetMs: c.RAMPART_VERDICT_BUDGET_MS,
    maxEventAgeMs: c.RAMPART_MAX_EVENT_AGE_DAYS * 86_400_000,
    analyst: {
      pool: c.RAMPART_ANALYST_POOL,
      timeoutMs: c.RAMPART_ANALYST_TIMEOUT_MS,
      waitMs: c.RAMPART_ANALYST_WAIT_MS,
      share: c.RAMPART_ANALYST_SHARE,
      reader: c.RAMPART_ANALYST_READER,
      nice: c.RAMPART_ANALYST_NICE,
      readerMemoryMb: c.RAMPART_ANALYST_READER_MEMORY_MB,
      uri: c.RAMPART_ANALYST_MONGODB_URI,
    },
    embedded: { walLimitMb: c.RAMPART_EMBEDDED_WAL_LIMIT_MB, memoryMb: c.RAMPART_EMBEDDED_MEMORY_MB },
    databaseHealth: {
      probeEveryMs: c.RAMPART_DB_PROBE_MS,
      stallMs: c.RAMPART_DB_STALL_MS,
      stallMaxMs: Math.max(c.RAMPART_DB_STALL_MS, c.RAMPART_DB_STALL_MAX_MS),
    },
    state: {
      cacheEntries: c.RAMPART_STATE_CACHE_ENTRIES,
      knownIdsMax: c.RAMPART_KNOWN_IDS_MAX,
      flushIntervalMs: c.RAMPART_WRITE_INTERVAL_MS,
      queueLimit: c.RAMPART_WRITE_QUEUE_LIMIT,
      maxUnwrittenMs: c.RAMPART_MAX_UNWRITTEN_MS,
      writeTimeoutMs: c.RAMPART_WRITE_TIMEOUT_MS,
      writeStallMs: c.RAMPART_WRITE_STALL_MS,
      ackTimeoutMs: c.RAMPART_ACK_TIMEOUT_MS,
      maxAgeMs: c.RAMPART_STATE_MAX_AGE_MS ?? (c.MONGODB_URI ? 2000 : null),
    },
    work: {
      maxConcurrent: c.RAMPART_MAX_CONCURRENT_VERDICTS,
      queueWaitMs: c.RAMPART_QUEUE_WAIT_MS,
      maxLoopDelayMs: c.RAMPART_MAX_LOOP_DELAY_MS,
    },
    metricsToken: c.RAMPART_METRICS_TOKEN,
  };
}

function readTlsFile(name: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${name}: cannot read ${file} (${(err as Error).message})`);
  }
}
