// Issue 20, item 5 through the official MCP TypeScript SDK: procedure_info on a stripped
// Objective-C dylib (tests/corpus/counter.m, linked as the corpus links its Mach-O, no SDK) names
// each method at the address llvm-nm-14 gives in the unstripped build, with the class or category
// list as name_source; the SDK validates each result against the tool's outputSchema.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { REPO, cleanup, connectStdio, serverDirs, tempDir } from './lib/rea.mjs';
import { Session } from './lib/exercise.mjs';

let root;
let dirs;
let unstripped;
let stripped;

/** Objective-C method symbols llvm-nm-14 lists in `file`: name → rea's address text. */
function nmMethods(file) {
  const out = {};
  for (const line of execFileSync('llvm-nm-14', ['--defined-only', file], { encoding: 'utf8' }).split('\n')) {
    const name = line.slice(19);
    if (name.startsWith('-[') || name.startsWith('+[')) {
      out[name] = `0x${BigInt(`0x${line.slice(0, 16)}`).toString(16)}`;
    }
  }
  return out;
}

before(() => {
  root = tempDir();
  dirs = serverDirs(root);
  unstripped = join(root, 'counter.dylib');
  stripped = join(root, 'counter-stripped.dylib');
  execFileSync('clang-14', [
    '-O1', '-target', 'arm64-apple-macos11', '-fobjc-runtime=macosx-11', '-fuse-ld=lld', '-nostdlib',
    '-dynamiclib', '-Wl,-undefined,dynamic_lookup', '-o', unstripped, join(REPO, 'tests', 'corpus', 'counter.m'),
  ]);
  execFileSync('llvm-strip-14', ['-x', '-o', stripped, unstripped]);
});

after(() => cleanup(root));

test('procedure_info names stripped Objective-C methods with their list as name_source', async () => {
  const symbols = nmMethods(unstripped);
  assert.deepEqual(nmMethods(stripped), {});
  const { client, close } = await connectStdio(dirs);
  try {
    const session = new Session(client);
    await client.listTools();
    await session.tool('open_binary', { path: stripped });
    for (const [name, source] of [
      ['-[Pair sum:]', 'objc_classlist'],
      ['+[Pair arity]', 'objc_classlist'],
      ['+[Counter(Extra) limit]', 'objc_catlist'],
      ['-[NSObject(Probe) probe]', 'objc_catlist'],
    ]) {
      const info = await session.tool('procedure_info', { procedure: symbols[name] });
      assert.deepEqual([info.procedure.name, info.procedure.address, info.name_source], [name, symbols[name], source]);
      assert.equal(info.raw_name, undefined);
    }
    await session.tool('open_binary', { path: unstripped });
    const info = await session.tool('procedure_info', { procedure: '-[Pair sum:]' });
    assert.deepEqual([info.procedure.address, info.name_source], [symbols['-[Pair sum:]'], undefined]);
  } finally {
    await close();
  }
});
