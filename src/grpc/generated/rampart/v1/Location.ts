// Original file: proto/rampart/v1/devices.proto


/**
 * Where an IP address is, as far as the offline geo data knows.
 */
export interface Location {
  /**
   * ISO 3166-1 alpha-2 country code, upper case; empty when unknown.
   */
  'countryCode'?: (string);
  /**
   * English country name; empty when unknown.
   */
  'country'?: (string);
  /**
   * First-level subdivision (state, province); empty when unknown.
   */
  'region'?: (string);
  /**
   * Subdivision code; empty when unknown.
   */
  'regionCode'?: (string);
  /**
   * City; empty when unknown.
   */
  'city'?: (string);
  /**
   * Latitude in degrees; absent when unknown.
   */
  'lat'?: (number | string);
  /**
   * Longitude in degrees; absent when unknown.
   */
  'lon'?: (number | string);
  '_lat'?: "lat";
  '_lon'?: "lon";
}

/**
 * Where an IP address is, as far as the offline geo data knows.
 */
export interface Location__Output {
  /**
   * ISO 3166-1 alpha-2 country code, upper case; empty when unknown.
   */
  'countryCode': (string);
  /**
   * English country name; empty when unknown.
   */
  'country': (string);
  /**
   * First-level subdivision (state, province); empty when unknown.
   */
  'region': (string);
  /**
   * Subdivision code; empty when unknown.
   */
  'regionCode': (string);
  /**
   * City; empty when unknown.
   */
  'city': (string);
  /**
   * Latitude in degrees; absent when unknown.
   */
  'lat'?: (number);
  /**
   * Longitude in degrees; absent when unknown.
   */
  'lon'?: (number);
  '_lat'?: "lat";
  '_lon'?: "lon";
}
