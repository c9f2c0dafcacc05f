/**
 * The offline reference data as the core's Intel port: the IP databases (loaded by `load`, or
 * lazily by the first look-up) and the user-agent parser. The composition root loads it once and
 * injects it; nothing in the core reaches the tables otherwise.
 */
import { initIntel, lookupIp } from './ip';
import { parseUserAgent } from './user-agent';
import { isDisposableEmail } from './disposable-email';

export const offlineIntel = {
  /** Load the IP databases now (idempotent), rather than at the first verdict. */
  load: initIntel,
  lookupIp,
  parseUserAgent,
  isDisposableEmail,
};
