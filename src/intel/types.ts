/** The intel adapter speaks the core's types (src/core/intel/types.ts). */
export type {
  GeoLocation,
  AsnInfo,
  IpIntel,
  ParsedUserAgent,
  CastleUserAgent,
  AppClient,
} from '../core/intel/types';
