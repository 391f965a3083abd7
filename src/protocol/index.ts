/**
 * Minecraft protocol clients, and the Votifier client of test votes (votifier.ts). Calls read like sentences:
 *
 * ```ts
 * const result = await pingJava({ ip: '203.0.113.7', port: 25565, hostname: 'play.example.com', signal });
 * ```
 *
 * Each client connects only to `target.ip` (never resolves a name), runs under
 * `target.signal` (the whole query's deadline), receives at most 1 MiB, destroys its socket
 * however it ends, and rejects only with `ProbeError`:
 * `timeout` (deadline/abort), `connection_refused`, `unreachable`, `connection_closed`,
 * `invalid_response`, `response_too_large`.
 *
 * Packet building and parsing are exported as pure functions for tests and tools.
 */
export { pingJava, queryJavaStatus, parseJavaStatus } from './java.js';
export { pingLegacy, queryLegacyStatus } from './legacy.js';
export { pingBedrock, queryBedrockStatus } from './bedrock.js';
export { queryServer, queryFullStat, decodeFullStat, decodeQueryHandshake, encodeQueryHandshake, encodeFullStatRequest } from './query.js';
export type { QueryResult, QueryPlugins } from './query.js';
export type { ProbeOptions, ProbeTarget } from './target.js';
export type { ModInfo, ModListInfo, ModLoader } from './forge.js';
export type { BedrockAdvertisement } from './bedrock.js';
export type { LegacyStatus } from './legacy.js';
export { connectTcp } from './tcp.js';
export { connectUdp } from './udp.js';
export {
  type DatagramConnection,
  type Endpoint,
  type StreamConnection,
  type TcpConnector,
  type UdpConnector,
} from './transport.js';
export { MAX_RESPONSE_BYTES } from './codec.js';
export { acceptFavicon } from './favicon.js';
export { STATUS_PROTOCOL_VERSION, encodeHandshake, encodeStatusRequest, encodePingRequest, decodeStatusResponse, decodePong } from './java.js';
export { LEGACY_PROTOCOL_VERSION, encodeLegacyPing, decodeLegacyKick } from './legacy.js';
export { encodeUnconnectedPing, decodeUnconnectedPong, parseServerId } from './bedrock.js';
export { exchangeVote, encodeVoteV1, encodeVoteV2, parsePublicKey, readGreeting, readServerAnswer, VoteKeyError } from './votifier.js';
export type { Vote, VoteExchange, VoteSecret, ServerAnswer } from './votifier.js';
