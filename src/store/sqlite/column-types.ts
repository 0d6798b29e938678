/**
 * The SQLite column type of each field (its storage class in the record table): numbers are `REAL`,
 * fixed-point numbers and bools `INTEGER`, everything else `TEXT` (dates as ISO-like text,
 * multi-valued fields and json as JSON text). Vectors live in a side column of their own
 * (vector-sql.ts). Field types: docs/api.md, "Collections"; the values the codecs store
 * (src/collections/fields/) fit these classes.
 */
import { isFixed, type Field } from '../../model/schema.js';

export function columnType(field: Field): 'TEXT' | 'REAL' | 'INTEGER' {
  switch (field.type) {
    case 'number':
      return isFixed(field) ? 'INTEGER' : 'REAL';
    case 'bool':
      return 'INTEGER';
    default:
      return 'TEXT';
  }
}
