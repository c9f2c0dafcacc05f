// Original file: proto/rampart/v1/privacy.proto


/**
 * Whose data to export.
 */
export interface RequestAccessRequest {
  /**
   * The application's identifier of the user.
   */
  'userId'?: (string);
  /**
   * The user's e-mail address; every user with that address is meant.
   */
  'email'?: (string);
  /**
   * The user, by one of their identifiers. Required.
   */
  'user'?: "userId"|"email";
}

/**
 * Whose data to export.
 */
export interface RequestAccessRequest__Output {
  /**
   * The application's identifier of the user.
   */
  'userId'?: (string);
  /**
   * The user's e-mail address; every user with that address is meant.
   */
  'email'?: (string);
  /**
   * The user, by one of their identifiers. Required.
   */
  'user'?: "userId"|"email";
}
