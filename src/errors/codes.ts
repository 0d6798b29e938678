/**
 * The error-code ledger (docs/api.md, "Errors").
 *
 * Codes are frozen machine identifiers: clients match on them, so a shipped code is never renamed
 * or reused. The ledger is append-only: a code leaves ACTIVE_CODES only by moving its name to
 * RETIRED_CODES, which no later code may take. ACTIVE_CODES stays alphabetical with no duplicates;
 * test/unit/errors/codes-ledger.test.ts checks that and that every code the source emits is listed here.
 * `svc explain-code` prints this registry.
 */

export interface CodeEntry {
  /** snake_case identifier, as sent in the error envelope's `code` (or `data.<field>.code`). */
  code: string;
  /** One line: what the code means. */
  summary: string;
  /** A few sentences: what caused it and what the user can do. */
  explanation: string;
}

export const ACTIVE_CODES: readonly CodeEntry[] = Object.freeze([
  { code: 'bad_gateway', summary: 'An outside service the request needed did not answer properly.',
    explanation: 'The server had to call another service, such as an OAuth2 provider\'s token or userinfo endpoint or its discovery document, or the mail transport for a test message (POST /api/settings/test/email), and that call failed, timed out or returned something unusable (status 502). Nothing was signed in or changed. Check the provider or mail configuration and the other service\'s status, then retry.' },
  { code: 'bad_request', summary: 'The request could not be understood.',
    explanation: 'The body, filter, sort, cursor or another parameter is malformed, for example invalid JSON or a filter with a syntax error. The message says which part was rejected. Fix the request and send it again; repeating it unchanged will fail the same way.' },
  { code: 'batch_failed', summary: 'A request of a batch failed, so none of them was written.',
    explanation: 'A `POST /api/batch` runs its requests in one transaction: one failing request (a rule, a validation error, a missing record, a conflict) fails them all (status 400) and nothing is written. `data.requests.<index>` names the failing request, with `response` holding the error it would have had alone. Fix that request and send the whole batch again.' },
  { code: 'collections_frozen', summary: 'Collection definitions cannot be changed on this server.',
    explanation: 'The server runs with frozen collection metadata, so creating, updating or deleting collections is refused with 403. Records can still be written. Change the schema through the deployment (schema apply or a migration) instead of the API.' },
  { code: 'conflict', summary: 'The change conflicts with existing data.',
    explanation: 'An integrity constraint rejected the write, such as a unique value already taken or a record still referenced by another. Reload the current data, resolve the clash (pick another value, remove the reference) and retry.' },
  { code: 'email_not_verified', summary: 'The account email must be verified first.',
    explanation: 'The collection requires a verified email for this action and the account has not confirmed its address. Request a verification email, follow the link, then retry.' },
  { code: 'forbidden', summary: 'You are not allowed to perform this request.',
    explanation: 'You are authenticated, but the access rule or your role does not permit this action, for example a create rule that denies you or a superuser-only route. Sign in as an account that is allowed, or ask an administrator to change the rule.' },
  { code: 'gone', summary: 'The resource existed but has expired.',
    explanation: 'A stateful cursor is unknown or has expired (status 410). Start the listing again from the first page to obtain a fresh cursor.' },
  { code: 'internal', summary: 'The server failed while handling the request.',
    explanation: 'An unexpected error happened on the server; the details are in the server log, not in the response. Retrying may work if the cause was transient. If it keeps happening, report it with the time of the request so the log line can be found.' },
  { code: 'not_found', summary: 'The resource does not exist or is hidden from you.',
    explanation: 'No resource matches the path, or it exists but you may not know about it; the two cases are deliberately indistinguishable. The same code answers a disabled route, method or feature. Check the id and path, and that you are signed in as an account allowed to see it.' },
  { code: 'not_implemented', summary: 'This server does not implement the requested operation.',
    explanation: 'The operation is part of the API but not available in this build or configuration. Check `/api/meta` capabilities for what the server supports, or enable the feature that provides it.' },
  { code: 'overloaded', summary: 'The server is too busy to accept the request.',
    explanation: 'A capacity limit was reached, such as the realtime connection cap or a full work queue (status 503). Wait a moment and retry with backoff.' },
  { code: 'payload_too_large', summary: 'The request body is larger than allowed.',
    explanation: 'The body or an uploaded file exceeds the server limit (status 413). The upload limit is published as `limits.maxUploadSize` in `/api/meta`. Send a smaller body, or use resumable uploads when the server offers them.' },
  { code: 'reauthentication_required', summary: 'This action needs a recent sign-in.',
    explanation: 'The action (such as registering a passkey or linking an OAuth2 provider to the signed-in record) would outlive the current session, so it needs a session made by a primary sign-in (password, magic link, one-time code, OAuth2, passkey) within the last few minutes (SERVICE_REAUTH_MAX_AGE, default 300 seconds). Refreshing a session does not renew its sign-in time. Sign in again, then retry within that time.' },
  { code: 'request_timeout', summary: 'The request body did not arrive in time.',
    explanation: 'The server gives a request body a deadline (SERVICE_BODY_TIMEOUT, 30 seconds by default) and the body was still incomplete when it passed (status 408), as with a stalled or very slow client. Nothing was written. Send the body again over a working connection.' },
  { code: 'too_many_requests', summary: 'Too many attempts in a short time.',
    explanation: 'A rate limit for this endpoint and client key was exceeded (status 429); auth endpoints allow 10 attempts per 60 seconds by default. Wait for the window to pass before trying again.' },
  { code: 'unauthorized', summary: 'Valid authentication is required.',
    explanation: 'The request carried no credentials, or its token or session is invalid, expired or revoked, or belongs to the wrong collection. Sign in again and send the new token or cookie.' },
  { code: 'validation_date', summary: 'The value is not a valid date or is outside the allowed range.',
    explanation: 'A date field received a value that cannot be parsed as a date, or one before its minimum or after its maximum. Send an ISO 8601 date within the bounds shown in the field options.' },
  { code: 'validation_duplicate_name', summary: 'The name is already used.',
    explanation: 'Another collection, or another field of the same collection, already has this name. Choose a different name.' },
  { code: 'validation_encrypted_index', summary: 'An encrypted field cannot be indexed.',
    explanation: 'Encrypted values are stored as ciphertext, so an index on them would be useless and would leak structure. Remove the field from the index, or store the field unencrypted if it must be indexed.' },
  { code: 'validation_encrypted_type', summary: 'Only text, editor and json fields can be encrypted.',
    explanation: 'The encryption option was set on a field of another type. Turn encryption off for this field, or change its type to text, editor or json.' },
  { code: 'validation_encrypted_unique', summary: 'An encrypted field cannot be unique.',
    explanation: 'Uniqueness would need comparing plaintext values, which encryption hides. Drop the unique constraint or the encryption for this field.' },
  { code: 'validation_failed', summary: 'One or more fields failed validation.',
    explanation: 'The submitted data was rejected; `data` maps each offending field to its own `{code, message}`. Look up each field code (the ones starting with `validation_`) for details, fix those fields and resend.' },
  { code: 'validation_invalid_email', summary: 'The value is not a valid email address.',
    explanation: 'An email field, or the email of an auth record, did not parse as an address, or its domain is not allowed by the field options. Send a well-formed address such as name@example.com.' },
  { code: 'validation_invalid_identity_field', summary: 'The identity field setting names an unusable field.',
    explanation: 'An auth collection option lists an identity field that does not exist, is not a text or email field, or is not unique. Point the option at an existing unique text or email field.' },
  { code: 'validation_invalid_name', summary: 'The name is not a valid identifier.',
    explanation: 'Collection and field names must start with a letter or underscore and contain only letters, digits and underscores, within the length limit. Rename it to match.' },
  { code: 'validation_invalid_scale', summary: 'The fixed-point scale must be from 1 to 8.',
    explanation: 'A fixed-point number field was given a scale (digits after the decimal point) outside 1 to 8. Pick a scale in that range.' },
  { code: 'validation_invalid_tenant_field', summary: 'The tenant field setting names an unusable field.',
    explanation: 'The collection names a tenant field that does not exist or has an unsuitable type. Point the option at an existing relation or text field that holds the tenant, or remove the option.' },
  { code: 'validation_invalid_ttl_field', summary: 'The TTL field must name a date or autodate field.',
    explanation: 'The collection `ttl_field` option refers to a missing field or to one that is not a date or autodate. Point it at a date or autodate field of the collection.' },
  { code: 'validation_max', summary: 'The value is above the maximum.',
    explanation: 'A number is larger than the field maximum, or a text, list or file is longer or bigger than allowed. Send a smaller value; the field options show the limit.' },
  { code: 'validation_min', summary: 'The value is below the minimum.',
    explanation: 'A number is smaller than the field minimum, or a text, password or list is shorter than allowed (passwords need at least 8 characters by default). Send a larger or longer value.' },
  { code: 'validation_not_found', summary: 'A referenced record does not exist.',
    explanation: 'A relation field points at an id that is not in the target collection, or that you may not see. Check the ids, create the target record first, or remove the reference.' },
  { code: 'validation_number', summary: 'The value is not a valid number.',
    explanation: 'A number field received something that is not a finite number, or a non-integer where only integers are allowed. Send a plain JSON number within the field constraints.' },
  { code: 'validation_overflow', summary: 'The number is too large to store.',
    explanation: 'A fixed-point value, once scaled, does not fit in a signed 64-bit integer. Send a smaller magnitude or use a smaller scale for the field.' },
  { code: 'validation_pattern', summary: 'The value does not match the required pattern.',
    explanation: 'A text field has a pattern and the value does not match it; in a schema change, the pattern itself is not a valid regular expression. Send a matching value, or fix the pattern.' },
  { code: 'validation_relation', summary: 'The relation value is invalid.',
    explanation: 'Too many ids were given for the field maxSelect, too few for its minSelect, or the target collection cannot be resolved. Send the allowed number of ids and check the target collection exists.' },
  { code: 'validation_required', summary: 'A value is required.',
    explanation: 'The field is required and the value is missing, empty or zero. Provide a non-empty value.' },
  { code: 'validation_reserved_name', summary: 'The name is reserved by the system.',
    explanation: 'System collections and fields (such as id, created, updated, and names used internally) cannot be reused. Pick another name.' },
  { code: 'validation_reserved_suffix', summary: 'Collection names cannot end in _fts.',
    explanation: 'Names ending in `_fts` are reserved for the full-text search tables the server creates. Choose a name without that suffix.' },
  { code: 'validation_searchable_encrypted', summary: 'An encrypted field cannot be searchable.',
    explanation: 'Full-text search indexes plaintext, which encryption hides. Turn off either `searchable` or encryption for this field.' },
  { code: 'validation_searchable_type', summary: 'Only text and editor fields can be searchable.',
    explanation: 'The `searchable` option was set on a field of another type. Remove the option, or change the field type to text or editor.' },
  { code: 'validation_select', summary: 'The value is not an allowed choice.',
    explanation: 'A select field received a value outside its list of values, or more values than its maxSelect allows. Send only listed values, and no more than allowed.' },
  { code: 'validation_too_precise', summary: 'The number has more decimals than the field scale.',
    explanation: 'A fixed-point field keeps exactly its scale of decimal places and does not round silently. Round the value to that many decimals before sending it.' },
  { code: 'validation_type', summary: 'The value has the wrong JSON type.',
    explanation: 'The field expects another JSON type, for example a string where an object was sent, or an array for a single relation. Send the type the field declares.' },
  { code: 'validation_value', summary: 'The value could not be converted for this field.',
    explanation: 'The value has an acceptable JSON type but could not be coerced into the field value, for example malformed JSON in a json field or an unusable file. Check the message for the specific problem and send a corrected value.' },
]);

/** Names that were once active and may never be reused. Empty until a code is retired. */
export const RETIRED_CODES: readonly string[] = Object.freeze([]);

const BY_CODE: ReadonlyMap<string, CodeEntry> = new Map(ACTIVE_CODES.map((e) => [e.code, e]));

/** The active entry for `code` (exact match), or undefined for unknown or retired codes. */
export function lookupCode(code: string): CodeEntry | undefined {
  return BY_CODE.get(code);
}
