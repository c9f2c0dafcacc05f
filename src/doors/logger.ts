/**
 * The logger as the doors see it: a pino logger (created once by the composition root, with
 * credentials redacted; see app/logger.ts). Only the type lives here, so that a door never
 * reaches back into the composition root.
 */
import type pino from 'pino';

export type Logger = pino.Logger;
