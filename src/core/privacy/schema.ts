/**
 * The body of `POST|DELETE /v1/privacy/users` (newer SDKs): the user named by an identifier.
 * PrivacyService.resolveIdentifier validates with it, and the OpenAPI document describes it.
 */
import { z } from 'zod';

const MAX_IDENTIFIER = 1024;
const IDENTIFIER = `must be a non-empty string of at most ${MAX_IDENTIFIER} characters`;

export const privacyIdentifierSchema = z
  .object({
    identifier: z
      .string({ required_error: IDENTIFIER, invalid_type_error: IDENTIFIER })
      .min(1, IDENTIFIER)
      .max(MAX_IDENTIFIER, IDENTIFIER)
      .describe('The user id ($id) or e-mail address ($email)'),
    identifier_type: z
      .enum(['$id', '$email'], { errorMap: () => ({ message: 'must be "$id" or "$email"' }) })
      .nullish()
      .describe('What the identifier is; $id when absent'),
  })
  .passthrough();
