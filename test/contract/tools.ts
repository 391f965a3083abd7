/**
 * The outside tools of the contract test, run as a client author runs them: two linters over
 * the served document, three generators making clients of it, tsc --strict over programs
 * written against those clients, and esbuild bundling each program to run it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import ts from 'typescript';

const here = join(process.cwd(), 'test', 'contract');

/** Where the tools are: a Node binary they accept and their `.bin` (scripts/contract-tools.mjs). */
export interface Tools {
  node: string;
  bin: string;
}

/** Installs the tools once per lock file (minutes the first time), or finds them. */
export function installTools(): Tools {
  const out = execFileSync(process.execPath, [join(process.cwd(), 'scripts', 'contract-tools.mjs')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(out.trim().split('\n').at(-1)!) as Tools;
}

/** No telemetry, update checks or install analytics from any tool. */
const QUIET_ENV = { REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_UPDATE_NOTIFIER: '1', DO_NOT_TRACK: '1', SCARF_ANALYTICS: 'false' };

/** Runs a tool's command under the Node it accepts; its output, whatever its exit code. */
function runTool(tools: Tools, command: string, args: string[], cwd: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(tools.node, [join(tools.bin, command), ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...QUIET_ENV, PATH: `${join(tools.node, '..')}:${process.env.PATH}` },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Redocly's problems with the document (its `recommended` rules, as test/contract/redocly.yaml says). */
export function redoclyProblems(tools: Tools, docPath: string, workDir: string): string[] {
  const { stdout, stderr } = runTool(tools, 'redocly', ['lint', docPath, '--config', join(here, 'redocly.yaml'), '--format=json'], workDir);
  const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as { problems?: Array<{ ruleId: string; severity: string; message: string }> };
  if (!report.problems) throw new Error(`redocly printed no report: ${stderr}`);
  return report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`);
}

/** Spectral's problems with the document (`spectral:oas`, as test/contract/.spectral.yaml says). */
export function spectralProblems(tools: Tools, docPath: string, workDir: string): string[] {
  const { stdout, stderr } = runTool(tools, 'spectral', ['lint', docPath, '--ruleset', join(here, '.spectral.yaml'), '--format', 'json', '--quiet'], workDir);
  const start = stdout.indexOf('[');
  if (start < 0) throw new Error(`spectral printed no report: ${stdout}${stderr}`);
  const report = JSON.parse(stdout.slice(start)) as Array<{ code: string; severity: number; message: string; path: string[] }>;
  return report.map((p) => `${['error', 'warning', 'info', 'hint'][p.severity]} ${p.code}: ${p.message} at ${p.path.join('.')}`);
}

export const GENERATORS = ['hey-api', 'orval', 'swagger-typescript-api'] as const;
export type Generator = (typeof GENERATORS)[number];

/**
 * Generates the three clients into `<clientsDir>/generated/<generator>` and copies the programs
 * written against them (test/contract/clients) beside, as a client author's project would
 * hold them. `apiBase` is the absolute base URL orval's functions call.
 */
export function generateClients(tools: Tools, docPath: string, clientsDir: string, apiBase: string): void {
  const generated = join(clientsDir, 'generated');
  mkdirSync(generated, { recursive: true });
  cpSync(join(here, 'clients'), clientsDir, { recursive: true });
  const checked = (name: string, result: { status: number | null; stdout: string; stderr: string }) => {
    if (result.status !== 0) throw new Error(`${name} failed (${result.status}): ${result.stdout}${result.stderr}`);
  };
  checked('openapi-ts', runTool(tools, 'openapi-ts', ['-i', docPath, '-o', join(generated, 'hey-api'), '-c', '@hey-api/client-fetch'], clientsDir));
  const orvalConfig = join(clientsDir, 'orval.config.mjs');
  writeFileSync(
    orvalConfig,
    `export default { observer: { input: { target: ${JSON.stringify(docPath)} }, output: { target: ${JSON.stringify(join(generated, 'orval', 'api.ts'))}, ` +
      `client: 'fetch', baseUrl: ${JSON.stringify(apiBase)}, override: { fetch: { forceSuccessResponse: true } } } } };\n`,
  );
  checked('orval', runTool(tools, 'orval', ['--config', orvalConfig], clientsDir));
  checked(
    'swagger-typescript-api',
    runTool(tools, 'swagger-typescript-api', ['generate', '-p', docPath, '-o', join(generated, 'swagger-typescript-api'), '--modular', '--silent'], clientsDir),
  );
}

/** Compiler errors of the three programs and the clients they import, under --strict. */
export function compileErrors(clientsDir: string): string[] {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    types: [],
    skipLibCheck: true,
  };
  const program = ts.createProgram(GENERATORS.map((g) => join(clientsDir, `${g}.ts`)), options);
  return ts.getPreEmitDiagnostics(program).map((d) => `${d.file?.fileName ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

/** The files of each client that hold the types made from the document's schemas. */
export function modelFiles(clientsDir: string): string[] {
  const generated = join(clientsDir, 'generated');
  return [
    join(generated, 'hey-api', 'types.gen.ts'),
    join(generated, 'orval', 'api.ts'),
    ...readdirSync(join(generated, 'swagger-typescript-api'))
      .filter((file) => file !== 'http-client.ts')
      .map((file) => join(generated, 'swagger-typescript-api', file)),
  ];
}

/** Every `any` written in a file's code (comments do not count), as `file:line`. */
export function anyTypes(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (node.kind === ts.SyntaxKind.AnyKeyword) found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
    node.forEachChild(visit);
  };
  visit(source);
  return found;
}

/** The program for `generator`, bundled with its client into one ES module, loaded. */
export async function loadProgram<T>(clientsDir: string, generator: Generator): Promise<T> {
  const outfile = join(clientsDir, `${generator}.bundle.mjs`);
  await build({ entryPoints: [join(clientsDir, `${generator}.ts`)], bundle: true, format: 'esm', platform: 'node', target: 'node20', outfile, logLevel: 'silent' });
  return (await import(outfile)) as T;
}
