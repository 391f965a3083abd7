import { randomBytes } from 'node:crypto';
import type { DailySecretSource } from '../core/client-hash.js';
import type { SharedRedis } from './shared-redis.js';

/**
 * The day's client-hash secret shared through Redis: the first instance to ask creates it
 * (SET NX), and Redis deletes it when its day ends. A failure (Redis down) rejects, and the
 * hasher keeps its local secret.
 */
export class RedisDailySecret implements DailySecretSource {
  constructor(
    private readonly redis: SharedRedis,
    private readonly prefix = 'observer:secret:',
  ) {}

  async secretFor(dayStart: number, dayEnd: number): Promise<string> {
    const key = this.prefix + new Date(dayStart).toISOString().slice(0, 10);
    const candidate = randomBytes(32).toString('base64');
    const secret = await this.redis.run(async (redis) => {
      const [, get] = (await redis.multi().set(key, candidate, 'PXAT', dayEnd, 'NX').get(key).exec()) ?? [];
      return get?.[1];
    });
    return typeof secret === 'string' ? secret : candidate;
  }
}
