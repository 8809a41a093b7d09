/**
 * The beginning of a text, at most `max` UTF-16 units (JavaScript's `length`), marked with `…`
 * when cut. A cut never splits a surrogate pair: half of one is not valid UTF-8, which DynamoDB
 * and JSON answers refuse or mangle.
 */
export function excerpt(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = max - 1;
  const code = text.charCodeAt(end - 1);
  const splitsPair = code >= 0xd800 && code <= 0xdbff;
  return `${text.slice(0, splitsPair ? end - 1 : end)}…`;
}
