/**
 * No request freezes the GitHub emulator (issue 38, the first HIGH): a keyword search used to
 * count one check per issue however much text it read, so twenty 5 MB comments on one issue and
 * one small GraphQL request of 50 aliased `search(query: "zzz in:comments")` held `github serve`
 * for 55 s (other clients timed out), and a repeat outlived SIGTERM by minutes. Now a search is
 * charged for the text it reads: the request ends at its budget with GitHub's timeout error, the
 * server answers another client throughout and leaves promptly on SIGTERM. The server is the
 * real CLI in a child process, driven over HTTP.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { slowestAnswerDuring } from './helpers/probe.ts';
import { startCliServer, stopAll } from './helpers/serve.ts';

afterAll(stopAll);

/** One request's wall time, ms. */
async function timed(url: string, init: RequestInit): Promise<{ ms: number; status: number; text: string }> {
  const started = performance.now();
  const res = await fetch(url, init);
  const text = await res.text();
  return { ms: performance.now() - started, status: res.status, text };
}

describe('github serve: a search over megabytes of comments', () => {
  it('keeps answering other clients within 2 s, answers the search with its timeout, and exits within 5 s of SIGTERM', async () => {
    const server = await startCliServer<{ url: string; token: string; adminToken: string }>([
      'github',
      'serve',
      '--issues-per-repo',
      '1',
    ]);
    const { url, token, adminToken } = server.info;
    const auth = { authorization: `token ${token}`, 'content-type': 'application/json' };
    // Through the admin API: GitHub's API takes a comment of at most 65,536 characters
    // (docs/limits.md), the admin API builds any world.
    const comment = JSON.stringify({
      repo: 'fleetbench/repo-1',
      number: 1,
      body: 'Lorem ipsum dolor sit amet, consectetur '.repeat(125_000),
    });
    expect(comment.length).toBeGreaterThan(5_000_000);
    const slowest = await slowestAnswerDuring(
      `${url}/rate_limit`,
      async () => {
        for (let i = 0; i < 20; i++) {
          const posted = await timed(`${url}/_fleetbench/post-issue-comment`, {
            method: 'POST',
            headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
            body: comment,
          });
          expect(posted.status).toBe(200);
        }
        const aliases = Array.from(
          { length: 50 },
          (_, i) => `s${i}: search(query: "zzz in:comments", type: ISSUE, first: 1) { issueCount }`,
        );
        const searched = await timed(`${url}/graphql`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ query: `{ ${aliases.join(' ')} }` }),
        });
        expect(searched.status).toBe(200);
        // The budget ran out reading the first search's 100 MB: GitHub's timeout error, not a freeze.
        expect(JSON.parse(searched.text).errors?.[0]?.message).toMatch(/timeout/);
        // REST stops at the same budget and says so.
        const rest = await timed(`${url}/search/issues?q=${encodeURIComponent('zzz in:comments')}`, {
          headers: auth,
        });
        expect(rest.status).toBe(200);
        expect(JSON.parse(rest.text)).toMatchObject({ incomplete_results: true });
      },
      { headers: { authorization: `token ${token}` } },
      { serverPid: server.process.pid },
    );
    expect(slowest).toBeLessThan(2_000);
    const stopped = performance.now();
    server.process.kill('SIGTERM');
    await server.exited;
    expect(performance.now() - stopped).toBeLessThan(5_000);
  }, 180_000);
});
