// Shared helpers of the TypeScript-SDK suite: the built rea binary behind an official SDK client
// over stdio or streamable HTTP, programs compiled for the test, and the schema checks.

import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const here = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(here, '..', '..', '..');
export const REA_BIN = process.env.REA_BIN || join(REPO, 'target', 'debug', 'rea');

/** Bearer tokens of the two principals every HTTP server of the suite accepts (issue 25). */
export const ALICE = 'alice-token-0123456789abcdef';
export const BOB = 'bob-token-0123456789abcdef';

/** The header that makes a request `token`'s, for requests sent by hand with fetch. */
export function bearer(token = ALICE) {
  return { authorization: `Bearer ${token}` };
}

/** How long one request may take before the test fails instead of hanging. */
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Ajv for JSON Schema 2020-12 (MCP's dialect) in strict mode: an unknown keyword or format is an
 * error when a schema is compiled, not a warning. Union types (`["string", "null"]`) are valid
 * 2020-12 and stay allowed in output schemas.
 */
export function strictAjv() {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  return ajv;
}

/** A temporary directory, removed by `cleanup`. */
export function tempDir(prefix = 'rea-ts-') {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function cleanup(dir) {
  rmSync(dir, { recursive: true, force: true });
}

/** Compiles `source` into `dir/name` with cc. */
export function compile(dir, name, source) {
  const src = join(dir, `${name}.c`);
  writeFileSync(src, source);
  const out = join(dir, name);
  execFileSync('cc', ['-O0', '-o', out, src]);
  return out;
}

/** The address (lowercase 0x hex, no leading zeros) and size nm gives for `symbol` in `file`. */
export function nmSymbol(file, symbol) {
  const lines = execFileSync('nm', ['-S', '--defined-only', file], { encoding: 'utf8' }).split('\n');
  for (const line of lines) {
    const fields = line.trim().split(/\s+/);
    if (fields.length === 4 && fields[3] === symbol) {
      return { address: `0x${BigInt(`0x${fields[0]}`).toString(16)}`, size: Number(BigInt(`0x${fields[1]}`)) };
    }
  }
  throw new Error(`nm lists no ${symbol} in ${file}`);
}

/** Directories for one server: state, config (with a capture policy for `root`), prompts. */
export function serverDirs(root) {
  const state = join(root, 'state');
  const config = join(root, 'config');
  mkdirSync(join(config, 'prompts'), { recursive: true });
  writeFileSync(
    join(config, 'rea.toml'),
    `[capture]\nenabled = true\nexecutable_roots = [${JSON.stringify(root)}]\nworking_directory_roots = [${JSON.stringify(root)}]\n`,
  );
  // The angr decompiler, as scripts/test.sh names it (the server's environment is not this one).
  if (process.env.REA_ANGR_PYTHON) {
    appendFileSync(join(config, 'rea.toml'), `[providers.angr]\npython = ${JSON.stringify(process.env.REA_ANGR_PYTHON)}\n`);
  }
  return { state, config };
}

function environment(dirs) {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    REA_STATE_DIR: dirs.state,
    REA_CONFIG_DIR: dirs.config,
    REA_LOG: 'warn',
  };
}

/** An SDK client whose output-schema validator is strict 2020-12 Ajv. */
function newClient() {
  return new Client(
    { name: 'rea-ts-suite', version: '1.0.0' },
    { jsonSchemaValidator: new AjvJsonSchemaValidator(strictAjv()) },
  );
}

/** `rea serve` over stdio, connected. */
export async function connectStdio(dirs) {
  const transport = new StdioClientTransport({
    command: REA_BIN,
    args: ['serve'],
    env: environment(dirs),
    stderr: 'ignore',
  });
  const client = newClient();
  await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  return { client, close: () => client.close() };
}

/** `rea serve --http 127.0.0.1:0` accepting ALICE's and BOB's tokens, started; its URL and a way to stop it. */
export async function startHttp(dirs) {
  const config = join(dirs.config, 'rea.toml');
  const current = existsSync(config) ? readFileSync(config, 'utf8') : '';
  if (!current.includes('[http]')) {
    appendFileSync(config, `[http]\ntokens = { alice = ${JSON.stringify(ALICE)}, bob = ${JSON.stringify(BOB)} }\n`);
  }
  const child = spawn(REA_BIN, ['serve', '--http', '127.0.0.1:0'], {
    env: environment(dirs),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise((resolveUrl, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`rea did not announce its address: ${seen}`)), 20_000);
    child.stderr.on('data', (chunk) => {
      seen += chunk;
      const match = seen.match(/at (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (match) {
        clearTimeout(timer);
        resolveUrl(new URL(match[1]));
      }
    });
    child.on('exit', (code) => reject(new Error(`rea exited with ${code}: ${seen}`)));
  });
  const stopped = new Promise((done) => child.on('exit', done));
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await stopped;
    },
  };
}

/** An SDK client connected to a running `rea serve --http`, every request carrying `token`. */
export async function connectHttp(url, token = ALICE) {
  return connectHttpWith(url, bearer(token));
}

/** What `rea mcp-config ARGS` prints for a client of the server on `dirs` (issue 29). */
export function mcpConfig(dirs, ...args) {
  return execFileSync(REA_BIN, ['mcp-config', ...args], { env: environment(dirs), encoding: 'utf8' });
}

/** An SDK client of `url` sending `headers` with every request. */
export async function connectHttpWith(url, headers) {
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  const client = newClient();
  await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  return {
    client,
    transport,
    close: async () => {
      await transport.terminateSession();
      await client.close();
    },
  };
}

/** The `format`s JSON Schema 2020-12 defines. */
const STANDARD_FORMATS = new Set([
  'date-time', 'date', 'time', 'duration', 'email', 'idn-email', 'hostname', 'idn-hostname',
  'ipv4', 'ipv6', 'uri', 'uri-reference', 'iri', 'iri-reference', 'uuid', 'uri-template',
  'json-pointer', 'relative-json-pointer', 'regex',
]);

/** Keywords that Gemini's function subset, Codex, Cursor or strict Ajv reject or rewrite. */
const FORBIDDEN_IN_INPUTS = [
  '$schema', '$ref', '$defs', 'definitions', '$dynamicRef', 'oneOf', 'anyOf', 'allOf', 'not',
  'const', 'additionalProperties', 'patternProperties', 'prefixItems', 'if', 'then', 'else',
  'unevaluatedProperties',
];

/** Every way an input schema leaves the portable subset, as `path: problem` strings. */
export function portabilityViolations(schema, path = 'input', out = []) {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    out.push(`${path}: a schema is an object`);
    return out;
  }
  for (const keyword of FORBIDDEN_IN_INPUTS) {
    if (keyword in schema) out.push(`${path}: uses ${keyword}`);
  }
  if (typeof schema.type !== 'string') out.push(`${path}: type ${JSON.stringify(schema.type)} is not one type`);
  if (typeof schema.format === 'string' && !STANDARD_FORMATS.has(schema.format)) {
    out.push(`${path}: non-standard format ${schema.format}`);
  }
  if ('default' in schema && schema.default === null) out.push(`${path}: default null`);
  if ('description' in schema) {
    const text = String(schema.description);
    if (text.includes('[`') || text.includes('](') || text.includes('\n') || text.trim() === '') {
      out.push(`${path}: description is not a plain sentence: ${JSON.stringify(text)}`);
    }
    for (const value of schema.enum ?? []) {
      const shown = typeof value === 'string' ? value : JSON.stringify(value);
      if (!text.includes(shown)) out.push(`${path}: description does not list ${JSON.stringify(value)}`);
    }
  } else if (path !== 'input' && !path.endsWith('[]')) {
    out.push(`${path}: has no description`);
  }
  if (schema.properties) {
    if (schema.type !== 'object') out.push(`${path}: has properties but is not type object`);
    for (const [name, child] of Object.entries(schema.properties)) {
      portabilityViolations(child, `${path}.${name}`, out);
    }
    for (const name of schema.required ?? []) {
      if (!(name in schema.properties)) out.push(`${path}: requires ${name}, which it does not define`);
    }
  }
  if (schema.items) portabilityViolations(schema.items, `${path}[]`, out);
  return out;
}
