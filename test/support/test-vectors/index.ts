/**
 * The shared test vectors of the client libraries (clients/test-vectors/, README.md there),
 * computed by the server's and the reference client's own code. `node scripts/generate-test-vectors.js`
 * writes them; test/unit/client/test-vectors.spec.ts fails when a file and the code disagree.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { allowListVectors } from './allow-list';
import { proofVectors } from './proof';
import { queueVectors } from './queue';
import { tokenVectors } from './tokens';

export const VECTORS_DIR = join(__dirname, '..', '..', '..', 'clients', 'test-vectors');

/** Every file's content, by file name. */
export async function buildVectors(): Promise<Record<string, unknown>> {
  return {
    'tokens.json': tokenVectors(),
    'allow-list.json': allowListVectors(),
    'queue.json': await queueVectors(),
    'proof.json': proofVectors(),
  };
}

/** A vector file as a library's test reads it. */
export function readVectors<T = any>(file: string): T {
  return JSON.parse(readFileSync(join(VECTORS_DIR, file), 'utf8')) as T;
}

/** The text a vector file holds: two-space JSON and a final newline. */
export const vectorText = (content: unknown): string => `${JSON.stringify(content, null, 2)}\n`;
