/**
 * Public surface of the intel module: offline reference data and pure lookups (IP geolocation,
 * ASN, hosting/bogon flags, User-Agent parsing, disposable e-mail domains, country names,
 * distances). No network and no database; the IP databases load lazily, once, into memory.
 * Data attribution (CC-BY-4.0): IP geolocation and ASN names by DB-IP.com, ASN data by
 * routeviews.org and nro.net.
 */
export type { GeoLocation, AsnInfo, IpIntel, ParsedUserAgent, CastleUserAgent, AppClient } from './types';
export { normaliseIp, lookupIp, initIntel } from './ip';
export { parseUserAgent, castleUserAgent } from './user-agent';
export { isDisposableEmail } from './disposable-email';
export { countryName } from './country';
export { distanceKm } from '../core/intel/distance';
export { offlineIntel } from './offline';
export { ipListsInstalled } from './ranges';
