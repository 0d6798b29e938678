/**
 * `s` (base64url) with one character changed so the bytes it decodes to differ. The last character
 * of an encoding can carry padding bits that decoding drops, so changing it (or overwriting the end
 * with a fixed string that may equal the original) sometimes leaves the bytes as they were; the
 * second-to-last character always carries six bits of data.
 */
export function tamperBase64url(s: string): string {
  if (s.length < 2) throw new Error('tamperBase64url: need at least two characters');
  const i = s.length - 2;
  return `${s.slice(0, i)}${s[i] === 'A' ? 'B' : 'A'}${s.slice(i + 1)}`;
}
