/**
 * Storage (docs/admin.md, "Storage"): where stored files live, read-only (start-time
 * configuration, `GET /api/_/storage`): the data directory's folder, or the S3-compatible bucket
 * with its endpoint, region, bucket and prefix; never a key.
 */
import { ReadOnlyPage, VariableList } from './ui';

type StorageSettings =
  | { kind: 'local'; path: string; variables: string[] }
  | { kind: 's3'; bucket: string; prefix: string; endpoint: string | null; region: string; forcePathStyle: boolean; credentials: 'keys' | 'sdk-chain'; variables: string[] };

export function StoragePage() {
  return <ReadOnlyPage<StorageSettings> title="Storage" sub="Where the files of file fields are stored." path="/api/_/storage" show={(s) => <StorageCard s={s} />} />;
}

function StorageCard({ s }: { s: StorageSettings }) {
  return (
    <section class="card" aria-labelledby="storage-where">
      <h2 id="storage-where">{s.kind === 'local' ? 'Local folder' : 'S3-compatible bucket'}</h2>
      <p class="notice">Start-time configuration: environment variables read when the server starts. To change them, set the variables below and restart the server (moving the files is up to you).</p>
      <dl class="settings-list">
        {s.kind === 'local' ? (
          <>
            <dt>Folder</dt>
            <dd class="mono">{s.path}</dd>
          </>
        ) : (
          <>
            <dt>Endpoint</dt>
            <dd class="mono">{s.endpoint ?? <span class="muted">AWS S3 (no endpoint set)</span>}</dd>
            <dt>Region</dt>
            <dd class="mono">{s.region}</dd>
            <dt>Bucket</dt>
            <dd class="mono">{s.bucket}</dd>
            <dt>Prefix</dt>
            <dd class="mono">{s.prefix || <span class="muted">none</span>}</dd>
            <dt>Addressing</dt>
            <dd>{s.forcePathStyle ? 'path-style' : 'virtual-hosted'}</dd>
            <dt>Credentials</dt>
            <dd>{s.credentials === 'keys' ? 'access key from the environment (secret not shown)' : "the AWS SDK's own chain (e.g. AWS_ACCESS_KEY_ID, an instance role)"}</dd>
          </>
        )}
      </dl>
      <VariableList names={s.variables} doc="docs/files.md" />
    </section>
  );
}
