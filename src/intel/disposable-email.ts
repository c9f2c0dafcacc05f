/**
 * Disposable (throw-away) e-mail domain detection, backed by the `disposable-email-domains`
 * package (MIT): `index.json` lists exact domains, `wildcard.json` lists domains whose every
 * subdomain is disposable. Both are read once, on first use, into Sets.
 */
import { readFileSync } from 'node:fs';

interface DomainSets {
  /** Domains that are disposable themselves, and so are their subdomains. */
  exact: ReadonlySet<string>;
  /** Domains whose subdomains are disposable (the bare domain may be legitimate, e.g. craigslist.org). */
  wildcard: ReadonlySet<string>;
}

let sets: DomainSets | null = null;

function readDomainList(file: string): Set<string> {
  const parsed: unknown = JSON.parse(
    readFileSync(require.resolve(`disposable-email-domains/${file}`), 'utf8'),
  );
  if (!Array.isArray(parsed)) throw new Error(`disposable-email-domains/${file} is not a JSON array`);
  const out = new Set<string>();
  for (const d of parsed) if (typeof d === 'string' && d.length > 0) out.add(d.toLowerCase());
  return out;
}

function load(): DomainSets {
  sets ??= { exact: readDomainList('index.json'), wildcard: readDomainList('wildcard.json') };
  return sets;
}

/** Extracts the lower-cased domain from an address or bare domain; null when there is none. */
function domainOf(emailOrDomain: string): string | null {
  if (typeof emailOrDomain !== 'string') return null;
  const at = emailOrDomain.lastIndexOf('@');
  const domain = (at >= 0 ? emailOrDomain.slice(at + 1) : emailOrDomain)
    .trim()
    .toLowerCase()
    .replace(/\.+$/, '');
  return domain.length > 0 && domain.length <= 253 && !/\s/.test(domain) ? domain : null;
}

/**
 * True when the e-mail's domain (or the given bare domain) is a known disposable-mail domain;
 * also matches subdomains of listed domains. Case-insensitive.
 */
export function isDisposableEmail(emailOrDomain: string): boolean {
  const domain = domainOf(emailOrDomain);
  if (domain === null) return false;
  const { exact, wildcard } = load();
  if (exact.has(domain)) return true;
  // Walk the parent domains: a.b.mailinator.com -> b.mailinator.com -> mailinator.com -> com.
  let dot = domain.indexOf('.');
  while (dot >= 0) {
    const parent = domain.slice(dot + 1);
    if (exact.has(parent) || wildcard.has(parent)) return true;
    dot = domain.indexOf('.', dot + 1);
  }
  return false;
}
