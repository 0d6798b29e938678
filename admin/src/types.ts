/** The shapes of the svc REST API the admin UI reads (docs/api.md). */

export type FieldType =
  | 'text' | 'editor' | 'number' | 'bool' | 'email' | 'url' | 'date' | 'autodate'
  | 'select' | 'relation' | 'json' | 'file';

export const FIELD_TYPES: FieldType[] = ['text', 'editor', 'number', 'bool', 'email', 'url', 'date', 'autodate', 'select', 'relation', 'json', 'file'];

export type FieldOptions = Record<string, unknown> & {
  required?: boolean;
  unique?: boolean;
  hidden?: boolean;
  encrypted?: boolean;
  searchable?: boolean;
  maxSelect?: number | null;
  minSelect?: number | null;
  values?: string[];
  collectionId?: string;
  mode?: 'fixed' | null;
  mimeTypes?: string[];
  /** thumbnail sizes served with ?thumb= (docs/files.md, "Thumbnails") */
  thumbs?: string[];
  protected?: boolean;
};

export interface Field {
  id: string;
  name: string;
  type: FieldType;
  system?: boolean;
  options: FieldOptions;
}

export interface IndexDef {
  name: string;
  fields: string[];
  unique: boolean;
}

export const RULE_NAMES = ['listRule', 'viewRule', 'createRule', 'updateRule', 'deleteRule'] as const;
export type RuleName = (typeof RULE_NAMES)[number];

export interface AuthOptions {
  identityFields: string[];
  minPasswordLength: number;
  two_factor: 'disabled' | 'optional' | 'required';
  require_verified: boolean;
  session: { store: 'epoch' | 'table' };
  methods: Record<string, unknown>;
}

export interface Collection extends Record<RuleName, string | null> {
  id: string;
  name: string;
  type: 'base' | 'auth';
  system: boolean;
  schema: Field[];
  indexes: Array<IndexDef | string>;
  options: { ttl_field?: string | null; auth?: AuthOptions };
  created: string;
  updated: string;
}

export type RecordModel = Record<string, unknown> & { id: string; collectionId: string; collectionName: string; created?: string; updated?: string };

export interface ListResult {
  page: number;
  perPage: number;
  items: RecordModel[];
  totalItems?: number;
  totalPages?: number;
  nextCursor?: string | null;
  prevCursor?: string | null;
  hasNext?: boolean;
  hasPrev?: boolean;
}

export interface Meta {
  svc: string;
  commit: string;
  api: number;
  capabilities: Record<string, boolean>;
  endpoints: { state: string | null };
  limits: { maxUploadSize: number; maxPerPage: number };
}

export interface SuperuserRecord {
  id: string;
  email: string;
}
