/**
 * Sample data for `/widget/{size}/demo`: a fixed, made-up server, so that a preview never
 * touches the network and always looks the same.
 */
import type { ServerStatus } from '../../core/types.js';
import { formatMotd } from '../../motd/index.js';

/** The literal address that selects the sample data. */
export const DEMO_ADDRESS = 'demo';

/** 16×16 original pixel art (a stone block with a teal eye), PNG. */
const DEMO_FAVICON =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAMAAAAoLQ9TAAAAGFBMVEVrcoArMDoPdm5XXWnR+uUUuKYGKCr///++1f8qAAAA' +
  'CXBIWXMAAAPoAAAD6AG1e1JrAAAAV0lEQVQY03WPUQ7AIAhDW4vu/jeeCgxjsib68cKTCl4BBWCdfWkCqJCwQGYzVz7fFbBFCAToNtMTiM1sDLNG5cQCj/0p' +
  'Oh/1LcdaV1S9otjBXFHVJ+7vv61SAT10htoLAAAAAElFTkSuQmCC';

const DEMO_MOTD = '§6§lObserver §r§7Demo Server §8| §a1.21\n§bSurvival §8• §dCreative §8• §eMinigames §8• §f24/7';

/** A fresh object each call, so that no caller can change what the next one sees. */
export function demoStatus(): ServerStatus {
  return {
    query: { host: 'play.example.com', port: 25565, legacy: false, bedrock: false },
    server_id: '00000000-0000-5000-8000-000000000000',
    ip_address: null,
    icmp: null,
    online: true,
    error: null,
    error_code: null,
    version: { name: 'Paper 1.21.4', protocol: 769 },
    players: {
      online: 128,
      max: 500,
      sample: ['Ada', 'Grace', 'Linus', 'Ferris', 'Tux', 'Duke', 'Gopher'].map((name, i) => ({
        name,
        id: `00000000-0000-4000-8000-00000000000${i}`,
      })),
    },
    motd: formatMotd(DEMO_MOTD),
    favicon: DEMO_FAVICON,
    roundTripLatency: 42,
    stale: false,
    checked_at: '2025-01-01T00:00:00.000Z',
    srvRecord: null,
  };
}
