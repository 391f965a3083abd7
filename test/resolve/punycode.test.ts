import { describe, expect, it } from 'vitest';
import { decodePunycode } from '../../src/resolve/punycode.js';

describe('decodePunycode', () => {
  // RFC 3492 §7.1 samples, and labels seen in host names.
  it.each([
    ['bcher-kva', 'bücher'],
    ['mnchen-3ya', 'münchen'],
    ['n3h', '☃'],
    ['ls8h', '💩'],
    ['ihqwcrb4cv8a8dqg056pqjye', '他们为什么不说中文'],
    ['-> $1.00 <--', '-> $1.00 <-'],
    ['Proprostnemluvesky-uyb24dma41a', 'Pročprostěnemluvíčesky'],
  ])('decodes %s to %s', (input, decoded) => {
    expect(decodePunycode(input)).toBe(decoded);
  });

  it.each(['zz', '9999999999999999', 'abc\u00e9', 'ab!c'])('refuses %s', (input) => {
    expect(decodePunycode(input)).toBeNull();
  });
});
