/**
 * The proof of work (docs/client.md): find a nonce such that SHA-256(salt ‖ nonce) begins with
 * `difficulty` zero bits, on the page's thread in slices that yield to the page.
 */
import { sha256Head } from './sha256';

/** A slice of the search runs this long before yielding to the page. */
const SLICE_MS = 12;
/** Yield to the page: a message, which a background tab does not throttle as it does timers. */
const yieldToPage = (): Promise<void> =>
  new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });

/**
 * Answer a collector's challenge: the first nonce (0, 1, 2, … in decimal) such that SHA-256 of
 * `salt` followed by it begins with `difficulty` zero bits. Runs on the page's thread in slices of
 * about SLICE_MS, yielding between them, so that the page stays responsive.
 */
export async function proveWork(salt: string, difficulty: number): Promise<string> {
  if (!/^[\x21-\x7e]{1,39}$/.test(salt) || !Number.isInteger(difficulty) || difficulty < 0 || difficulty > 30)
    throw new Error(
      'Rampart: a challenge has a salt of 1 to 39 printable characters and a difficulty of 0 to 30 bits',
    );
  if (difficulty === 0) return '0';
  const block = new Uint8Array(64);
  for (let i = 0; i < salt.length; i++) block[i] = salt.charCodeAt(i);
  const shift = 32 - difficulty;
  let n = 0;
  for (;;) {
    const until = performance.now() + SLICE_MS;
    do {
      for (let batch = 0; batch < 1024; batch++, n++) {
        const digits = String(n);
        for (let j = 0; j < digits.length; j++) block[salt.length + j] = digits.charCodeAt(j);
        if (sha256Head(block, salt.length + digits.length) >>> shift === 0) return digits;
      }
    } while (performance.now() < until);
    await yieldToPage();
  }
}
