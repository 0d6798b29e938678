/**
 * The size of the field-encryption key (AES-256-GCM, src/records/encryption.ts), the same whether
 * the data directory's `encryption_key` file, SERVICE_ENCRYPTION_KEY or, on PostgreSQL, the
 * cluster's `_secrets` table (src/store/pg/open.ts) holds it.
 */
export const ENCRYPTION_KEY_BYTES = 32;
