// rea over streamable HTTP, driven by the official MCP TypeScript SDK: the same investigation as
// over stdio, each result validated by the SDK against the tool's outputSchema.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { ALICE, bearer, cleanup, connectHttp, connectHttpWith, mcpConfig, serverDirs, startHttp, tempDir } from './lib/rea.mjs';
import { buildTargets, checkPrompts, investigate, leaveResumable, resume, Session } from './lib/exercise.mjs';

let root;
let dirs;
let targets;
let server;

before(async () => {
  root = tempDir();
  dirs = serverDirs(root);
  targets = buildTargets(root);
  server = await startHttp(dirs);
});

after(async () => {
  await server.stop();
  cleanup(root);
});

test('every prompt, completion family and tool over streamable HTTP', async (t) => {
  const { client, close } = await connectHttp(server.url);
  try {
    const session = new Session(client);
    const listed = await client.listTools();
    await checkPrompts(session);
    await investigate(session, targets, { stateDir: dirs.state, root });

    // resume_session needs a session no live process holds, and one of this caller's (issue
    // 25): one left by another HTTP server on the same state, with the same token, that has
    // ended (this server's own MCP sessions release theirs only once their task ends, after the
    // DELETE has been answered).
    const other = await startHttp(dirs);
    const left = await connectHttp(other.url);
    const leaving = new Session(left.client);
    await left.client.listTools();
    const sessionId = await leaveResumable(leaving, targets);
    await left.close();
    await other.stop();
    await resume(session, sessionId, targets);

    const names = listed.tools.map((tool) => tool.name);
    assert.deepEqual([...session.called, ...leaving.called].filter((n, i, all) => all.indexOf(n) === i).sort(), names.sort());
    t.diagnostic(`largest answer over HTTP: ${session.largest.bytes} bytes (${session.largest.what})`);
  } finally {
    await close();
  }
});

test('a binary session whose connection closed without DELETE is resumed at once by its caller (issue 29)', async () => {
  // The SDK's own close ends the transport and sends no DELETE: the server still holds the MCP
  // session, and with it the binary session, until it notices. The same caller's resume_session
  // takes the binary session from it at once, on the same server.
  // Each client lists the tools first: the SDK validates a result against the output schema
  // it listed.
  const first = await connectHttp(server.url);
  await first.client.listTools();
  const sessionId = await leaveResumable(new Session(first.client), targets);
  await first.client.close();
  const second = await connectHttp(server.url);
  try {
    await second.client.listTools();
    await resume(new Session(second.client), sessionId, targets);
  } finally {
    await second.close();
  }
});

test('a deleted MCP session is gone: its id gets 404', async () => {
  const first = await connectHttp(server.url);
  const sessionId = first.transport.sessionId;
  assert.ok(sessionId);
  await first.close();
  const response = await fetch(server.url, {
    method: 'DELETE',
    headers: { 'mcp-session-id': sessionId, ...bearer() },
  });
  assert.equal(response.status, 404);
  const body = await response.json();
  assert.deepEqual([body.jsonrpc, body.id, body.error.code], ['2.0', null, -32600]);
});

test('no token, or one the server does not know: 401 with a Bearer challenge', async () => {
  for (const headers of [{}, bearer('not-a-token-of-this-server')]) {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(response.status, 401);
    assert.match(response.headers.get('www-authenticate'), /^Bearer realm="rea"/);
    const body = await response.json();
    assert.deepEqual([body.jsonrpc, body.id, body.error.code], ['2.0', null, -32600]);
  }
});

test('the setup `rea mcp-config vscode --http` prints is one the SDK connects with (issue 29)', async () => {
  const own = tempDir();
  const ownDirs = serverDirs(own);
  // One configured token: the printed header carries it.
  writeFileSync(join(ownDirs.config, 'rea.toml'), `[http]\ntokens = { alice = ${JSON.stringify(ALICE)} }\n`);
  const running = await startHttp(ownDirs);
  try {
    const setup = JSON.parse(mcpConfig(ownDirs, 'vscode', '--http', running.url.host)).servers.rea;
    assert.deepEqual(setup, { type: 'http', url: running.url.href, headers: { Authorization: `Bearer ${ALICE}` } });
    const { client, close } = await connectHttpWith(new URL(setup.url), setup.headers);
    try {
      // Capture is off in this rea.toml: every tool but capture_process_scenario.
      assert.equal((await client.listTools()).tools.length, 34);
    } finally {
      await close();
    }
  } finally {
    await running.stop();
    cleanup(own);
  }
});
