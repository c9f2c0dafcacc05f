/**
 * A CBOR decoder (RFC 8949) for what platform attestations carry: App Attest's attestation object
 * and assertion. Only the definite-length subset those use is read (unsigned and negative
 * integers, byte and text strings, arrays, maps, false, true, null); anything else (indefinite
 * lengths, tags, floats, integers beyond 2^53) is refused. Bounded against hostile input: at most
 * MAX_DEPTH levels and MAX_ITEMS items, and no length beyond the buffer. Never reads past the
 * buffer; throws CborError on anything malformed, including bytes left over after the value.
 *
 * Written here rather than taken from a library: attestations use a small, fixed part of CBOR,
 * and a decoder of that part is short enough to test whole.
 *
 * Pure: no I/O.
 */

export type CborValue = number | string | boolean | null | Buffer | CborValue[] | CborMap;
/** A map, by its keys (text or integer). */
export type CborMap = Map<string | number, CborValue>;

export class CborError extends Error {
  override name = 'CborError';
}

const MAX_DEPTH = 16;
const MAX_ITEMS = 10_000;

/** Decode one CBOR value that fills `bytes` exactly. */
export function decodeCbor(bytes: Uint8Array): CborValue {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const state = { at: 0, items: 0 };
  const value = read(buf, state, 0);
  if (state.at !== buf.length) throw new CborError(`${buf.length - state.at} bytes after the value`);
  return value;
}

function need(buf: Buffer, state: { at: number }, n: number): void {
  if (n < 0 || state.at + n > buf.length) throw new CborError('truncated');
}

/** The argument of a head: the length, the count or the integer's value. */
function argument(buf: Buffer, state: { at: number }, info: number): number {
  if (info < 24) return info;
  const size = info === 24 ? 1 : info === 25 ? 2 : info === 26 ? 4 : info === 27 ? 8 : 0;
  if (size === 0)
    throw new CborError(
      info === 31 ? 'indefinite lengths are not supported' : 'reserved additional information',
    );
  need(buf, state, size);
  let v: number;
  if (size === 8) {
    const big = buf.readBigUInt64BE(state.at);
    if (big > BigInt(Number.MAX_SAFE_INTEGER)) throw new CborError('integer too large');
    v = Number(big);
  } else v = buf.readUIntBE(state.at, size);
  state.at += size;
  return v;
}

function read(buf: Buffer, state: { at: number; items: number }, depth: number): CborValue {
  if (depth > MAX_DEPTH) throw new CborError('nested too deeply');
  if (++state.items > MAX_ITEMS) throw new CborError('too many items');
  need(buf, state, 1);
  const head = buf[state.at] as number;
  state.at += 1;
  const major = head >> 5;
  const info = head & 0x1f;
  switch (major) {
    case 0:
      return argument(buf, state, info);
    case 1:
      return -1 - argument(buf, state, info);
    case 2:
    case 3: {
      const n = argument(buf, state, info);
      need(buf, state, n);
      const slice = buf.subarray(state.at, state.at + n);
      state.at += n;
      if (major === 2) return Buffer.from(slice);
      const text = new TextDecoder('utf-8', { fatal: true });
      try {
        return text.decode(slice);
      } catch {
        throw new CborError('text string is not UTF-8');
      }
    }
    case 4: {
      const n = argument(buf, state, info);
      if (n > buf.length - state.at) throw new CborError('truncated');
      const out: CborValue[] = [];
      for (let i = 0; i < n; i++) out.push(read(buf, state, depth + 1));
      return out;
    }
    case 5: {
      const n = argument(buf, state, info);
      if (n * 2 > buf.length - state.at) throw new CborError('truncated');
      const out: CborMap = new Map();
      for (let i = 0; i < n; i++) {
        const key = read(buf, state, depth + 1);
        if (typeof key !== 'string' && typeof key !== 'number')
          throw new CborError('map keys must be text or integers');
        if (out.has(key)) throw new CborError(`duplicate map key ${String(key)}`);
        out.set(key, read(buf, state, depth + 1));
      }
      return out;
    }
    case 7:
      if (info === 20) return false;
      if (info === 21) return true;
      if (info === 22) return null;
      throw new CborError('floats and simple values are not supported');
    default:
      throw new CborError('tags are not supported');
  }
}

/** The map a value is, or a CborError naming what it should have been. */
export function cborMap(v: CborValue | undefined, what: string): CborMap {
  if (!(v instanceof Map)) throw new CborError(`${what} is not a map`);
  return v;
}

/** The byte string a value is, or a CborError. */
export function cborBytes(v: CborValue | undefined, what: string): Buffer {
  if (!Buffer.isBuffer(v)) throw new CborError(`${what} is not a byte string`);
  return v;
}

/** Encode a value in CBOR's definite-length form (for tests and the evaluation's simulated apps). */
export function encodeCbor(v: CborValue): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n]);
    if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
    if (n < 0x10000) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff]);
    if (n < 0x100000000) {
      const b = Buffer.alloc(5);
      b[0] = (major << 5) | 26;
      b.writeUInt32BE(n, 1);
      return b;
    }
    const b = Buffer.alloc(9);
    b[0] = (major << 5) | 27;
    b.writeBigUInt64BE(BigInt(n), 1);
    return b;
  };
  if (v === false) return Buffer.from([0xf4]);
  if (v === true) return Buffer.from([0xf5]);
  if (v === null) return Buffer.from([0xf6]);
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new CborError('only integers are encoded');
    return v >= 0 ? head(0, v) : head(1, -1 - v);
  }
  if (typeof v === 'string') {
    const b = Buffer.from(v, 'utf8');
    return Buffer.concat([head(3, b.length), b]);
  }
  if (Buffer.isBuffer(v)) return Buffer.concat([head(2, v.length), v]);
  if (Array.isArray(v)) return Buffer.concat([head(4, v.length), ...v.map(encodeCbor)]);
  const parts: Buffer[] = [head(5, v.size)];
  for (const [k, x] of v) parts.push(encodeCbor(k), encodeCbor(x));
  return Buffer.concat(parts);
}
