/**
 * A MaxMind DB (MMDB) reader that keeps the file on disk and only a bounded cache of its pages in
 * memory. The DB-IP city databases are 63 MB (IPv4) and 71 MB (IPv6), mostly search tree; read
 * whole into memory (as mmdb-lib needs) they were two thirds of Rampart's resident memory. Here a
 * look-up walks the tree through 4 KiB pages read with positioned reads and kept in an LRU, so
 * the hot top of the tree and recently used branches stay cached and memory stays at the cache
 * size.
 *
 * Implements the parts of the MMDB format (https://maxmind.github.io/MaxMind-DB/) these files
 * use: 24/28/32-bit records, IPv4 and IPv6 trees, and the data section's types (pointer, string,
 * double, bytes, unsigned and signed integers, map, array, boolean, float).
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

const METADATA_MARKER = Buffer.from('abcdef4d61784d696e642e636f6d', 'hex'); // \xAB\xCD\xEF MaxMind.com
const METADATA_MAX = 128 * 1024;
/** Strings kept by the offset pointers lead to (see `pointed`). */
const MAX_POINTED = 50_000;

export interface MmdbOptions {
  /** Bytes per cached page. */
  pageSize?: number;
  /** Pages kept in memory (LRU). */
  maxPages?: number;
}

export interface MmdbMetadata {
  nodeCount: number;
  recordSize: number;
  ipVersion: number;
  databaseType: string;
}

export type MmdbValue =
  string | number | boolean | Buffer | bigint | MmdbValue[] | { [key: string]: MmdbValue } | null;

export class PagedMmdb {
  readonly metadata: MmdbMetadata;
  private readonly fd: number;
  private readonly size: number;
  private readonly pageSize: number;
  private readonly maxPages: number;
  /** Cached pages; `used` is the clock bit of second-chance eviction (cheaper than moving on every hit). */
  private readonly pages = new Map<number, { buf: Buffer; used: boolean }>();
  private lastIndex = -1;
  private lastPage: Buffer = Buffer.alloc(0);
  private readonly nodeBytes: number;
  private readonly dataStart: number;
  /** The node where IPv4 addresses start in an IPv6 tree (after 96 zero bits). */
  private ipv4Start = -1;

  constructor(file: string, opts: MmdbOptions = {}) {
    this.pageSize = opts.pageSize ?? 4096;
    this.maxPages = opts.maxPages ?? 2048;
    this.fd = openSync(file, 'r');
    this.size = fstatSync(this.fd).size;
    const tailStart = Math.max(0, this.size - METADATA_MAX);
    const tail = Buffer.alloc(this.size - tailStart);
    readSync(this.fd, tail, 0, tail.length, tailStart);
    const at = tail.lastIndexOf(METADATA_MARKER);
    if (at < 0) throw new Error(`${file}: not a MaxMind DB (no metadata marker)`);
    const metaStart = tailStart + at + METADATA_MARKER.length;
    const meta = this.decode(metaStart, metaStart);
    const m = meta as Record<string, MmdbValue>;
    this.metadata = {
      nodeCount: Number(m.node_count),
      recordSize: Number(m.record_size),
      ipVersion: Number(m.ip_version),
      databaseType: String(m.database_type),
    };
    if (![24, 28, 32].includes(this.metadata.recordSize))
      throw new Error(`${file}: unsupported record size ${this.metadata.recordSize}`);
    this.nodeBytes = (this.metadata.recordSize * 2) / 8;
    this.dataStart = this.metadata.nodeCount * this.nodeBytes + 16;
  }

  close(): void {
    closeSync(this.fd);
    this.pages.clear();
    this.lastIndex = -1;
  }

  /** Pages held in memory now. */
  get cachedPages(): number {
    return this.pages.size;
  }

  private page(index: number): Buffer {
    if (index === this.lastIndex) return this.lastPage;
    let p = this.pages.get(index);
    if (p) p.used = true;
    else {
      const start = index * this.pageSize;
      const buf = Buffer.allocUnsafe(Math.min(this.pageSize, this.size - start));
      readSync(this.fd, buf, 0, buf.length, start);
      p = { buf, used: false };
      if (this.pages.size >= this.maxPages) this.evictOne();
      this.pages.set(index, p);
    }
    this.lastIndex = index;
    this.lastPage = p.buf;
    return p.buf;
  }

  /** Second chance: pages used since the last sweep go to the back once; the first unused one goes. */
  private evictOne(): void {
    for (const [i, p] of this.pages) {
      this.pages.delete(i);
      if (!p.used) {
        if (i === this.lastIndex) this.lastIndex = -1;
        return;
      }
      p.used = false;
      this.pages.set(i, p);
    }
  }

  private byte(offset: number): number {
    const within = offset % this.pageSize;
    return this.page((offset - within) / this.pageSize)[within] as number;
  }

  /** `length` bytes at `offset` (copied when they span pages). */
  private bytes(offset: number, length: number): Buffer {
    const within = offset % this.pageSize;
    const first = (offset - within) / this.pageSize;
    const last = Math.floor((offset + length - 1) / this.pageSize);
    if (first === last || length === 0) return this.page(first).subarray(within, within + length);
    const out = Buffer.allocUnsafe(length);
    let copied = 0;
    for (let i = first; i <= last; i++) {
      const p = this.page(i);
      const from = i === first ? within : 0;
      const n = Math.min(p.length - from, length - copied);
      p.copy(out, copied, from, from + n);
      copied += n;
    }
    return out;
  }

  private uint(offset: number, length: number): number {
    let v = 0;
    for (let i = 0; i < length; i++) v = v * 256 + this.byte(offset + i);
    return v;
  }

  /** The record (`bit` 0: left, 1: right) of a tree node. */
  private record(node: number, bit: number): number {
    const offset = node * this.nodeBytes;
    const within = offset % this.pageSize;
    // The common case, a node within one page, reads the page itself (no view or copy per node).
    const inPage = within + this.nodeBytes <= this.pageSize;
    const b = inPage ? this.page((offset - within) / this.pageSize) : this.bytes(offset, this.nodeBytes);
    const at = inPage ? within : 0;
    return this.recordIn(b, at, bit);
  }

  private recordIn(b: Buffer, i: number, bit: number): number {
    switch (this.metadata.recordSize) {
      case 24:
        return bit === 0
          ? ((b[i] as number) << 16) | ((b[i + 1] as number) << 8) | (b[i + 2] as number)
          : ((b[i + 3] as number) << 16) | ((b[i + 4] as number) << 8) | (b[i + 5] as number);
      case 28:
        return bit === 0
          ? (((b[i + 3] as number) & 0xf0) << 20) |
              ((b[i] as number) << 16) |
              ((b[i + 1] as number) << 8) |
              (b[i + 2] as number)
          : (((b[i + 3] as number) & 0x0f) << 24) |
              ((b[i + 4] as number) << 16) |
              ((b[i + 5] as number) << 8) |
              (b[i + 6] as number);
      default:
        return (bit === 0 ? b.readUInt32BE(i) : b.readUInt32BE(i + 4)) >>> 0;
    }
  }

  /**
   * The data record for an address (its bytes: 4 for IPv4, 16 for IPv6), or null. An IPv4
   * address in an IPv6 tree is looked up as ::a.b.c.d.
   */
  lookup(address: Uint8Array): MmdbValue | null {
    const offset = this.recordOffset(address);
    return offset < 0 ? null : this.recordAt(offset);
  }

  /**
   * Where an address's data record starts in the file, or -1 when it has none. Many addresses
   * share one record (a city's): a caller can keep what it made of a record by this offset.
   */
  recordOffset(address: Uint8Array): number {
    const { nodeCount, ipVersion } = this.metadata;
    let node = 0;
    if (address.length === 4 && ipVersion === 6) node = this.ipv4StartNode();
    else if (address.length === 16 && ipVersion === 4) return -1;
    const bits = address.length * 8;
    for (let i = 0; i < bits && node < nodeCount; i++) {
      const bit = ((address[i >> 3] as number) >> (7 - (i & 7))) & 1;
      node = this.record(node, bit);
    }
    if (node <= nodeCount) return -1;
    return node - nodeCount - 16 + this.dataStart;
  }

  /** The data record at `offset` (from recordOffset). */
  recordAt(offset: number): MmdbValue {
    return this.decode(offset, this.dataStart);
  }

  private ipv4StartNode(): number {
    if (this.ipv4Start >= 0) return this.ipv4Start;
    let node = 0;
    for (let i = 0; i < 96 && node < this.metadata.nodeCount; i++) node = this.record(node, 0);
    this.ipv4Start = node;
    return node;
  }

  /** Where the value decode() read last ends. */
  private after = 0;
  /**
   * Strings that pointers lead to (map keys, shared values such as a country's code), by offset:
   * records repeat them, and they are immutable. Cleared when full.
   */
  private readonly pointed = new Map<number, string>();

  /** Decode one value at `offset`; pointers are relative to `base`. Leaves its end in `after`. */
  private decode(offset: number, base: number): MmdbValue {
    const ctrl = this.byte(offset++);
    let type = ctrl >> 5;
    if (type === 1) {
      // Pointer: the value lives elsewhere; the next offset is after the pointer itself.
      const ss = (ctrl >> 3) & 3;
      const vvv = ctrl & 7;
      let target: number;
      if (ss === 0) target = (vvv << 8) + this.byte(offset);
      else if (ss === 1) target = (vvv << 16) + this.uint(offset, 2) + 2048;
      else if (ss === 2) target = vvv * 2 ** 24 + this.uint(offset, 3) + 526336;
      else target = this.uint(offset, 4);
      const at = base + target;
      let value: MmdbValue | undefined = this.pointed.get(at);
      if (value === undefined) {
        value = this.decode(at, base);
        if (typeof value === 'string') {
          if (this.pointed.size >= MAX_POINTED) this.pointed.clear();
          this.pointed.set(at, value);
        }
      }
      this.after = offset + ss + 1;
      return value;
    }
    if (type === 0) type = 7 + this.byte(offset++);
    let size = ctrl & 0x1f;
    if (size === 29) size = 29 + this.byte(offset++);
    else if (size === 30) {
      size = 285 + this.uint(offset, 2);
      offset += 2;
    } else if (size === 31) {
      size = 65821 + this.uint(offset, 3);
      offset += 3;
    }
    switch (type) {
      case 2:
        this.after = offset + size;
        return this.text(offset, size);
      case 3:
        this.after = offset + 8;
        return this.bytes(offset, 8).readDoubleBE(0);
      case 4:
        this.after = offset + size;
        return Buffer.from(this.bytes(offset, size));
      case 5:
      case 6:
        this.after = offset + size;
        return this.uint(offset, size);
      case 7: {
        const map: { [key: string]: MmdbValue } = {};
        for (let i = 0; i < size; i++) {
          const key = this.decode(offset, base);
          const value = this.decode(this.after, base);
          map[String(key)] = value;
          offset = this.after;
        }
        this.after = offset;
        return map;
      }
      case 8: {
        const b = Buffer.alloc(4);
        this.bytes(offset, size).copy(b, 4 - size);
        this.after = offset + size;
        return b.readInt32BE(0);
      }
      case 9:
      case 10: {
        let v = 0n;
        for (let i = 0; i < size; i++) v = (v << 8n) + BigInt(this.byte(offset + i));
        this.after = offset + size;
        return v;
      }
      case 11: {
        const arr: MmdbValue[] = [];
        for (let i = 0; i < size; i++) {
          arr.push(this.decode(offset, base));
          offset = this.after;
        }
        this.after = offset;
        return arr;
      }
      case 14:
        this.after = offset;
        return size !== 0;
      case 15:
        this.after = offset + 4;
        return this.bytes(offset, 4).readFloatBE(0);
      default:
        throw new Error(`MMDB: unsupported data type ${type} at ${offset - 1}`);
    }
  }

  /** UTF-8 text of `length` bytes at `offset` (read from its page without a view when it is within one). */
  private text(offset: number, length: number): string {
    const within = offset % this.pageSize;
    if (length === 0) return '';
    if (within + length <= this.pageSize) {
      const page = this.page((offset - within) / this.pageSize);
      if (within + length <= page.length) return page.toString('utf8', within, within + length);
    }
    return this.bytes(offset, length).toString('utf8');
  }
}
