/**
 * A run's GitHub side on a shared emulator (`fleetbench run --github URL`): instead of an
 * emulator of its own, the run uses one `fleetbench github serve` that several generators (the
 * segments of a live run, docs/distributed.md) share, so quota is spent from one bucket as on
 * GitHub. The world (agents opening PRs, CI, reviewers) acts through the emulator's admin API
 * over HTTP (`/_fleetbench/*`, the same methods as in-process), with the admin token.
 *
 * The emulator records the API calls in its own trace (`github serve --trace FILE`), not the
 * generator's: `fleetbench merge` puts them into the merged trace (docs/distributed.md).
 *
 * The plan carries the options (RunPlan.github, request.ts); the engine connects with them.
 */
import { FleetbenchError } from '../base/errors.ts';
import { defaultLimits } from '../github/config.ts';
import { HttpTransport } from '../github/transport.ts';
import { type GitHubSide, issuesNeeded } from '../workload/github-side.ts';
import type { Scenario } from '../workload/scenario.ts';
import type { RepoIssues } from '../workload/spawner.ts';
import type { WorldAdmin } from '../workload/world.ts';

/**
 * `--github URL`, checked when it is given: an http(s) origin such as `github serve` prints, so a
 * typo is refused at once instead of after the reachability wait.
 */
export function parseEmulatorUrl(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/' || url.search)
    throw new FleetbenchError(
      'E_USAGE',
      `--github: expected the emulator's base URL as fleetbench github serve prints it (http://HOST:PORT), got '${text}'`,
    );
  return text.replace(/\/+$/, '');
}

/** Where the admin token comes from when no flag gives it (a Kubernetes Secret, say). */
export const ADMIN_TOKEN_ENV = 'FLEETBENCH_GITHUB_ADMIN_TOKEN';

export interface SharedGitHubOptions {
  /** The emulator's base URL (`http://HOST:PORT`, as `github serve` prints it). */
  url: string;
  adminToken: string;
  /** Bracket the run with `/rate_limit` snapshots (one generator does, segment 0). */
  snapshots: boolean;
}

type Fetch = (name: string, input?: unknown) => Promise<unknown>;

function adminClient(url: string, adminToken: string): Fetch {
  const base = url.replace(/\/+$/, '');
  return async (name, input = {}) => {
    let response: Response;
    try {
      response = await fetch(`${base}/_fleetbench/${name}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(input),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw new FleetbenchError(
        'E_TARGET',
        `--github ${url}: cannot reach the emulator (${(error as Error).message})`,
        { hint: 'is fleetbench github serve running there? (docs/distributed.md)' },
      );
    }
    const text = await response.text();
    if (response.status === 401)
      throw new FleetbenchError(
        'E_USAGE',
        `--github ${url}: the admin token was refused (give the one github serve printed: --github-admin-token or ${ADMIN_TOKEN_ENV})`,
      );
    if (!response.ok)
      throw new FleetbenchError('E_TARGET', `--github ${url}: ${name}: HTTP ${response.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
}

const connections = new WeakMap<SharedGitHubOptions, Promise<GitHubSide>>();

/**
 * The run's GitHub side on the shared emulator, connected once per plan: a segment connects
 * before the common start (so its run does not spend its first moments on it) and the engine
 * then gets the same connection.
 */
export function sharedGitHubSide(options: SharedGitHubOptions): Promise<GitHubSide> {
  let connection = connections.get(options);
  if (!connection) {
    connection = connectSharedGitHub(options);
    connections.set(options, connection);
  }
  return connection;
}

async function connectSharedGitHub(options: SharedGitHubOptions): Promise<GitHubSide> {
  const admin = adminClient(options.url, options.adminToken);
  const listed = (await admin('list-repos')) as { repos: Array<{ repo: string; openIssues: number[] }> };
  const repos: RepoIssues[] = listed.repos.map((r) => ({ repo: r.repo, issues: r.openIssues }));
  if (repos.length === 0 || repos.some((r) => r.issues.length === 0))
    throw new FleetbenchError(
      'E_TARGET',
      `--github ${options.url}: the emulator has a repo with no open issue for sessions to work on`,
      { hint: 'start it with --repos N --issues-per-repo K (docs/distributed.md)' },
    );
  // A token of the emulator's default user: every token of one user spends the same quota.
  const { token } = (await admin('mint-token', {})) as { token: string };
  const faultIds: Partial<Record<'latency' | 'error' | 'secondary', string>> = {};
  const swap = async (kind: 'latency' | 'error' | 'secondary', input: unknown | undefined) => {
    const previous = faultIds[kind];
    if (previous) await admin('clear-faults', { id: previous });
    delete faultIds[kind];
    if (input) faultIds[kind] = ((await admin('inject-fault', input)) as { id: string }).id;
  };
  const world: WorldAdmin = {
    async openPullRequest(repo, input) {
      const pr = (await admin('open-pull-request', {
        repo,
        head: input.head,
        title: input.title,
        issue: input.issue,
      })) as { number: number; headSha: string };
      return { number: pr.number, headSha: pr.headSha };
    },
    async pushCommit(repo, number) {
      return ((await admin('push-commit', { repo, number })) as { sha: string }).sha;
    },
    async setChecks(repo, sha, names, state) {
      for (const name of names) {
        if (state === 'pending') await admin('set-check-run', { repo, sha, name, status: 'in_progress' });
        else await admin('set-check-run', { repo, sha, name, conclusion: state });
      }
    },
    async postReviewComments(repo, number, count) {
      return ((await admin('post-review-comments', { repo, number, count })) as { ids: number[] }).ids;
    },
    async mergePullRequest(repo, number) {
      await admin('merge-pull-request', { repo, number });
    },
  };
  return {
    url: options.url,
    transport: new HttpTransport(options.url),
    token,
    admin: world,
    repos,
    async snapshot(label) {
      // Written by the emulator into its own trace (with the API calls), merged from there.
      if (options.snapshots) await admin('snapshot-rate-limit', { token, label });
    },
    async setFaults(faults) {
      if (faults.extraLatencyMs !== undefined)
        await swap(
          'latency',
          faults.extraLatencyMs > 0 ? { kind: 'latency', ms: faults.extraLatencyMs } : undefined,
        );
      if (faults.errorShare !== undefined)
        await swap(
          'error',
          faults.errorShare > 0 ? { kind: 'error', share: faults.errorShare, status: 503 } : undefined,
        );
      if (faults.secondaryShare !== undefined)
        await swap(
          'secondary',
          faults.secondaryShare > 0 ? { kind: 'secondary', share: faults.secondaryShare } : undefined,
        );
    },
  };
}

/**
 * `fleetbench github serve` arguments that give the shared emulator what the scenario gives the
 * run's own: its repos and enough open issues for every start, the run's time scale (quota
 * windows), GitHub's latency (REST's; `github serve` has one for both protocols) and limits.
 */
export function emulatorArgsFor(scenario: Scenario): string[] {
  const repos = scenario.topology.repos;
  const issuesPerRepo = Math.max(1, Math.ceil(issuesNeeded(scenario) / repos));
  const latency = scenario.github.latency.rest ?? scenario.github.latency.graphql;
  const args = [
    '--repos',
    String(repos),
    '--issues-per-repo',
    String(issuesPerRepo),
    '--seed',
    String(scenario.seed),
    '--time-scale',
    String(scenario.timeScale),
    '--latency',
    latency ? `${latency.medianMs}:${latency.p95Ms}` : '0',
    '--limit',
    `core=${scenario.github.limits.core}`,
    '--limit',
    `graphql=${scenario.github.limits.graphql}`,
  ];
  // Secondary limits off (capacity tests): each as high as the in-process run's.
  if (!scenario.github.limits.secondary)
    for (const key of Object.keys(defaultLimits().secondary))
      args.push('--limit', `secondary.${key}=${Number.MAX_SAFE_INTEGER}`);
  return args;
}

/** Waits until a shared server answers (pods of a Job may start before the Services are ready). */
export async function waitReachable(url: string, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      await response.arrayBuffer();
      return;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > deadline)
      throw new FleetbenchError(
        'E_TARGET',
        `${what} at ${url} did not answer within ${timeoutMs / 1000} s (${last})`,
      );
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
