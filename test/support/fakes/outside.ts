/**
 * Fakes of the core's ports to the outside world: Intel (a table of addresses and of throw-away
 * mail domains; user agents parsed by the real parser, which needs no reference data), HttpPoster (answers from a
 * function, every request kept) and Mailer (every message kept).
 */
import type { HttpPost, HttpPoster, HttpPostResult, Intel } from '../../../src/core/ports';
import type { MailMessage, Mailer } from '../../../src/core/privacy/ports';
import type { GeoLocation, IpIntel } from '../../../src/intel/types';
import { parseUserAgent } from '../../../src/intel/user-agent';

/**
 * The throw-away mail domains the fake knows (the real list, 120,000 domains read on first use,
 * is tested in test/unit/intel/reference-data.spec.ts): a domain here or a subdomain of one.
 */
const DISPOSABLE = new Set(['mailinator.com', 'guerrillamail.com', 'yopmail.com', '10minutemail.com']);
function isDisposableEmail(emailOrDomain: string): boolean {
  let domain = emailOrDomain.slice(emailOrDomain.lastIndexOf('@') + 1).toLowerCase();
  for (;;) {
    if (DISPOSABLE.has(domain)) return true;
    const dot = domain.indexOf('.');
    if (dot < 0) return false;
    domain = domain.slice(dot + 1);
  }
}

/** What the fake knows of an address: a location and flags (everything else plain). */
export interface FakeAddress {
  country?: string;
  lat?: number;
  lon?: number;
  hosting?: boolean;
  tor?: boolean;
  asn?: { number: number; organization: string };
}

export interface FakeIntel extends Intel {
  /** Teach the fake an address. */
  set(ip: string, address: FakeAddress): void;
}

/** Unknown addresses are plain: a residential address in Germany (near Berlin). */
export function createFakeIntel(addresses: Record<string, FakeAddress> = {}): FakeIntel {
  const table = new Map(Object.entries(addresses));
  return {
    set: (ip, address) => void table.set(ip, address),
    lookupIp(ip: string): IpIntel {
      const a = table.get(ip) ?? {};
      const location: GeoLocation = {
        country_code: a.country ?? 'DE',
        country: null,
        region: null,
        region_code: null,
        city: null,
        lat: a.lat ?? 52.52,
        lon: a.lon ?? 13.405,
      };
      return {
        ip,
        version: ip.includes(':') ? 6 : 4,
        location,
        asn: a.asn ?? { number: 3320, organization: 'Deutsche Telekom AG' },
        hosting: a.hosting ?? false,
        vpn: false,
        relay: false,
        tor: a.tor ?? false,
        bogon: false,
      };
    },
    parseUserAgent,
    isDisposableEmail,
  };
}

export interface FakeHttpPoster extends HttpPoster {
  readonly requests: { url: string; request: HttpPost }[];
}

/** Answers each POST with `answer` (default 200). */
export function createFakeHttpPoster(
  answer: (url: string, request: HttpPost) => HttpPostResult | Promise<HttpPostResult> = () => ({
    status: 200,
  }),
): FakeHttpPoster {
  const requests: { url: string; request: HttpPost }[] = [];
  return {
    requests,
    async post(url, request) {
      requests.push({ url, request });
      return answer(url, request);
    },
  };
}

export interface FakeMailer extends Mailer {
  readonly sent: MailMessage[];
}

export function createFakeMailer(): FakeMailer {
  const sent: MailMessage[] = [];
  return {
    sent,
    async send(message) {
      sent.push(message);
    },
  };
}
