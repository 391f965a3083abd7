/** A JSON object (not an array, not null): the shape parsed server JSON is checked for. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
