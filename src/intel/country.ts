/**
 * Country names for ISO 3166-1 alpha-2 codes, from the runtime's CLDR data (Intl.DisplayNames),
 * with a few overrides where CLDR's English name is longer than what people expect to read.
 */

const OVERRIDES: Readonly<Record<string, string>> = {
  HK: 'Hong Kong',
  MO: 'Macao',
  MM: 'Myanmar',
  CD: 'DR Congo',
  CG: 'Republic of the Congo',
  PS: 'Palestine',
};

/** CLDR region codes that are not countries (unknown region, pseudo-locales). */
const NOT_COUNTRIES: ReadonlySet<string> = new Set(['ZZ', 'XA', 'XB']);

let displayNames: Intl.DisplayNames | null = null;
const cache = new Map<string, string | null>();

/**
 * Country name for an ISO 3166-1 alpha-2 code, e.g. 'US' -> 'United States'.
 * Case-insensitive; returns null for anything that is not a known two-letter region code.
 */
export function countryName(code: string): string | null {
  if (typeof code !== 'string' || !/^[A-Za-z]{2}$/.test(code)) return null;
  const upper = code.toUpperCase();
  const cached = cache.get(upper);
  if (cached !== undefined) return cached;
  let name: string | null = OVERRIDES[upper] ?? null;
  if (name === null && !NOT_COUNTRIES.has(upper)) {
    displayNames ??= new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });
    name = displayNames.of(upper) ?? null;
  }
  cache.set(upper, name);
  return name;
}
