/**
 * The PostgreSQL history's sums arrive as the text of a bigint[][] (history-reader.ts): read
 * strictly, six integers a bucket, and refused whole when anything else comes.
 */
import { expect, it } from 'vitest';
import { addSumRows } from '../../src/store/postgres/history-reader.js';
import { emptySums } from '../../src/store/history/uptime-history.js';

it('adds each bucket row, a peak of -1 being no online check', () => {
  const sums = emptySums(3);
  addSumRows(sums, '{{0,12,10,10,35,5},{2,4,0,0,0,-1}}');
  expect([...sums]).toEqual([12, 10, 10, 35, 5, 0, 0, 0, 0, -1, 4, 0, 0, 0, -1]);
});

it('adds a row at most 2^53 - 1', () => {
  const sums = emptySums(1);
  addSumRows(sums, '{{0,1,1,1,9007199254740991,3}}');
  expect(sums[3]).toBe(Number.MAX_SAFE_INTEGER);
});

it.each([
  ['a row of five', '{{0,1,1,1,1}}'],
  ['a row of seven', '{{0,1,1,1,1,1,1}}'],
  ['a decimal', '{{0,1.5,1,1,1,1}}'],
  ['a NULL', '{{0,NULL,1,1,1,1}}'],
  ['past 2^53', '{{0,1,1,1,9007199254740993,1}}'],
  ['an empty field', '{{0,,1,1,1,1}}'],
  ['no outer braces', '{0,1,1,1,1,1}'],
  ['text after the rows', '{{0,1,1,1,1,1}x}'],
  ['a one-dimensional array', '{0,1,1,1,1,1}'],
  ['a quoted element', '{{"0",1,1,1,1,1}}'],
])('refuses %s', (_what, text) => {
  expect(() => addSumRows(emptySums(2), text)).toThrow(TypeError);
});
