/** The codec of every field type. */
import type { FieldType } from '../../model/schema.js';
import type { FieldCodec } from './common.js';
import { editorCodec, emailCodec, textCodec, urlCodec } from './text.js';
import { numberCodec } from './number.js';
import { autodateCodec, dateCodec } from './date.js';
import { relationCodec, selectCodec } from './choice.js';
import { boolCodec, jsonCodec } from './json.js';
import { fileCodec } from './file.js';

export const CODECS: Partial<Record<FieldType, FieldCodec>> = {
  text: textCodec,
  number: numberCodec,
  bool: boolCodec,
  email: emailCodec,
  url: urlCodec,
  date: dateCodec,
  autodate: autodateCodec,
  select: selectCodec,
  relation: relationCodec,
  json: jsonCodec,
  editor: editorCodec,
  file: fileCodec,
};

export function codecFor(type: string): FieldCodec | undefined {
  return Object.hasOwn(CODECS, type) ? CODECS[type as FieldType] : undefined;
}
