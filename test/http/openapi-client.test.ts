/**
 * What a client author does with the served OpenAPI document: generate types from
 * /api/v1/openapi.json with openapi-typescript, type-check a program that calls every route
 * through openapi-fetch with only the parameters the document requires, and run it against
 * the app. A parameter the API defaults but the document marks required fails the type check;
 * a wrong `servers` URL fails the calls. The web front's own types of the answers it reads
 * (web/src/api.ts) are checked against the same document: every body the document allows
 * must be one the page's type accepts, so the page and the contract cannot drift apart.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { startJavaServer, type RunningJavaServer } from '../support/minecraft.js';

// Beside the repository's node_modules, so that the program resolves openapi-fetch as a user's would.
const generated = join(process.cwd(), 'node_modules', '.cache', `observer-openapi-client-${process.pid}`);
const dataDir = mkdtempSync(join(tmpdir(), 'observer-openapi-client-'));
let java: RunningJavaServer;
beforeAll(async () => {
  mkdirSync(generated, { recursive: true });
  java = await startJavaServer({ motd: 'typed client', onlinePlayers: 1 });
});
afterAll(async () => {
  await java.close();
  rmSync(generated, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

/** Every route, called with its required parameters only (and the one address the icon needs). */
const PROGRAM = `import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

export async function callEveryRoute(origin: string, server: string, apiBase: string): Promise<Array<[string, number]>> {
  const client = createClient<paths>({ baseUrl: new URL(apiBase, origin).toString().replace(/\\/$/, '') });
  const address = { path: { address: server } };
  const calls: Array<[string, Promise<{ response: Response }>]> = [
    ['health', client.GET('/status')],
    ['status', client.GET('/status/{address}', { params: address })],
    ['bulk', client.POST('/status/bulk', { body: { servers: [{ address: server }] } })],
    ['icon/dynamic', client.GET('/icon/dynamic', { params: { query: { address: server } }, parseAs: 'blob' })],
    ['icon/sharp', client.GET('/icon/sharp', { params: { query: { address: server } }, parseAs: 'blob' })],
    ['banner/motd', client.GET('/banner/motd', { params: { query: { motd: '§aHello' } }, parseAs: 'blob' })],
    ['banner', client.GET('/banner/{address}', { params: address, parseAs: 'blob' })],
    ['badge', client.GET('/badge/{address}', { params: address, parseAs: 'text' })],
    ['shields', client.GET('/shields/{address}', { params: address })],
    ['widget', client.GET('/widget/{size}/{address}', { params: { path: { size: 'normal', address: server } }, parseAs: 'text' })],
    ['widget font', client.GET('/widget/fonts/{file}', { params: { path: { file: 'inter-latin-400-normal.woff2' } }, parseAs: 'blob' })],
    ['trends', client.GET('/trends')],
    ['stats', client.GET('/stats')],
    ['history', client.GET('/history/{address}', { params: address })],
  ];
  const answers: Array<[string, number]> = [];
  for (const [name, call] of calls) answers.push([name, (await call).response.status]);
  return answers;
}
`;

/** The document's answers assigned to the web front's types of them: a field the page expects and the API does not send, or types that differ, fail to compile. */
const WEB_TYPES_CHECK = `import type { components, paths } from './schema.js';
import type { ServerHistory, ServerStatus, Statistics, TrendServer } from ${JSON.stringify(join(process.cwd(), 'web', 'src', 'api.js'))};

type Trends = paths['/trends']['get']['responses'][200]['content']['application/json'];
type Stats = paths['/stats']['get']['responses'][200]['content']['application/json'];

export const status = (body: components['schemas']['ServerStatus']): ServerStatus => body;
export const history = (body: components['schemas']['ServerHistory']): ServerHistory => body;
export const trend = (body: Trends['data'][number]): TrendServer => body;
export const stats = (body: Stats): Statistics => body;
`;

it("a client generated from the served document compiles with required parameters only, and its calls succeed; the web front's types accept what it documents", async () => {
  const { app } = await composeApp(testConfig({ DATABASE_URL: `sqlite:${join(dataDir, 'observer.db')}` }), { logger: false, icmp: null });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const doc = (await (await fetch(`${origin}/api/v1/openapi.json`)).json()) as { servers: Array<{ url: string }> };
    writeFileSync(join(generated, 'schema.d.ts'), astToString(await openapiTS(doc as never)));
    writeFileSync(join(generated, 'client.ts'), PROGRAM);
    writeFileSync(join(generated, 'web-types.ts'), WEB_TYPES_CHECK);

    const options: ts.CompilerOptions = {
      strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'], types: [], skipLibCheck: true,
    };
    const program = ts.createProgram([join(generated, 'client.ts'), join(generated, 'web-types.ts')], options);
    const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(errors).toEqual([]);

    const js = ts.transpileModule(PROGRAM, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
    writeFileSync(join(generated, 'client.mjs'), js.outputText);
    const { callEveryRoute } = (await import(pathToFileURL(join(generated, 'client.mjs')).href)) as {
      callEveryRoute: (origin: string, server: string, apiBase: string) => Promise<Array<[string, number]>>;
    };
    const answers = await callEveryRoute(origin, `127.0.0.1:${java.port}`, doc.servers[0]!.url);
    expect(answers.filter(([, status]) => status !== 200)).toEqual([]);
  } finally {
    await app.close();
  }
});
