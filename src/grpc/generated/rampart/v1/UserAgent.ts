// Original file: proto/rampart/v1/devices.proto


/**
 * A parsed User-Agent.
 */
export interface UserAgent {
  /**
   * The User-Agent as sent.
   */
  'raw'?: (string);
  /**
   * Browser name, e.g. "Chrome".
   */
  'browser'?: (string);
  /**
   * Browser version.
   */
  'version'?: (string);
  /**
   * Operating system with version, e.g. "Mac OS X 10.15.7".
   */
  'os'?: (string);
  /**
   * Whether the device is a phone or tablet.
   */
  'mobile'?: (boolean);
  /**
   * Operating system family, e.g. "Mac OS X".
   */
  'platform'?: (string);
  /**
   * Device model or class, e.g. "Unknown", "iPhone".
   */
  'device'?: (string);
  /**
   * Browser family, e.g. "Chrome".
   */
  'family'?: (string);
}

/**
 * A parsed User-Agent.
 */
export interface UserAgent__Output {
  /**
   * The User-Agent as sent.
   */
  'raw': (string);
  /**
   * Browser name, e.g. "Chrome".
   */
  'browser': (string);
  /**
   * Browser version.
   */
  'version': (string);
  /**
   * Operating system with version, e.g. "Mac OS X 10.15.7".
   */
  'os': (string);
  /**
   * Whether the device is a phone or tablet.
   */
  'mobile': (boolean);
  /**
   * Operating system family, e.g. "Mac OS X".
   */
  'platform': (string);
  /**
   * Device model or class, e.g. "Unknown", "iPhone".
   */
  'device': (string);
  /**
   * Browser family, e.g. "Chrome".
   */
  'family': (string);
}
