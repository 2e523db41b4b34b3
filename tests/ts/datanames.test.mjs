// Data names (issue 20, item 4) through the official TypeScript SDK, whose client validates
// every structuredContent against the tool's output schema: procedure_assembly's `data` field,
// xrefs' name of a string address and analyze_function's data list, on tests/corpus/datanames.c
// built here (x86-64 ELF, PIE), with exact values from nm and GNU objdump on the same file.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { Session } from './lib/exercise.mjs';
import { REPO, cleanup, connectStdio, nmSymbol, serverDirs, tempDir } from './lib/rea.mjs';

const HELLO = 'datanames: hello from the string table';

let root;
let binary;
let session;
let close;

before(async () => {
  root = tempDir();
  binary = join(root, 'datanames');
  execFileSync('cc', ['-O2', '-o', binary, join(REPO, 'tests', 'corpus', 'datanames.c')]);
  const connected = await connectStdio(serverDirs(root));
  await connected.client.listTools();
  session = new Session(connected.client);
  close = connected.close;
  await session.tool('open_binary', { path: binary });
});

after(async () => {
  await close?.();
  cleanup(root);
});

const hexOf = (n) => `0x${n.toString(16)}`;

/** Instruction address -> the address objdump's `# 2008 <...>` comment names, of one function. */
function objdumpComments(fn) {
  const text = execFileSync('objdump', ['-d', '-w', '-M', 'intel', `--disassemble=${fn}`, binary], { encoding: 'utf8' });
  const out = [];
  for (const line of text.split('\n')) {
    const m = line.match(/^\s*([0-9a-f]+):.*#\s+([0-9a-f]+)\s+</);
    if (m) out.push([hexOf(BigInt(`0x${m[1]}`)), hexOf(BigInt(`0x${m[2]}`))]);
  }
  return out;
}

test('procedure_assembly names the data an operand lands in', async () => {
  const ops = BigInt(nmSymbol(binary, 'OPS').address);
  const page = await session.tool('procedure_assembly', { procedure: 'read_ops2' });
  const named = page.instructions.filter((i) => i.data !== undefined).map((i) => [i.address, i.data]);
  const [[site, address]] = objdumpComments('read_ops2');
  assert.equal(address, hexOf(ops + 8n));
  assert.deepEqual(named, [[site, { address, name: 'OPS+0x8' }]]);
});

test('xrefs and analyze_function name the string and the symbol', async () => {
  const [[site, string]] = objdumpComments('greet');
  const page = await session.tool('procedure_assembly', { procedure: 'greet' });
  const lea = page.instructions.find((i) => i.address === site);
  assert.deepEqual(lea.data, { address: string, name: JSON.stringify(HELLO) });
  const refs = await session.tool('xrefs', { address: string });
  assert.equal(refs.name, JSON.stringify(HELLO));
  assert.deepEqual(refs.code.map((c) => [c.site, c.procedure_name, c.kind]), [[site, 'greet', 'address']]);
  const dossier = await session.tool('analyze_function', { procedure: 'read_ops2' });
  assert.deepEqual(dossier.data, [{ address: nmSymbol(binary, 'OPS').address, name: 'OPS' }]);
});
