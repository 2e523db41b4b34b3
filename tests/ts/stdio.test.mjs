// rea over stdio, driven by the official MCP TypeScript SDK: every prompt, every completion family
// and every tool, with each result validated by the SDK against the tool's outputSchema.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { cleanup, connectStdio, serverDirs, tempDir } from './lib/rea.mjs';
import { buildTargets, checkPrompts, investigate, leaveResumable, resume, Session } from './lib/exercise.mjs';

let root;
let dirs;
let targets;

before(() => {
  root = tempDir();
  dirs = serverDirs(root);
  targets = buildTargets(root);
});

after(() => cleanup(root));

test('every prompt, completion family and tool over stdio', async (t) => {
  const { client, close } = await connectStdio(dirs);
  try {
    const session = new Session(client);
    const listed = await client.listTools();
    await checkPrompts(session);
    await investigate(session, targets, { stateDir: dirs.state, root });

    // resume_session needs a session no live process holds: one left by a server that ended.
    const left = await connectStdio(dirs);
    const leaving = new Session(left.client);
    await left.client.listTools();
    const sessionId = await leaveResumable(leaving, targets);
    await left.close();
    await client.listTools();
    await resume(session, sessionId, targets);

    const names = listed.tools.map((tool) => tool.name);
    assert.deepEqual([...session.called, ...leaving.called].filter((n, i, all) => all.indexOf(n) === i).sort(), names.sort());
    t.diagnostic(`largest answer over stdio: ${session.largest.bytes} bytes (${session.largest.what})`);
  } finally {
    await close();
  }
});

test('the SDK refuses structuredContent that does not match the outputSchema', async () => {
  const { client, close } = await connectStdio(dirs);
  try {
    const { tools } = await client.listTools();
    // The validator the SDK built from tools/list is used on every call: give it a schema doctor's
    // result cannot meet (its version is a string), and the same call that passed now fails.
    await client.callTool({ name: 'doctor', arguments: {} });
    const tampered = tools.map((tool) =>
      tool.name === 'doctor'
        ? { ...tool, outputSchema: { ...tool.outputSchema, properties: { ...tool.outputSchema.properties, version: { type: 'integer' } } } }
        : tool,
    );
    client.cacheToolMetadata(tampered);
    await assert.rejects(
      client.callTool({ name: 'doctor', arguments: {} }),
      (e) => e.code === -32602 && /does not match the tool's output schema/.test(e.message),
    );
  } finally {
    await close();
  }
});
