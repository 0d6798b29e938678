/** HTTP status lines for uWS's writeStatus (it wants "200 OK", not 200). */
const TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 206: 'Partial Content', 302: 'Found', 304: 'Not Modified',
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed',
  409: 'Conflict', 410: 'Gone', 413: 'Payload Too Large', 415: 'Unsupported Media Type', 416: 'Range Not Satisfiable',
  429: 'Too Many Requests', 500: 'Internal Server Error', 501: 'Not Implemented', 503: 'Service Unavailable',
};
const cache = new Map<number, string>();

export function statusLine(status: number): string {
  let s = cache.get(status);
  if (s === undefined) {
    s = `${status} ${TEXT[status] ?? 'Unknown'}`;
    cache.set(status, s);
  }
  return s;
}
