/**
 * Where stored files live (docs/files.md, "Files in an S3-compatible bucket"): `SERVICE_STORAGE`
 * unset or `local` keeps them in `<dataDir>/storage`; `s3://bucket/prefix` puts them in an
 * S3-compatible bucket, with `SERVICE_S3_ENDPOINT` (e.g. http://127.0.0.1:9000; unset: AWS),
 * `SERVICE_S3_REGION` (default us-east-1), `SERVICE_S3_ACCESS_KEY_ID` and
 * `SERVICE_S3_SECRET_ACCESS_KEY` (unset: the AWS SDK's own chain, e.g. AWS_ACCESS_KEY_ID or an
 * instance role) and `SERVICE_S3_FORCE_PATH_STYLE` (default true with an endpoint, false without).
 */
import type { S3Options } from '../files/s3-blob-store.js';
import { ConfigError, parseBool } from './parse.js';

/**
 * The object store named by the environment, or null for the local folder.
 * @throws ConfigError for a malformed SERVICE_STORAGE, endpoint or flag, or a key without its secret
 */
export function loadStorageConfig(env: NodeJS.ProcessEnv): S3Options | null {
  const raw = env.SERVICE_STORAGE?.trim();
  if (!raw || raw === 'local') return null;
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(raw);
  if (!m) throw new ConfigError('SERVICE_STORAGE', raw, 'local, or s3://bucket[/prefix]');
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (/[\u0000-\u001f\\]|\/\//.test(prefix)) throw new ConfigError('SERVICE_STORAGE', raw, 'a key prefix without control characters, backslashes or empty segments');
  const endpoint = env.SERVICE_S3_ENDPOINT?.trim() || undefined;
  if (endpoint && !/^https?:\/\/[^\s/]+(\/.*)?$/.test(endpoint)) throw new ConfigError('SERVICE_S3_ENDPOINT', endpoint, 'an http:// or https:// URL');
  const accessKeyId = env.SERVICE_S3_ACCESS_KEY_ID?.trim() || undefined;
  const secretAccessKey = env.SERVICE_S3_SECRET_ACCESS_KEY?.trim() || undefined;
  if (!!accessKeyId !== !!secretAccessKey) throw new ConfigError(accessKeyId ? 'SERVICE_S3_SECRET_ACCESS_KEY' : 'SERVICE_S3_ACCESS_KEY_ID', '', 'both SERVICE_S3_ACCESS_KEY_ID and SERVICE_S3_SECRET_ACCESS_KEY, or neither');
  const pathStyle = env.SERVICE_S3_FORCE_PATH_STYLE?.trim();
  return {
    bucket: m[1],
    prefix,
    endpoint,
    region: env.SERVICE_S3_REGION?.trim() || 'us-east-1',
    accessKeyId,
    secretAccessKey,
    forcePathStyle: pathStyle ? parseBool({ name: 'SERVICE_S3_FORCE_PATH_STYLE', value: pathStyle }) : !!endpoint,
  };
}
