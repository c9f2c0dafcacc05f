/**
 * The hashing the protocol needs, in pure JavaScript: Hermes has neither WebCrypto's `subtle` nor
 * Node's `crypto`, so HMAC-SHA256 and SHA-256 come from @noble/hashes (audited, no native code).
 * UTF-8 and base64url are done here too, since older Hermes builds have no TextEncoder and no btoa.
 */
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';

/** UTF-8 bytes of `text` (a lone surrogate becomes U+FFFD, as TextEncoder does). */
export function utf8(text: string): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return Uint8Array.from(out);
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** The text base64url (unpadded) encodes as UTF-8, or null when it is not base64url or not UTF-8. */
export function base64urlDecodeText(s: string): string | null {
  if (!/^[A-Za-z0-9_-]*$/.test(s) || s.length % 4 === 1) return null;
  const bytes: number[] = [];
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    acc = (acc << 6) | ALPHABET.indexOf(s[i]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((acc >> bits) & 0xff);
    }
  }
  let out = '';
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i];
    const n =
      b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    if (n === 0 || i + n > bytes.length) return null;
    let c = n === 1 ? b : b & (0xff >> (n + 1));
    for (let j = 1; j < n; j++) {
      if ((bytes[i + j] & 0xc0) !== 0x80) return null;
      c = (c << 6) | (bytes[i + j] & 0x3f);
    }
    out += String.fromCodePoint(c);
    i += n;
  }
  return out;
}

/** base64url without padding (RFC 4648 §5), the encoding of the token's MAC and of the ids. */
export function base64url(bytes: Uint8Array): string {
  let s = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    s += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63] + ALPHABET[n & 63];
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i] << 16;
    s += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63];
  } else if (rest === 2) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
    s += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63];
  }
  return s;
}

export function hex(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += (bytes[i] < 16 ? '0' : '') + bytes[i].toString(16);
  return s;
}

/** HMAC-SHA256 keyed by the UTF-8 bytes of `key`, as base64url without padding. */
export function hmacSha256Base64url(key: string, message: string): string {
  return base64url(hmac(sha256, utf8(key), utf8(message)));
}

/** SHA-256 of the UTF-8 bytes of `text`, as lower-case hex. */
export function sha256Hex(text: string): string {
  return hex(sha256(utf8(text)));
}
