/**
 * `fleetbench github serve`: the GitHub emulator as a real HTTP(S) server on 127.0.0.1, for
 * Octokit, the gh CLI or a real orchestrator. Prints the base URL, a user token and the admin
 * token (and, with --tls, the certificate and the exact environment for gh). Ctrl-C or SIGTERM
 * stops it and closes the trace with its footer.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { FleetbenchError } from '../base/errors.ts';
import { VERSION } from '../base/version.ts';
// Only the flag parsers load with the program: the emulator (GraphQL, zod, YAML) loads when the
// command runs, so other commands do not pay for it at every start.
import {
  applyLimitFlag,
  type EmulatorLimitsInput,
  type LatencyInput,
  parseLatencyFlag,
} from '../github/config.ts';
import type { GitHubEmulator, GitHubEmulatorOptions } from '../github/emulator.ts';
import { endServedTrace, serveUntil } from './interrupt.ts';
import { collect, integerOption, portOption, positiveNumberOption, tokenOption } from './options.ts';
import type { CommandIo } from './output.ts';

interface ServeOptions {
  port: number;
  fixtures?: string;
  repos?: number;
  issuesPerRepo?: number;
  pullsPerRepo?: number;
  seed: number;
  timeScale: number;
  trace?: string;
  tls?: boolean;
  tlsDir?: string;
  gitDir?: string;
  latency?: LatencyInput;
  actionsRunMs?: number;
  limit: string[];
  adminToken?: string;
  acceptAnyToken?: boolean;
  json?: boolean;
  webUrl?: string;
  host: '127.0.0.1' | '0.0.0.0';
}

function webOrigin(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidArgumentError('expected an origin such as https://github.com');
  }
  if (
    (url.protocol !== 'https:' && url.protocol !== 'http:') ||
    (url.pathname !== '/' && url.pathname !== '')
  )
    throw new InvalidArgumentError(
      'expected an origin such as https://github.com (scheme and host, no path)',
    );
  return url.origin;
}

function latency(text: string): LatencyInput {
  const parsed = parseLatencyFlag(text);
  if (typeof parsed === 'string') throw new InvalidArgumentError(parsed);
  return parsed;
}

export function listenHost(text: string): '127.0.0.1' | '0.0.0.0' {
  if (text !== '127.0.0.1' && text !== '0.0.0.0')
    throw new InvalidArgumentError('expected 127.0.0.1 or 0.0.0.0');
  return text;
}

export function register(program: Command, io: CommandIo): void {
  const github = program
    .command('github')
    .description('the GitHub API emulator (REST + GraphQL, quota, ETags)');
  github
    .command('serve')
    .description('serve the GitHub emulator on 127.0.0.1 for real clients (Octokit, gh, an orchestrator)')
    .option('--port <n>', 'port (0 picks a free one)', portOption, 0)
    .option('--fixtures <file>', 'YAML or JSON fixtures (repos, issues, pull requests, tokens)')
    .option('--repos <n>', 'generate this many repos (default 1)', integerOption(1))
    .option('--issues-per-repo <n>', 'open issues per generated repo (default 10)', integerOption(0))
    .option(
      '--pulls-per-repo <n>',
      'open pull requests per generated repo, each closing an issue (default 0)',
      integerOption(0),
    )
    .option(
      '--seed <n>',
      'seed for generated fixtures, SHAs and latency (tokens are random at every start)',
      integerOption(0),
      1,
    )
    .option(
      '--time-scale <x>',
      'run-time ms per real ms: 60 makes an hourly window last a real minute',
      positiveNumberOption,
      1,
    )
    .option('--trace <file>', 'write every request as an api record to this JSONL trace')
    .option('--tls', 'serve HTTPS with a fresh self-signed certificate for 127.0.0.1 (needed by gh)')
    .option('--tls-dir <dir>', 'where to write cert.pem and key.pem (default: a new temp dir)')
    .option(
      '--git-dir <dir>',
      'where the bare repositories git clones and pushes go, kept (default: a temp dir removed at exit)',
    )
    .option('--latency <ms>', 'added latency MEDIAN[:P95] in ms (log-normal, seeded); default none', latency)
    .option(
      '--limit <key=n>',
      'override a limit: core=100, graphql=50, enterprise.core=15000, unauthenticated.core=60, secondary.concurrent=10, window.core=60000, primaryStatus=429 (repeatable)',
      collect,
      [],
    )
    .option(
      '--web-url <origin>',
      'origin of web links (html_url, GraphQL url), e.g. https://github.com; API URLs keep the emulator origin (default: the emulator origin, or the fixtures web_url)',
      webOrigin,
    )
    .option(
      '--actions-run-ms <ms>',
      'run time an Actions re-run or dispatched run takes to complete (default 30000; 0: at once)',
      integerOption(0, 86_400_000),
    )
    .option('--admin-token <token>', 'admin token for /_fleetbench/* (default: random)', tokenOption)
    .option('--accept-any-token', 'treat unknown tokens as tokens of the default user instead of 401')
    .option('--json', 'print the connection details as one JSON line instead of text')
    .option(
      '--host <addr>',
      '127.0.0.1, or 0.0.0.0 in a container behind a Service (docs/distributed.md)',
      listenHost,
      '127.0.0.1',
    )
    .action((options: ServeOptions) => serve(options, io));
}

async function serve(options: ServeOptions, io: CommandIo): Promise<void> {
  const [github, { RealClock }, { Rng }, { TraceWriter, servedTraceHeader }] = await Promise.all([
    import('../github/index.ts'),
    import('../clock/index.ts'),
    import('../base/rng.ts'),
    import('../trace/writer.ts'),
  ]);
  const { GitHubEmulator, generateSelfSignedCert, loadFixturesFile, startGitHubServer } = github;
  const { fixtures, limits } = emulatorInput(options, loadFixturesFile);
  const tls = options.tls
    ? generateSelfSignedCert(options.tlsDir ?? mkdtempSync(join(tmpdir(), 'fleetbench-tls-')))
    : undefined;

  const clock = new RealClock({ timeScale: options.timeScale });
  const life = serveUntil();
  const trace = options.trace
    ? new TraceWriter(
        options.trace,
        servedTraceHeader({
          runId: randomUUID(),
          toolVersion: VERSION,
          name: 'github-serve',
          target: 'github-emulator',
          seed: options.seed,
          timeScale: options.timeScale,
          epochMs: clock.epochMs,
        }),
        // A trace that can no longer be written (a full disk) stops the server, said by path.
        { onWriteError: life.fail },
      )
    : undefined;
  const emulator = new GitHubEmulator({
    clock,
    rng: new Rng(options.seed),
    trace,
    fixtures,
    limits,
    latency: options.latency ?? false,
    actions: { runMs: options.actionsRunMs },
    acceptUnknownTokens: options.acceptAnyToken ?? false,
    webUrl: options.webUrl,
    // A served emulator's tokens are credentials: never the seed's, new at every start.
    secretTokens: true,
    adminToken: options.adminToken ?? `fba_${randomBytes(18).toString('base64url')}`,
    // A GitHub App installed on the fixtures' owner, for a control plane built as one.
    apps: [{}],
  });
  const appKey = writeAppKey(emulator);
  let server: Awaited<ReturnType<typeof startGitHubServer>>;
  try {
    server = await startGitHubServer({
      emulator,
      port: options.port,
      tls,
      host: options.host,
      git: { dir: options.gitDir },
    });
  } catch (error) {
    trace?.close('failed', clock.now());
    appKey.remove();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new FleetbenchError('E_USAGE', `port ${options.port} is already in use`);
    throw error;
  }

  printConnection(io, options, emulator, server, tls, appKey.path);

  const failure = await life.stopped();
  appKey.remove();
  await server.close();
  // Requests still waiting out their modelled latency were recorded as cancelled: their timers
  // go, so the process ends now and nothing is written after the footer.
  clock.dispose();
  emulator.close();
  endServedTrace(trace, failure, clock.now());
  if (!options.json) io.stderr.write(`stopped after ${emulator.stats().requests} request(s)\n`);
}

/**
 * The App's private key as a PEM file (0600, in a directory of its own, removed at exit): what a
 * control plane built as a GitHub App is configured with (docs/github-emulator.md, "Apps").
 */
function writeAppKey(emulator: GitHubEmulator): { path: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'fleetbench-app-'));
  const app = emulator.apps.apps[0]!;
  const path = join(dir, `${app.slug}.private-key.pem`);
  writeFileSync(path, app.privateKeyPem, { mode: 0o600 });
  const remove = () => rmSync(dir, { recursive: true, force: true });
  // Also when a second Ctrl-C exits at once (cli/interrupt.ts).
  process.once('exit', remove);
  return { path, remove };
}

/** Where the emulator listens and how to point gh, Octokit or curl at it (text or one JSON line). */
function printConnection(
  io: CommandIo,
  options: ServeOptions,
  emulator: GitHubEmulator,
  server: { url: string; port: number },
  tls: { certPath: string } | undefined,
  appKeyPath: string,
): void {
  const app = emulator.apps.apps[0]!;
  const installationId = app.installations[0]!.id;
  const host = `127.0.0.1:${server.port}`;
  const repos = [...emulator.state.repos.values()].map((r) => r.fullName);
  const counts = emulator.state.counts();
  const defaultUser = emulator.state.defaultUser.login;
  const ghEnv = tls
    ? {
        GH_HOST: host,
        GH_ENTERPRISE_TOKEN: emulator.defaultToken,
        SSL_CERT_FILE: tls.certPath,
        GH_CONFIG_DIR: '$(mktemp -d)',
      }
    : undefined;
  if (options.json) {
    io.stdout.write(
      `${JSON.stringify({
        url: server.url,
        port: server.port,
        graphqlUrl: `${server.url}/graphql`,
        gitUrl: repos[0] === undefined ? undefined : `${server.url}/${repos[0]}.git`,
        token: emulator.defaultToken,
        user: defaultUser,
        adminToken: emulator.adminToken,
        repos,
        cert: tls?.certPath,
        app: { id: app.id, slug: app.slug, installationId, privateKeyPath: appKeyPath },
        ghEnv,
        trace: options.trace,
      })}\n`,
    );
  } else {
    const lines = [
      `fleetbench github emulator listening on ${server.url}`,
      `  REST      ${server.url}/   (also ${server.url}/api/v3/)`,
      `  GraphQL   ${server.url}/graphql   (also /api/graphql)`,
      `  git       ${server.url}/${repos[0] ?? 'OWNER/REPO'}.git   (clone without a token; push with the token as password)`,
      `  token     ${emulator.defaultToken}   (user ${defaultUser}; mint more via POST /_fleetbench/mint-token)`,
      `  admin     ${emulator.adminToken}   (Authorization: Bearer <admin> on /_fleetbench/*)`,
      `  app       id ${app.id} (${app.slug}), installation ${installationId}, private key ${appKeyPath}`,
      `  fixtures  ${counts.repos} repo(s), ${counts.issues} issue(s), ${counts.pulls} pull request(s): ${repos.slice(0, 5).join(', ')}${repos.length > 5 ? ', ...' : ''}`,
      `  clock     real${options.timeScale === 1 ? '' : `, time scale ${options.timeScale} (an hourly window lasts ${(3600 / options.timeScale).toFixed(1)} s)`}`,
    ];
    if (options.trace) lines.push(`  trace     ${options.trace}`);
    if (tls && ghEnv) {
      lines.push(`  cert      ${tls.certPath}`);
      lines.push('gh:');
      lines.push(
        `  GH_HOST=${ghEnv.GH_HOST} GH_ENTERPRISE_TOKEN=${ghEnv.GH_ENTERPRISE_TOKEN} SSL_CERT_FILE=${ghEnv.SSL_CERT_FILE} GH_CONFIG_DIR=$(mktemp -d) gh pr list -R ${host}/${repos[0]}`,
      );
    }
    lines.push('Octokit:');
    lines.push(`  new Octokit({ baseUrl: '${server.url}', auth: '${emulator.defaultToken}' })`);
    lines.push('Ctrl-C stops the server.');
    io.stdout.write(`${lines.join('\n')}\n`);
  }
}

/** The fixtures and limits the flags ask for, refused with the flag's name when they conflict. */
export function emulatorInput(
  options: Pick<ServeOptions, 'fixtures' | 'repos' | 'issuesPerRepo' | 'pullsPerRepo' | 'limit'>,
  loadFixturesFile: (path: string) => GitHubEmulatorOptions['fixtures'],
): { fixtures: GitHubEmulatorOptions['fixtures']; limits: EmulatorLimitsInput } {
  const generated =
    options.repos !== undefined || options.issuesPerRepo !== undefined || options.pullsPerRepo !== undefined;
  if (options.fixtures && generated) {
    throw new FleetbenchError(
      'E_USAGE',
      '--fixtures and --repos/--issues-per-repo/--pulls-per-repo exclude each other',
    );
  }
  const limits: EmulatorLimitsInput = {};
  for (const flag of options.limit) {
    const problem = applyLimitFlag(limits, flag);
    if (problem) throw new FleetbenchError('E_USAGE', problem);
  }
  const fixtures: GitHubEmulatorOptions['fixtures'] = options.fixtures
    ? loadFixturesFile(options.fixtures)
    : {
        repos: options.repos ?? 1,
        issuesPerRepo: options.issuesPerRepo ?? 10,
        pullsPerRepo: options.pullsPerRepo ?? 0,
      };
  if (!options.fixtures && (options.pullsPerRepo ?? 0) > (options.issuesPerRepo ?? 10)) {
    throw new FleetbenchError(
      'E_USAGE',
      '--pulls-per-repo cannot exceed --issues-per-repo (each PR closes an issue)',
    );
  }
  return { fixtures, limits };
}
