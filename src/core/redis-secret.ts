import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { DailySecretSource } from './client-hash.js';

/**
 * The day's client-hash secret shared through Redis: the first instance to ask creates it
 * (SET NX), and Redis deletes it when its day ends.
 */
export class RedisDailySecret implements DailySecretSource {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'observer:secret:',
  ) {}

  async secretFor(dayStart: number, dayEnd: number): Promise<string> {
    const key = this.prefix + new Date(dayStart).toISOString().slice(0, 10);
    const candidate = randomBytes(32).toString('base64');
    await this.redis.set(key, candidate, 'PXAT', dayEnd, 'NX');
    const secret = await this.redis.get(key);
    return secret ?? candidate;
  }
}
