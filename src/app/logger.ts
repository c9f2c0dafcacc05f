/** The process logger (pino). Credentials are redacted wherever they could appear. */
import pino from 'pino';
import type { Logger } from '../doors/logger';

export type { Logger } from '../doors/logger';

export const REDACT = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'secret',
  'apiSecret',
  '*.secret',
  '*.apiSecret',
  'metadata.authorization',
];

export function createLogger(level: string): Logger {
  return pino({ level, redact: { paths: REDACT, censor: '[redacted]' }, base: { service: 'rampart' } });
}
