/**
 * Just enough DER (ITU-T X.690) to read what Node's X509Certificate does not expose: one
 * extension of a certificate by its object identifier (App Attest's nonce, OID
 * 1.2.840.113635.100.8.2). Never reads past its buffer; throws DerError on malformed input.
 *
 * Pure: no I/O.
 */

export class DerError extends Error {
  override name = 'DerError';
}

export interface Tlv {
  tag: number;
  /** The content octets. */
  value: Buffer;
  /** Where the next element starts. */
  end: number;
}

/** The element starting at `at`. Single-byte tags only (all X.509 uses). */
export function readTlv(buf: Buffer, at: number): Tlv {
  if (at + 2 > buf.length) throw new DerError('truncated');
  const tag = buf[at] as number;
  if ((tag & 0x1f) === 0x1f) throw new DerError('multi-byte tags are not supported');
  let len = buf[at + 1] as number;
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || start + n > buf.length) throw new DerError('bad length');
    len = buf.readUIntBE(start, n);
    start += n;
  }
  if (start + len > buf.length) throw new DerError('truncated');
  return { tag, value: buf.subarray(start, start + len), end: start + len };
}

/** The elements a constructed value holds, in order. */
export function children(value: Buffer): Tlv[] {
  const out: Tlv[] = [];
  let at = 0;
  while (at < value.length) {
    const t = readTlv(value, at);
    out.push(t);
    at = t.end;
  }
  return out;
}

/** An object identifier in dotted form from its content octets. */
export function oidString(value: Buffer): string {
  if (value.length === 0) throw new DerError('empty object identifier');
  const first = value[0] as number;
  const parts = [Math.min(2, Math.floor(first / 40)), first - 40 * Math.min(2, Math.floor(first / 40))];
  let n = 0;
  for (let i = 1; i < value.length; i++) {
    const b = value[i] as number;
    n = n * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      parts.push(n);
      n = 0;
    }
  }
  return parts.join('.');
}

const SEQUENCE = 0x30;
const OID = 0x06;
const BOOLEAN = 0x01;
const OCTET_STRING = 0x04;
const EXTENSIONS = 0xa3;

/**
 * The value (the content of the extnValue OCTET STRING) of a certificate's extension, or null
 * when the certificate has none with that identifier.
 */
export function certificateExtension(der: Buffer, oid: string): Buffer | null {
  const cert = readTlv(der, 0);
  if (cert.tag !== SEQUENCE) throw new DerError('not a certificate');
  const tbs = children(cert.value)[0];
  if (!tbs || tbs.tag !== SEQUENCE) throw new DerError('not a certificate');
  const ext = children(tbs.value).find((t) => t.tag === EXTENSIONS);
  if (!ext) return null;
  const list = readTlv(ext.value, 0);
  if (list.tag !== SEQUENCE) throw new DerError('bad extensions');
  for (const e of children(list.value)) {
    const parts = children(e.value);
    if (parts[0]?.tag !== OID || oidString(parts[0].value) !== oid) continue;
    const value = parts[1]?.tag === BOOLEAN ? parts[2] : parts[1];
    if (!value || value.tag !== OCTET_STRING) throw new DerError('bad extension value');
    return value.value;
  }
  return null;
}
