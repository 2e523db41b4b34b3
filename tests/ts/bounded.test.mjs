// Bounded messages (issue 17, item 2) through the official TypeScript SDK, whose stdio client
// closes the connection on a message over 10 MiB: capturing `yes` used to answer 29 MB and end the
// session. Now the answer is under 1 MiB, validated against the outputSchema like every result,
// its cut stream's pages are read back whole, and the connection stays open.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { cleanup, connectStdio, serverDirs, tempDir } from './lib/rea.mjs';

const MIB = 1 << 20;

let root;
let dirs;

before(() => {
  root = tempDir();
  dirs = serverDirs(root);
  writeFileSync(
    join(dirs.config, 'rea.toml'),
    `[capture]\nenabled = true\nexecutable_roots = ["/usr/bin"]\nworking_directory_roots = [${JSON.stringify(root)}]\n`,
  );
});

after(() => cleanup(root));

test('a capture of yes no longer closes the connection', async (t) => {
  const { client, close } = await connectStdio(dirs);
  try {
    const result = await client.callTool({
      name: 'capture_process_scenario',
      arguments: { approved: true, executable: '/usr/bin/yes', working_directory: root, wall_time_ms: 20000 },
    });
    assert.notEqual(result.isError, true, JSON.stringify(result.content));
    const size = Buffer.byteLength(JSON.stringify(result));
    t.diagnostic(`capture of yes: ${size} bytes`);
    assert.ok(size < MIB, `${size} bytes`);
    const stdout = result.structuredContent.stdout;
    assert.equal(stdout.truncated, true);
    assert.equal(stdout.captured_bytes, 8 * MIB);
    assert.deepEqual(
      { inline_bytes: stdout.data_truncated.inline_bytes, pages: stdout.data_truncated.pages },
      { inline_bytes: 87381, pages: 128 },
    );
    assert.equal(stdout.data, `${'y\n'.repeat(43690)}y`);

    let next = stdout.data_truncated.first_page;
    const parts = [];
    let pages = 0;
    while (next) {
      const got = await client.callTool({ name: 'get_evidence', arguments: { evidence_id: next } });
      assert.notEqual(got.isError, true);
      assert.ok(Buffer.byteLength(JSON.stringify(got)) < MIB);
      const page = got.structuredContent.record.result;
      assert.equal(page.offset, parts.reduce((n, p) => n + p.length, 0));
      parts.push(page.data);
      pages += 1;
      next = page.next_page;
    }
    assert.equal(pages, 128);
    assert.equal(parts.join(''), 'y\n'.repeat(4 * MIB));

    // Still connected: the next request is answered.
    const doctor = await client.callTool({ name: 'doctor', arguments: {} });
    assert.notEqual(doctor.isError, true);
  } finally {
    await close();
  }
});
