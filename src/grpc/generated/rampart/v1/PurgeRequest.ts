// Original file: proto/rampart/v1/privacy.proto


/**
 * Whose data to delete.
 */
export interface PurgeRequest {
  /**
   * The application's identifier of the user.
   */
  'userId'?: (string);
  /**
   * The user's e-mail address; every user with that address is purged.
   */
  'email'?: (string);
  /**
   * The user, by one of their identifiers. Required.
   */
  'user'?: "userId"|"email";
}

/**
 * Whose data to delete.
 */
export interface PurgeRequest__Output {
  /**
   * The application's identifier of the user.
   */
  'userId'?: (string);
  /**
   * The user's e-mail address; every user with that address is purged.
   */
  'email'?: (string);
  /**
   * The user, by one of their identifiers. Required.
   */
  'user'?: "userId"|"email";
}
