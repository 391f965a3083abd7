/** Address parsing, DNS + SRV resolution, the public-address guard and ICMP echo. */
export {
  DEFAULT_BEDROCK_PORT,
  DEFAULT_JAVA_PORT,
  MAX_ADDRESS_LENGTH,
  defaultPort,
  queryEcho,
  parseAddress,
  parseQueryMode,
  type ParsedAddress,
} from './address.js';
export { AddressGuard, isPublicAddress } from './guard.js';
export { TargetResolver, chooseSrv, type ResolvedTarget, type TargetResolverOptions } from './resolver.js';
export { IcmpPinger, openRawSocket, type IcmpFamily, type IcmpMode, type IcmpPingerOptions, type IcmpSocket } from './icmp.js';
