/**
 * Varied, reproducible login traffic for the benchmarks: a population of users, each with a home
 * address, sometimes a second one (a phone on a mobile network), rarely a stranger's; one or two
 * devices (fingerprints) of their own and now and then a new one; a browser of their own. Users
 * are picked with a skew (a few are much more active than most), as on a real site. Everything
 * comes from a seeded generator, so two runs send the same calls.
 */

/** Mulberry32: small, fast and good enough to spread test traffic. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seeded generator with the draws the benchmarks' documents are made of. */
export function seeded(seed: number): {
  rnd: () => number;
  /** An integer in [0, n). */
  int: (n: number) => number;
  /** `n` hexadecimal digits. */
  hex: (n: number) => string;
} {
  const rnd = rng(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  const hex = (n: number) => {
    let s = '';
    while (s.length < n)
      s += Math.floor(rnd() * 4294967296)
        .toString(16)
        .padStart(8, '0');
    return s.slice(0, n);
  };
  return { rnd, int, hex };
}

/** Real user agents of common browsers. */
export const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0',
  'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
];
export const LANGUAGES = [
  'en-US,en;q=0.9',
  'en-GB,en;q=0.9',
  'de-DE,de;q=0.9,en;q=0.8',
  'fr-FR,fr;q=0.9',
  'es-ES,es;q=0.9',
  'pt-BR,pt;q=0.9',
  'ja-JP,ja;q=0.9',
];
/** First octets of networks of residential and mobile providers in several countries. */
export const NETWORKS = [
  2, 5, 24, 31, 37, 46, 62, 66, 73, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94,
  95, 98, 99, 108, 109, 151, 176, 178, 188, 212, 213, 217,
];

/** Request headers as Castle's SDKs forward them (User-Agent first). */
export type Headers = Record<string, string>;

export interface Login {
  userId: string;
  email: string;
  ip: string;
  fingerprint: string;
  headers: Headers;
}

interface Person {
  home: string;
  mobile: string;
  devices: string[];
  headers: Headers;
}

function address(r: () => number): string {
  const first = NETWORKS[Math.floor(r() * NETWORKS.length)] as number;
  return `${first}.${Math.floor(r() * 256)}.${Math.floor(r() * 256)}.${1 + Math.floor(r() * 254)}`;
}

/** A population of `users` people and the logins they make. */
export class Traffic {
  private readonly people: Person[];
  private readonly r: () => number;

  constructor(
    readonly users: number,
    seed = 42,
    readonly prefix = 'bench',
  ) {
    const r = rng(seed);
    this.r = rng(seed ^ 0x5bd1e995);
    this.people = Array.from({ length: users }, (_, i) => ({
      home: address(r),
      mobile: address(r),
      devices: [`${prefix}-fp-${i}-a`, `${prefix}-fp-${i}-b`],
      headers: {
        'User-Agent': USER_AGENTS[Math.floor(r() * USER_AGENTS.length)] as string,
        Accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
        'Accept-Language': LANGUAGES[Math.floor(r() * LANGUAGES.length)] as string,
        'Accept-Encoding': 'gzip, deflate, br',
      },
    }));
  }

  /** Skewed pick: the most active tenth of the users make 40% of the calls, the top hundredth 16%. */
  private pickUser(): number {
    const u = this.r();
    return Math.min(this.users - 1, Math.floor(this.users * u ** 2.5));
  }

  /** The next login: mostly from home on the usual device. */
  next(): Login {
    const i = this.pickUser();
    const p = this.people[i] as Person;
    const where = this.r();
    const which = this.r();
    return {
      userId: `${this.prefix}-${i}`,
      email: `${this.prefix}${i}@example.com`,
      ip: where < 0.85 ? p.home : where < 0.97 ? p.mobile : address(this.r),
      fingerprint:
        which < 0.9
          ? (p.devices[0] as string)
          : which < 0.98
            ? (p.devices[1] as string)
            : `${this.prefix}-fp-new-${Math.floor(this.r() * 1e9)}`,
      headers: p.headers,
    };
  }
}

/** The Castle JSON body of a `$login` risk call. */
export const riskBody = (l: Login) => ({
  event: '$login',
  user: { id: l.userId, email: l.email },
  request_token: l.fingerprint,
  context: { ip: l.ip, headers: l.headers },
});

/** The Castle JSON body of a `$login.failed` track call. */
export const trackBody = (l: Login) => ({
  event: '$login.failed',
  user: { id: l.userId, email: l.email },
  request_token: l.fingerprint,
  context: { ip: l.ip, headers: l.headers },
});
