// compare_procedures, call_paths, and compare_artifacts/verify_reconstruction at function level
// through the official TypeScript SDK, every result validated against its outputSchema (issue 18;
// issue 15, item 2: stripped builds and changed bodies compared "equal"). The programs are
// procdiff's store.c in three versions (-DCHANGED changes checksum's body, -DADDED adds
// export_csv), built here with cc -O2 and stripped; the truth is the source and nm on the
// unstripped twin.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { cleanup, connectStdio, nmSymbol, REPO, serverDirs, tempDir } from './lib/rea.mjs';
import { Session } from './lib/exercise.mjs';

const STORE = join(REPO, 'src', 'analyzers', 'procdiff', 'testdata', 'store.c');

let root;
let dirs;
let builds;

/** An unstripped build of store.c with `flags`, and its stripped copy. */
function build(name, ...flags) {
  const plain = join(root, name);
  const stripped = join(root, `${name}-stripped`);
  execFileSync('cc', ['-O2', ...flags, '-o', plain, STORE]);
  execFileSync('strip', ['-o', stripped, plain]);
  return { plain, stripped };
}

before(() => {
  root = tempDir();
  dirs = serverDirs(root);
  builds = { v1: build('v1'), v2: build('v2', '-DCHANGED'), v3: build('v3', '-DADDED') };
});

after(() => cleanup(root));

async function inspected(session, path) {
  const opened = await session.tool('open_binary', { path });
  const inventory = await session.tool('inspect_artifact', {});
  return [inventory.manifest.id, opened.documents[0].procedures];
}

const totals = (s) => [s.status, s.added_total, s.removed_total, s.changed_total, s.unchanged_total];

test('stripped versions compare function by function', async () => {
  const { client, close } = await connectStdio(dirs);
  try {
    const session = new Session(client);
    await client.listTools();
    const [m1, procs] = await inspected(session, builds.v1.stripped);
    const [m2] = await inspected(session, builds.v2.stripped);
    const [m3] = await inspected(session, builds.v3.stripped);

    const added = await session.tool('compare_procedures', { left_manifest_id: m1, right_manifest_id: m3, status: 'added' });
    assert.deepEqual(totals(added.summary), ['different', 1, 0, 0, procs]);
    assert.deepEqual(
      added.entries.map((e) => [e.status, e.right.address, e.matched_by]),
      [['added', nmSymbol(builds.v3.plain, 'export_csv').address, null]],
    );

    const changed = await session.tool('compare_procedures', { left_manifest_id: m1, right_manifest_id: m2, status: 'changed' });
    assert.deepEqual(totals(changed.summary), ['different', 0, 0, 1, procs - 1]);
    const [entry] = changed.entries;
    assert.deepEqual(
      [entry.left.address, entry.right.address],
      [nmSymbol(builds.v1.plain, 'checksum').address, nmSymbol(builds.v2.plain, 'checksum').address],
    );
    assert.ok(['shape', 'similarity'].includes(entry.matched_by), JSON.stringify(entry));
    assert.equal(entry.changes.constants.added_total, entry.changes.constants.removed_total);

    const cmp3 = await session.tool('compare_artifacts', { left_manifest_id: m1, right_manifest_id: m3 });
    assert.deepEqual(totals(cmp3.procedures), ['different', 1, 0, 0, procs]);
    const cmp2 = await session.tool('compare_artifacts', { left_manifest_id: m1, right_manifest_id: m2 });
    assert.deepEqual(totals(cmp2.procedures), ['different', 0, 0, 1, procs - 1]);

    const verdict = await session.tool('verify_reconstruction', {
      spec: {
        claims: [
          { claim: 'no_change', comparison_evidence_id: cmp2.evidence.id, dimension: 'procedures' },
          { claim: 'procedures_added', comparison_evidence_id: cmp3.evidence.id, count: 2 },
          { claim: 'procedure_changed', comparison_evidence_id: changed.evidence.id, procedure: entry.left.address },
          { claim: 'procedure_unchanged', comparison_evidence_id: changed.evidence.id, procedure: entry.right.address },
        ],
      },
    });
    assert.deepEqual(verdict.claims.map((c) => c.status), ['fail', 'fail', 'pass', 'fail']);
    assert.equal(verdict.claims[1].reason, 'the comparison counted 1 procedure(s) added, not 2');

    // call_paths in the unstripped v1: store_digest calls checksum (noipa, so never inlined).
    await session.tool('open_binary', { path: builds.v1.plain });
    const paths = await session.tool('call_paths', { from: 'store_digest', to: 'checksum', max_depth: 3 });
    assert.deepEqual([paths.shortest, paths.total, paths.truncated, paths.deadline_hit], [1, 1, false, false]);
    assert.deepEqual(
      paths.paths[0].steps.map((s) => [s.node.name, s.node.address, s.via]),
      [
        ['store_digest', nmSymbol(builds.v1.plain, 'store_digest').address, null],
        ['checksum', nmSymbol(builds.v1.plain, 'checksum').address, 'call'],
      ],
    );
  } finally {
    await close();
  }
});
