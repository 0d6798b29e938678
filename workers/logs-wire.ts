/**
 * How the main thread's request-log buffer (src/logs/request-logs.ts) hands entries to the
 * request-log thread (workers/logs.ts): one string per batch, each entry ended by `END`, its
 * fields separated by `SEP`; values never hold either (the main thread turns control characters
 * into spaces). A string is the cheapest to fill on the request path and to send (no structured
 * clone of many values; bench/README.md, "Request logs").
 *
 * - a request: `REQUEST`, epoch ms, method, path, query string, status, milliseconds
 *   (fractional), caller (`users`, `guest`, `token`), peer address, User-Agent ('' when unknown);
 * - a server message: `MESSAGE`, epoch ms, level (a number), text, logger scope.
 */
export const SEP = '\u0001';
export const END = '\u0002';
export const REQUEST = 'r';
export const MESSAGE = 's';
/** Fields of a request entry and of a server message, kind included. */
export const REQUEST_FIELDS = 10;
export const MESSAGE_FIELDS = 5;
