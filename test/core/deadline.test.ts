import { describe, expect, it } from 'vitest';
import { Deadline } from '../../src/core/deadline.js';

describe('Deadline (a query’s abort signal)', () => {
  it('calls each listener once, with the reason set, and none that was removed or added after', () => {
    const deadline = new Deadline();
    const calls: string[] = [];
    const first = () => calls.push(`first:${String(deadline.reason)}`);
    const removed = () => calls.push('removed');
    deadline.addEventListener('abort', first);
    deadline.addEventListener('abort', removed);
    deadline.removeEventListener('abort', removed);
    expect(deadline.listened).toBe(true);
    expect(deadline.aborted).toBe(false);

    deadline.abort('late');
    deadline.abort('again');
    deadline.addEventListener('abort', () => calls.push('after'));

    expect(calls).toEqual(['first:late']);
    expect(deadline.aborted).toBe(true);
    expect(deadline.reason).toBe('late');
    expect(deadline.listened).toBe(false);
  });

  it('is not listened once its last listener is removed', () => {
    const deadline = new Deadline();
    const listener = () => {};
    expect(deadline.listened).toBe(false);
    deadline.addEventListener('abort', listener);
    deadline.removeEventListener('abort', listener);
    deadline.removeEventListener('abort', listener);
    expect(deadline.listened).toBe(false);
  });

  it('runs every listener when one throws, and throws that error on its own', async () => {
    const deadline = new Deadline();
    const calls: string[] = [];
    deadline.addEventListener('abort', () => {
      throw new Error('listener failed');
    });
    deadline.addEventListener('abort', () => calls.push('second'));
    const thrown = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));

    expect(() => deadline.abort('stop')).not.toThrow();
    expect(calls).toEqual(['second']);
    expect(await thrown).toMatchObject({ message: 'listener failed' });
  });
});
