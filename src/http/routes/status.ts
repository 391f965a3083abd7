import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../../config/index.js';
import type { ClientHasher } from '../../core/client-hash.js';
import type { StatusLookup } from '../../status/types.js';
import type { Store } from '../../store/types.js';

// TODO(issue in progress): routes are added by the issue that owns this file.
export const statusRoutes: FastifyPluginAsyncTypebox<{ status: StatusLookup; config: Config; hasher: ClientHasher }> = async () => {};
