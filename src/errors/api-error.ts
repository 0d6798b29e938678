/**
 * The one error type of the HTTP API (docs/api.md, "Errors").
 *
 * Every JSON error leaves the server as the envelope `{status, code, message, data}` in that key
 * order; `writeErrorBody()` in this folder is the only place that builds it. `data` maps a field
 * name to `{code, message}` for `validation_failed`, and is `{}` otherwise.
 */
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
    super(message);
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

/** Serialises the error envelope; key order is part of the contract. */
export function writeErrorBody(err: ApiError): string {
  return JSON.stringify({ status: err.status, code: err.code, message: err.message, data: err.data });
}

/** Any thrown value → ApiError; unknown errors become a generic 500 (the caller logs the original). */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError(500, 'internal', 'Something went wrong while processing your request.');
}
