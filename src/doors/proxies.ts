/**
 * Which proxies Rampart believes, and the client's address behind them. A proxy appends the
 * address it received a request from to `X-Forwarded-For`; everything left of that entry is what
 * the client (or a proxy before it) wrote, and a client can write anything. So the client is the
 * right-most address of the chain (the socket's peer, then `X-Forwarded-For` from right to left)
 * that is not a trusted proxy: a forged entry sits left of it and is never read. Only a trusted
 * peer's `X-Forwarded-*` headers are read at all (REST, GraphQL and the console through Fastify's
 * `trustProxy`, gRPC's `x-forwarded-for` metadata here).
 */
import { BlockList, isIP } from 'node:net';

/** Networks of trusted proxies, as CIDRs (`10.0.0.0/8`, `::1/128`) or addresses; empty: none. */
export type TrustedProxies = readonly string[];

/** The machine itself. */
export const LOOPBACK_NETWORKS: TrustedProxies = ['127.0.0.0/8', '::1/128'];
/** Private networks: RFC 1918 and IPv6 unique-local addresses, where proxies, load balancers and container networks live. */
export const PRIVATE_NETWORKS: TrustedProxies = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'];

const NAMES: Readonly<Record<string, TrustedProxies>> = {
  loopback: LOOPBACK_NETWORKS,
  private: PRIVATE_NETWORKS,
};

/**
 * `RAMPART_TRUST_PROXY`: `false` (no proxy: forwarded headers are ignored), `true` (proxies on this
 * machine or a private network: `loopback,private`), or a comma-separated list of addresses,
 * CIDRs and those two names. Throws an Error saying what is wrong with an entry.
 */
export function parseTrustedProxies(value: string): string[] {
  const v = value.trim().toLowerCase();
  if (['false', '0', 'no', 'none', ''].includes(v)) return [];
  if (['true', '1', 'yes'].includes(v)) return [...LOOPBACK_NETWORKS, ...PRIVATE_NETWORKS];
  const out: string[] = [];
  for (const raw of v.split(',')) {
    const entry = raw.trim();
    if (!entry) continue;
    const named = NAMES[entry];
    if (named) {
      out.push(...named);
      continue;
    }
    out.push(cidrOf(entry));
  }
  if (out.length === 0) throw new Error('lists no proxy');
  return [...new Set(out)];
}

function cidrOf(entry: string): string {
  const slash = entry.indexOf('/');
  const address = slash < 0 ? entry : entry.slice(0, slash);
  const family = isIP(address);
  if (family === 0) throw new Error(`${entry} is not an address, a CIDR, "loopback" or "private"`);
  const max = family === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(max) : entry.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max)
    throw new Error(`${entry}: the prefix length must be 0 to ${max}`);
  const prefix = Number(prefixText);
  // Trusting every address is what lets a client write its own address: name the proxies.
  if (prefix === 0) throw new Error(`${entry} trusts every address: list the proxies' addresses or networks`);
  return `${address}/${prefix}`;
}

/** An IPv4 address written as IPv6 (`::ffff:10.0.0.1`, as a dual-stack socket reports it) as IPv4. */
function plain(address: string): string {
  const m = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return m ? (m[1] as string) : address;
}

/** Whether an address is one of the trusted proxies'. */
export function proxyTrust(networks: TrustedProxies): (address: string) => boolean {
  if (networks.length === 0) return () => false;
  const list = new BlockList();
  for (const network of networks) {
    const [address, prefix] = cidrOf(network).split('/') as [string, string];
    list.addSubnet(address, Number(prefix), isIP(address) === 4 ? 'ipv4' : 'ipv6');
  }
  return (address) => {
    const a = plain(address.trim());
    const family = isIP(a);
    if (family === 0) return false;
    try {
      return list.check(a, family === 4 ? 'ipv4' : 'ipv6');
    } catch {
      return false;
    }
  };
}

/**
 * The client's address: the socket's peer, or, when the peer is a trusted proxy, the right-most
 * `X-Forwarded-For` entry that is not one (the left-most when every hop is trusted). Null when
 * the peer is unknown. `forwardedFor` is the header's value, or its values when repeated.
 */
export function clientAddress(
  peer: string | null,
  forwardedFor: string | readonly string[] | undefined,
  trusted: (address: string) => boolean,
): string | null {
  if (!peer) return null;
  if (!trusted(peer) || forwardedFor === undefined) return plain(peer);
  const hops = (typeof forwardedFor === 'string' ? [forwardedFor] : forwardedFor)
    .join(',')
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  let current = plain(peer);
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!trusted(current)) return current;
    current = plain(hops[i] as string);
  }
  return current;
}
