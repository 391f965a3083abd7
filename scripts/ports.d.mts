/** A TCP port on `host` (127.0.0.1) that nothing listens on, below the kernel's ephemeral range. */
export function freePort(host?: string): Promise<number>;
/** A UDP port on `host` (127.0.0.1) that no socket is bound to, below the kernel's ephemeral range. */
export function freeUdpPort(host?: string): Promise<number>;
