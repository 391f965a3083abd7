/** Addresses of the loopback servers started by scripts/services.sh. */
export const DNS_SERVER = '127.0.0.1:5353';
export const POSTGRES_URL = 'postgres://postgres@127.0.0.1:55432/postgres';
export const REDIS_URL = 'redis://127.0.0.1:56379';
export const LOOPBACK_ALLOWLIST = ['127.0.0.0/8', '::1/128'];
