// A fault planted in the service for the tests of the fuzz (fuzz.test.ts), loaded before it
// with `node --import` (fuzz-service.ts passes it to scripts/start.sh): nothing a production
// start loads. It wraps node:http's createServer, which the service takes its server from, so
// that one path answers wrongly in the one error shape, as a broken route would:
//   FUZZ_PLANTED_FAULT=store-unavailable:/api/v1/stats  every GET and HEAD a 503 store_unavailable
//   FUZZ_PLANTED_FAULT=refuse-valid:/api/v1/trends      every GET and HEAD a 400 invalid_parameter
import { createRequire } from 'node:module';

const http = createRequire(import.meta.url)('node:http');
const [fault, path] = (process.env.FUZZ_PLANTED_FAULT ?? '').split(/:(.*)/s);

const ANSWERS = {
  'store-unavailable': [503, 'store_unavailable', 'The history database is unavailable. Please retry shortly.', { 'retry-after': '5' }],
  'refuse-valid': [400, 'invalid_parameter', 'The query parameter "limit" is invalid.', {}],
};

function answer(req, res) {
  if (ANSWERS[fault] === undefined || (req.method !== 'GET' && req.method !== 'HEAD') || (req.url ?? '').split('?', 1)[0] !== path) return false;
  const [status, code, message, headers] = ANSWERS[fault];
  const body = JSON.stringify({ status: 'error', error: code, message });
  res.writeHead(status, {
    ...headers,
    'access-control-allow-origin': '*',
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}

const createServer = http.createServer;
http.createServer = function plantedCreateServer(options, handler) {
  const [serverOptions, onRequest] = typeof options === 'function' ? [{}, options] : [options ?? {}, handler];
  return createServer.call(this, serverOptions, (req, res) => answer(req, res) || onRequest(req, res));
};
