import { Octokit as Core } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import { afterAll } from 'vitest';
import { Rng } from '../../src/base/rng.ts';
import { VirtualClock } from '../../src/clock/index.ts';
import type { Fixtures } from '../../src/github/fixtures.ts';
import {
  type EmulatorResponse,
  GitHubEmulator,
  type GitHubEmulatorOptions,
  InProcessTransport,
  type RunningGitHubServer,
  startGitHubServer,
} from '../../src/github/index.ts';
import { MemorySink } from '../../src/trace/writer.ts';
import { watchForFile } from './openapi.ts';

export type InProcessOptions = Partial<Omit<GitHubEmulatorOptions, 'clock' | 'rng' | 'trace'>> & {
  seed?: number;
};

/** An emulator under a VirtualClock with a memory trace; latency off unless asked for. */
export function inProcess(options: InProcessOptions = {}) {
  const clock = new VirtualClock();
  const sink = new MemorySink();
  const emulator = new GitHubEmulator({
    clock,
    rng: new Rng(options.seed ?? 1),
    trace: sink,
    fixtures: options.fixtures ?? { repos: 1, issuesPerRepo: 5, pullsPerRepo: 2 },
    latency: options.latency ?? false,
    ...options,
  });
  // Every REST answer checked against GitHub's OpenAPI description (test/setup.ts reports).
  watchForFile(emulator);
  const transport = new InProcessTransport(emulator, { token: emulator.defaultToken });
  const get = (path: string, headers: Record<string, string> = {}) =>
    transport.request({ method: 'GET', path, headers });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    transport.request({ method: 'POST', path, headers, body: JSON.stringify(body) });
  const graphql = (
    query: string,
    variables?: Record<string, unknown>,
    headers: Record<string, string> = {},
  ) => post('/graphql', { query, variables }, headers);
  /** Advances virtual time by ms (no request in flight needed). */
  const advance = async (ms: number) => {
    const done = clock.sleep(ms);
    await clock.run();
    await done;
  };
  const apiRecords = () => sink.records.filter((r) => r.kind === 'api');
  return { clock, sink, emulator, transport, get, post, graphql, advance, apiRecords };
}

export function rate(res: EmulatorResponse) {
  return {
    limit: Number(res.headers['x-ratelimit-limit']),
    remaining: Number(res.headers['x-ratelimit-remaining']),
    used: Number(res.headers['x-ratelimit-used']),
    reset: Number(res.headers['x-ratelimit-reset']),
    resource: res.headers['x-ratelimit-resource'],
  };
}

/** Starts a real server for the file and stops it (and the emulator's timers) afterwards. */
export async function serve(
  emulator: GitHubEmulator,
  tls?: { key: string; cert: string },
): Promise<RunningGitHubServer> {
  watchForFile(emulator);
  const server = await startGitHubServer({ emulator, tls });
  afterAll(async () => {
    await server.close();
    emulator.close();
  });
  return server;
}

const RestOctokit = Core.plugin(restEndpointMethods);

/**
 * An organization `acme` whose member `alice` is the default user, and `mallory`, who belongs to
 * nothing, with `repos` (and any more `users`) served on 127.0.0.1: each person's Octokit (REST
 * methods and `graphql`). What the tests of an account's repositories and an organization share.
 */
export async function servedOrg(repos: Fixtures['repos'], users: NonNullable<Fixtures['users']> = []) {
  const world = inProcess({
    fixtures: {
      default_user: 'alice',
      users: [
        { login: 'alice' },
        { login: 'mallory' },
        { login: 'acme', type: 'Organization', members: ['alice'] },
        ...users,
      ],
      repos,
    },
  });
  const server = await serve(world.emulator);
  const alice = new RestOctokit({ baseUrl: server.url, auth: world.emulator.defaultToken });
  const mallory = new RestOctokit({
    baseUrl: server.url,
    auth: world.emulator.tokens.mint({ user: 'mallory' }).token,
  });
  return { ...world, server, alice, mallory };
}
