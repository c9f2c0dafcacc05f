// Original file: proto/rampart/v1/common.proto

import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct';

/**
 * The request context of the end user's client, as the application saw it.
 */
export interface Context {
  /**
   * IP address of the end user's client (IPv4 or IPv6), never that of a load balancer or proxy.
   * Required on Authenticate, Risk and Filter. An invalid address is INVALID_ARGUMENT.
   */
  'ip'?: (string);
  /**
   * Request headers of the end user's client: header name to value. Names are case-insensitive.
   * Send all of them; `User-Agent` is required on Risk and Filter. At most 100 headers.
   */
  'headers'?: ({[key: string]: string});
  /**
   * Names of headers that were present but whose value the application scrubbed (Castle's SDKs
   * send `true` for these). They count as present, with no value.
   */
  'scrubbedHeaders'?: (string)[];
  /**
   * The client fingerprint token (`client_id`) produced by the client libraries. Empty, "?", "_"
   * or "false" mean "no fingerprint". In sandbox environments a test token such as
   * `test|device:chrome_on_mac|policy.action:deny|risk:0.9` forces the outcome it names.
   */
  'clientId'?: (string);
  /**
   * The raw User-Agent, for applications that do not forward headers (older SDKs). A
   * `User-Agent` entry in `headers` wins over this field.
   */
  'userAgent'?: (string);
  /**
   * Other context keys older SDKs send (`active`, `locale`, `library`, ...), stored as given.
   * Keys named like the fields above are ignored.
   */
  'extra'?: (_google_protobuf_Struct | null);
}

/**
 * The request context of the end user's client, as the application saw it.
 */
export interface Context__Output {
  /**
   * IP address of the end user's client (IPv4 or IPv6), never that of a load balancer or proxy.
   * Required on Authenticate, Risk and Filter. An invalid address is INVALID_ARGUMENT.
   */
  'ip': (string);
  /**
   * Request headers of the end user's client: header name to value. Names are case-insensitive.
   * Send all of them; `User-Agent` is required on Risk and Filter. At most 100 headers.
   */
  'headers': ({[key: string]: string});
  /**
   * Names of headers that were present but whose value the application scrubbed (Castle's SDKs
   * send `true` for these). They count as present, with no value.
   */
  'scrubbedHeaders': (string)[];
  /**
   * The client fingerprint token (`client_id`) produced by the client libraries. Empty, "?", "_"
   * or "false" mean "no fingerprint". In sandbox environments a test token such as
   * `test|device:chrome_on_mac|policy.action:deny|risk:0.9` forces the outcome it names.
   */
  'clientId': (string);
  /**
   * The raw User-Agent, for applications that do not forward headers (older SDKs). A
   * `User-Agent` entry in `headers` wins over this field.
   */
  'userAgent': (string);
  /**
   * Other context keys older SDKs send (`active`, `locale`, `library`, ...), stored as given.
   * Keys named like the fields above are ignored.
   */
  'extra': (_google_protobuf_Struct__Output | null);
}
