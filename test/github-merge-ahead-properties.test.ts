/**
 * A merge computed ahead (world/git-store.ts `mergeTreesAhead`, what a served repository runs off
 * the event loop before a merge, docs/limits.md "Servers") answers as the synchronous merge does:
 * fast-check searches trees of a few directories and files, each side editing its base, for a
 * triple whose merged tree (or conflict, or `unknown`) differs, or after which the store keeps
 * other objects or another byte count once the trees made ahead are kept (`keepMade`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RealClock } from '../src/clock/index.ts';
import { GitHubState } from '../src/github/state.ts';
import type { TreeEdit } from '../src/github/world/git-store.ts';

const PATHS = ['a', 'b', 'd/a', 'd/b', 'd/e/a', 'd/e/b', 'f/a', 'f/g/a', 'f/g/h/a'];

/** A path's content (null: absent) in a tree. */
const treeSpec = fc.array(fc.option(fc.constantFrom('1', '2', '3'), { nil: null }), {
  minLength: PATHS.length,
  maxLength: PATHS.length,
});

function world() {
  const state = new GitHubState({ repos: [{ owner: 'acme', name: 'widgets' }] }, { clock: new RealClock() });
  return { store: state.gitStore, repo: state.repo('acme/widgets') };
}

/** The tree `spec` describes, made in `store`; undefined for an empty one. */
function makeTree({ store, repo }: ReturnType<typeof world>, spec: (string | null)[]): string | undefined {
  const edits: TreeEdit[] = [];
  spec.forEach((content, i) => {
    if (content === null) return;
    edits.push({
      path: PATHS[i]!,
      entry: { mode: '100644', sha: store.put(repo, 'blob', Buffer.from(`${content}\n`)) },
    });
  });
  return edits.length === 0 ? undefined : store.editTree(repo, undefined, edits);
}

describe('a merge computed ahead', () => {
  it('answers and keeps what the synchronous merge does, for any three trees', async () => {
    await fc.assert(
      fc.asyncProperty(treeSpec, treeSpec, treeSpec, fc.boolean(), async (o, a, b, noBase) => {
        const now = world();
        const ahead = world();
        const trees = (w: ReturnType<typeof world>) => ({
          base: noBase ? undefined : makeTree(w, o),
          ours: makeTree(w, a) ?? makeTree(w, ['1']),
          theirs: makeTree(w, b) ?? makeTree(w, ['2']),
        });
        const t1 = trees(now);
        const t2 = trees(ahead);
        const merged = now.store.mergeTrees(now.repo, t1.ours!, t1.theirs!, t1.base);
        const computed = await ahead.store.mergeTreesAhead(ahead.repo, t2.ours!, t2.theirs!, t2.base);
        expect(computed.merged).toBe(merged);
        const keptBefore = ahead.store.keptBytes();
        ahead.store.keepMade(ahead.repo, computed.made);
        expect(ahead.store.keptBytes()).toBe(now.store.keptBytes());
        expect(ahead.store.objectCount()).toBe(now.store.objectCount());
        // Nothing was kept until then.
        expect(keptBefore).toBeLessThanOrEqual(ahead.store.keptBytes());
      }),
      { numRuns: 300 },
    );
  });
});
