/**
 * The Minecraft server the compose test's instances look up, run by test/support/compose-stack.ts
 * inside the test's own network namespace on the compose network:
 *
 *   node --import tsx test/deploy/compose-target.ts HOST PORT
 *
 * Prints `listening` once it accepts, then `peer ADDRESS` for each address a connection first
 * comes from (which instance pinged). Stops on SIGTERM.
 */
import { startJavaServer } from '../support/minecraft.js';

const [host = '0.0.0.0', port = '25565'] = process.argv.slice(2);
const server = await startJavaServer({ host, port: Number(port), motd: 'compose cluster', onlinePlayers: 4, maxPlayers: 40 });
process.stdout.write('listening\n');
let reported = 0;
const report = setInterval(() => {
  const peers = server.peers();
  for (; reported < peers.length; reported += 1) process.stdout.write(`peer ${peers[reported]!}\n`);
}, 200);
process.once('SIGTERM', () => {
  clearInterval(report);
  void server.close().then(() => process.exit(0));
});
