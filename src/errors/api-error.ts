/**
 * The one error type of the HTTP API (docs/api.md, "Errors").
 *
 * Every JSON error leaves the server as the envelope `{status, code, message, data}` in that key
 * order; `writeErrorBody()` in this folder is the only place that builds it. `data` maps a field
 * name to `{code, message}` for `validation_failed`, and is `{}` otherwise.
 */
import { ConstraintViolation, GuardFailed, InvalidQuery, InvalidValue, NotFound, QueryTooComplex, StoreError, UnsupportedSchema, WriterClosed } from '../store/errors/store-errors.js';

export type FieldError = { code: string; message: string };

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly data: Record<string, FieldError>;

  /**
   * @param status HTTP status (400..599)
   * @param code   a code from the ledger in ./codes.ts
   * @param message human text; may change between releases
   * @param data   per-field errors for `validation_failed`
   */
  constructor(status: number, code: string, message: string, data: Record<string, FieldError> = {}) {
    // A client error (4xx) is an answer, not a fault: it carries no stack trace, whose capture
    // costs more than the rest of a refused request (bench/README.md, "Error answers").
    const limit = Error.stackTraceLimit;
    if (status < 500) Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.status = status;
    this.code = code;
    this.data = data;
  }

  static badRequest(message: string): ApiError {
    return new ApiError(400, 'bad_request', message);
  }
  /** 400 `validation_failed` with one entry per offending field. */
  static validation(data: Record<string, FieldError>, message = 'Failed to validate the submitted data.'): ApiError {
    return new ApiError(400, 'validation_failed', message, data);
  }
  static unauthorized(message = 'The request requires valid authentication.'): ApiError {
    return new ApiError(401, 'unauthorized', message);
  }
  static forbidden(message = 'You are not allowed to perform this request.'): ApiError {
    return new ApiError(403, 'forbidden', message);
  }
  static notFound(message = 'The requested resource was not found.'): ApiError {
    return new ApiError(404, 'not_found', message);
  }
  static conflict(message = 'The request conflicts with existing data.'): ApiError {
    return new ApiError(409, 'conflict', message);
  }
  static tooManyRequests(): ApiError {
    return new ApiError(429, 'too_many_requests', 'Too many requests. Try again later.');
  }
  static invalidCredentials(): ApiError {
    return new ApiError(400, 'bad_request', 'Invalid credentials.');
  }
}

/**
 * For a write job's failed guard (GuardFailed of src/store/errors/store-errors.ts): the index in
 * the job of the step whose guard failed, so a batch of writes can tell whose it was
 * (WriteBatch, src/records/records-write.ts); null for any other error.
 */
export function failedGuardStep(err: unknown): number | null {
  return err instanceof GuardFailed ? err.step : null;
}

/** Serialises the error envelope; key order is part of the contract. */
export function writeErrorBody(err: ApiError): string {
  return JSON.stringify({ status: err.status, code: err.code, message: err.message, data: err.data });
}

/**
 * The API's answer to a thrown value it expects: an ApiError as it is, a typed storage error of
 * src/store/errors/store-errors.ts as the API answers it (the one place that maps them); null for
 * anything else (a bug or a failure nobody anticipated: the caller answers 500 and logs it).
 *
 * The storage errors, each answered as it was before storage stopped throwing ApiError:
 * - GuardFailed: the failing step's `fail` (status, code, message, data), or 404 `not_found`
 *   when the step set none;
 * - NotFound: 404 `not_found` with its message;
 * - InvalidQuery, QueryTooComplex, InvalidValue, UnsupportedSchema: 400 `bad_request` with its message;
 * - WriterClosed: 503 `overloaded`;
 * - ConstraintViolation (UniqueViolation among them): 409 `conflict` naming the first field the
 *   database named (docs/api.md, "Errors").
 */
export function knownApiError(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  if (!(err instanceof StoreError)) return null;
  if (err instanceof GuardFailed) {
    const f = err.fail;
    return f ? new ApiError(f.status, f.code, f.message, f.data ?? {}) : ApiError.notFound();
  }
  if (err instanceof NotFound) return ApiError.notFound(err.message);
  if (err instanceof InvalidQuery || err instanceof QueryTooComplex || err instanceof InvalidValue || err instanceof UnsupportedSchema) {
    return ApiError.badRequest(err.message);
  }
  if (err instanceof WriterClosed) return new ApiError(503, 'overloaded', err.message);
  if (err instanceof ConstraintViolation) {
    const field = err.fields[0];
    return ApiError.conflict(field ? `The value of "${field}" conflicts with an existing record.` : 'The record conflicts with an existing record.');
  }
  return null;
}

/** Any thrown value → ApiError (see knownApiError); unknown errors become a generic 500 (the caller logs the original). */
export function toApiError(err: unknown): ApiError {
  return knownApiError(err) ?? new ApiError(500, 'internal', 'Something went wrong while processing your request.');
}
