/**
 * A world (docs/world.md): the run's GitHub and provider emulators behind the real host names
 * (github.com, api.github.com, api.openai.com, api.anthropic.com, …), with every other
 * destination refused and recorded, for commands that are not changed in any way. Three layers,
 * the first that works here is used (`mode: auto`):
 *
 * - `sandbox`: bwrap's network, pid and mount namespaces (sandbox.ts). The names resolve to the
 *   emulators, the world's CA is trusted through the system bundle and the environment, nothing
 *   else is reachable, and every process the command starts ends with the world.
 * - `proxy`: HTTPS_PROXY/HTTP_PROXY at the world's proxy (edge.ts), which serves the world's
 *   hosts and refuses the rest, plus the vendors' base-URL variables for clients that ignore a
 *   proxy. A client that ignores both reaches the real network (or fails where there is none).
 * - `env`: only the base-URL variables and the CA, for machines where neither works.
 *
 * The world owns its records: `world.started`, `world.blocked` (each refused attempt, with the
 * process that made it), `agent.spawn` and `agent.exit` (spawns.ts) and `world.stopped`, on
 * the run's clock in the run's trace; the emulators write their own `api` and
 * `provider.request` records there.
 */
import { spawn as spawnChild, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import type { AgentsInstall } from '../agents/install.ts';
import { FleetbenchError } from '../base/errors.ts';
import { installCacheDir } from '../base/npm-install.ts';
import { makeDirectories } from '../base/safe-write.ts';
import type { Clock } from '../clock/clock.ts';
import { TokenRegistry } from '../github/auth.ts';
import type { GitHubEmulator } from '../github/emulator.ts';
import { type RunningGitHubServer, startGitHubServer } from '../github/http.ts';
import { cliOf, type ProviderEmulator } from '../provider/emulator.ts';
import { type RunningProviderServer, startProviderServer } from '../provider/http.ts';
import type { TraceSink } from '../trace/writer.ts';
import { makeWorldCa, systemBundlePaths, type WorldCa } from './ca.ts';
import { ClaimGuard, type ConnectionPorts } from './claims.ts';
import { type BlockedAttempt, Edge, SANDBOX_PORTS } from './edge.ts';
import { hostsFile, hostTable, nsswitchFile, RESOLV_CONF, userFiles, type WorldService } from './hosts.ts';
import { javaToolOptions } from './java-trust.ts';
import { type Launchers, writeLaunchers } from './launchers.ts';
import {
  allPids,
  hasEnvironment,
  isAlive,
  listedChildren,
  outerPid,
  parentPid,
  pidNamespaceOf,
  pidsInNamespace,
  pidsWithEnvironment,
  processFacts,
  socketInode,
  socketOwner,
  startTicks,
} from './procfs.ts';
import { type CommandUser, type ExitStatus, Sandbox, SpawnFailed, sandboxSupport } from './sandbox.ts';
import { type Spawn, SpawnRegistry } from './spawns.ts';

export const WORLD_MODES = ['auto', 'sandbox', 'proxy', 'env'] as const;
export type WorldModeOption = (typeof WORLD_MODES)[number];
export type WorldMode = Exclude<WorldModeOption, 'auto'>;

/** At most this many `world.blocked` records a world writes (the rest are counted): docs/limits.md. */
export const MAX_BLOCKED_RECORDS = 10_000;
/** The same attempt again within this long is counted on its first record, not written again. */
const BLOCKED_COALESCE_MS = 2_000;
/**
 * At most this many /proc lookups a second of the process behind a claiming connection (one per
 * connection: keep-alive costs one); past it a claim is not taken (docs/world.md#limits).
 */
export const CLAIM_LOOKUPS_PER_SECOND = 100;
/** At most this many processes one credential is vouched for (a work command per session). */
const MAX_VOUCHED_PIDS = 100_000;
/** How long a call waits for the pid of a vouched command being started (claims.ts). */
const CLAIM_WAIT_MS = 2_000;

interface Holder {
  claim: 'agent' | 'work';
  /** The pids (as fleetbench sees them) the credential was given to. */
  holders: number[];
}

/** Runtimes a CLI's script runs under: the script is then the first word after their flags. */
const RUNTIMES = new Set(['node', 'nodejs', 'bun', 'deno']);

/** The ways a git remote names github.com over ssh, each rewritten to HTTPS in the world. */
export const SSH_REMOTE_PREFIXES = [
  'git@github.com:',
  'github.com:',
  'ssh://git@github.com/',
  'ssh://git@github.com:22/',
  'ssh://github.com/',
  'git+ssh://git@github.com/',
  // GitHub's ssh over port 443, for networks that close 22.
  'ssh://git@ssh.github.com:443/',
] as const;

/**
 * Whether a command line runs an agent CLI itself: its program (or, under a runtime, its script)
 * is named as the CLI (`codex`, `claude.js`) or is the CLI's package entry (Claude Code's
 * `claude-code/cli.js`, as the agent SDK bundles it; `@openai/codex`; `opencode`). `node cp.js
 * codex` is not one: an argument named so is not the program.
 */
export function runsAgentCli(argv: readonly string[], cli: string): boolean {
  let at = 0;
  if (RUNTIMES.has((argv[0] ?? '').replace(/^.*\//, ''))) {
    at = 1;
    while (at < Math.min(argv.length, 8) && (argv[at] ?? '').startsWith('-')) at++;
  }
  const word = argv[at] ?? '';
  const name = word.replace(/^.*\//, '');
  if (name === cli || name === `${cli}.js` || name === `${cli}.mjs` || name === `${cli}.exe`) return true;
  if (cli === 'claude') return /claude-(?:code|agent-sdk)\/cli\.m?js$/.test(word);
  if (cli === 'codex') return /@openai\/codex/.test(word);
  return cli === 'opencode' && /opencode/.test(name);
}

/**
 * Whether a spawn-list line's process is a launcher or an agent CLI: its command line runs the
 * launcher (`sh …/bin/codex`), the installed CLI (`node …/codex.js`, a native binary), or an
 * agent CLI by its name (runsAgentCli; Claude Code sets its process title to `claude`). Anything
 * else wrote the line for itself (docs/world.md, "Whose call it is").
 */
function agentProcessTest(
  binDir: string,
  install: AgentsInstall | undefined,
): (argv: readonly string[], cli: string) => boolean {
  const paths = new Set<string>();
  for (const agent of Object.values(install?.clis ?? {}))
    if (agent) for (const word of [agent.path, ...agent.command.slice(1)]) paths.add(word);
  return (argv, cli) =>
    argv.slice(0, 2).includes(join(binDir, cli)) ||
    argv.slice(0, 4).some((word) => paths.has(word)) ||
    runsAgentCli(argv, cli);
}

/** The uid and gid a command runs as when fleetbench is root (a mapped, unprivileged user). */
export const WORLD_USER = { uid: 1000, gid: 1000 };

export interface WorldOptions {
  /** The world's own directory (CA, launchers, bound files, the spawn list); made private. */
  dir: string;
  mode: WorldModeOption;
  /** `NAME=SERVICE` entries beside the default hosts (hosts.ts). */
  hosts?: readonly string[];
  clock: Clock;
  trace: TraceSink;
  github: GitHubEmulator;
  /** The provider emulator, built with the world's key resolver (launchers' keys). */
  provider: (resolveKey: (key: string) => { labels: Record<string, string> } | undefined) => ProviderEmulator;
  /** The agent CLIs to put on the command's PATH behind launchers (none: no launchers). */
  agents?: AgentsInstall | undefined;
  /** The token a command gets as GH_TOKEN/GITHUB_TOKEN when its environment has none. */
  token: string;
  /**
   * A host account to run commands as (`nobody`, `1001`, `1001:1001`); fleetbench must be root.
   * Default: a mapped user (commandUser).
   */
  user?: string | undefined;
}

export interface WorldProcess {
  /** The pid as seen from fleetbench (outside the world's pid namespace). */
  pid: number | undefined;
  exited: Promise<ExitStatus>;
  /**
   * Signals the process, or its whole process group when it was started detached (`group`, the
   * default for a detached one).
   */
  kill(signal: NodeJS.Signals, group?: boolean): void;
  /**
   * Whether any process of its process group is still there (a detached one leads its group),
   * its first process gone or not: what a service manager waits for before it calls a stop done.
   */
  groupAlive(): boolean;
}

export interface WorldSpawnSpec {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  detached: boolean;
  stdin?: 'inherit' | 'ignore';
  stdout?: string;
  stderr?: string;
  /** When stdout or stderr is a file: the bytes of output it keeps (the rest is read and dropped). */
  outputCap?: number | undefined;
  /** A credential `World.vouch` registered that this command (and its descendants) holds. */
  vouch?: string | undefined;
}

export interface World {
  mode: WorldMode;
  dir: string;
  ca: WorldCa;
  /** The emulators on 127.0.0.1 outside the world (admin API, tests). */
  hostUrls: Record<WorldService, string>;
  /** How a command inside reaches them. */
  commandUrls: Record<WorldService, string>;
  spawns: SpawnRegistry | undefined;
  /** Refused attempts so far (written or only counted). */
  readonly blocked: number;
  /** The spawn a GitHub token was given to by its launcher, if it is one of theirs. */
  spawnOfToken(token: string): Spawn | undefined;
  /**
   * `credential` is held only by the commands started with it as their `vouch` (and their
   * descendants): a call made with it from any other process is the control plane's (claims.ts).
   */
  vouch(credential: string): void;
  /** The environment for a command: `base` (the user's) with the world's settings. */
  env(base: NodeJS.ProcessEnv): Record<string, string>;
  spawn(spec: WorldSpawnSpec): Promise<WorldProcess>;
  /**
   * A connection to `port` on 127.0.0.1 as the command sees it (inside the sandbox's network
   * namespace, else this machine's loopback): how fleetbench reaches the control plane's own API.
   */
  dial(port: number): Promise<Socket>;
  /** Pids (seen from fleetbench) of every process still in the world, where that is knowable. */
  processes(): number[];
  close(): Promise<void>;
}

/**
 * Who the world's commands run as (docs/world.md, "Users"). A named account is a real setuid and
 * needs root. Otherwise, when fleetbench is root, a mapped user (WORLD_USER inside a user
 * namespace of the command's own): CLIs that refuse root see a non-root uid, and every file it
 * writes still belongs to root, so it can work wherever the user could. In the sandbox as a
 * non-root user, the gate is root in bwrap's user namespace, so the command is mapped back to the
 * user's own uid. Undefined: the command runs as fleetbench does (non-root, outside a sandbox).
 */
export function commandUser(account: string | undefined, mode: WorldMode): CommandUser | undefined {
  const root = process.getuid?.() === 0;
  if (account !== undefined) {
    if (!root)
      throw new FleetbenchError(
        'E_USAGE',
        `--user ${account}: running a command as another account needs fleetbench to run as root`,
      );
    return { ...lookUpAccount(account), mapped: false };
  }
  const mapping = sandboxSupport().mapsUser || mode !== 'sandbox';
  if (root && mapping && mode !== 'sandbox') requireUserMapping(mode);
  if (root) return mapping ? { ...WORLD_USER, mapped: true } : undefined;
  if (mode === 'sandbox' && sandboxSupport().mapsUser)
    return { uid: process.getuid?.() ?? 1000, gid: process.getgid?.() ?? 1000, mapped: true };
  return undefined;
}

let userMapping: string | undefined | null = null;

/**
 * Outside the sandbox, a root fleetbench runs the command through util-linux's `unshare
 * --map-user` (2.38 or later). Checked once before anything starts: without it the command could
 * not even be started (it used to end as exit 127 with no word of why).
 */
function requireUserMapping(mode: WorldMode): void {
  if (userMapping === null) {
    const probe = spawnSync(
      'unshare',
      ['--user', `--map-user=${WORLD_USER.uid}`, `--map-group=${WORLD_USER.gid}`, '--', 'true'],
      { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000, encoding: 'utf8' },
    );
    userMapping =
      probe.status === 0
        ? undefined
        : probe.error
          ? 'unshare is not on PATH'
          : (probe.stderr ?? '').trim() || `unshare exited ${probe.status}`;
  }
  if (userMapping !== undefined)
    throw new FleetbenchError(
      'E_USAGE',
      `world --mode ${mode}: fleetbench runs as root, so the command runs as a mapped non-root user (docs/world.md, "Users"), which needs util-linux's unshare --map-user (2.38 or later): ${userMapping}`,
      { hint: 'install it (Debian: apt-get install util-linux), or name an account to run as: --user NAME' },
    );
}

/** `NAME`, `UID` or `UID:GID` as a uid and gid, from /etc/passwd for a name. */
function lookUpAccount(account: string): { uid: number; gid: number } {
  const numeric = /^(\d{1,9})(?::(\d{1,9}))?$/.exec(account);
  if (numeric) {
    const uid = Number(numeric[1]);
    return { uid, gid: numeric[2] === undefined ? uid : Number(numeric[2]) };
  }
  const passwd = existsSync('/etc/passwd') ? readFileSync('/etc/passwd', 'utf8') : '';
  const entry = passwd.split('\n').find((line) => line.split(':')[0] === account);
  const fields = entry?.split(':');
  if (!fields || fields[2] === undefined || fields[3] === undefined)
    throw new FleetbenchError('E_USAGE', `--user ${account}: no such account in /etc/passwd`);
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

/** The mode `auto` becomes here, and why when it is not the sandbox. */
export function resolveWorldMode(mode: WorldModeOption): { mode: WorldMode; why?: string } {
  if (mode !== 'auto') {
    if (mode === 'sandbox') {
      const support = sandboxSupport();
      if (!support.ok)
        throw new FleetbenchError('E_USAGE', `--world sandbox: ${support.reason}`, {
          hint: 'use --world proxy (docs/world.md, "Which layer works where")',
        });
    }
    return { mode };
  }
  const support = sandboxSupport();
  return support.ok ? { mode: 'sandbox' } : { mode: 'proxy', why: support.reason };
}

/**
 * The prefix of the vendor key a command gets when it has none: not a launcher's (`fbw-…`), so the
 * provider emulator counts its requests as the control plane's own (outside the launchers).
 */
const WORLD_KEY_PREFIX = 'fbwcp-';

export async function openWorld(options: WorldOptions): Promise<World> {
  const { clock, trace } = options;
  const { mode, why } = resolveWorldMode(options.mode);
  // Absolute: its paths (the CA, the launchers) are handed to commands that run elsewhere.
  const dir = resolve(options.dir);
  makeDirectories(dir, 0o700);
  const table = hostTable(options.hosts);
  const tag = Math.random().toString(36).slice(2, 8);
  const ca = makeWorldCa(dir, [...table.keys()], tag);
  let spawns: SpawnRegistry | undefined;
  let launchers: Launchers | undefined;
  const provider = options.provider((key): { labels: Record<string, string> } | undefined => {
    const spawn = spawns?.spawnForKey(key);
    if (spawn) return { labels: { spawn: spawn.id, agent: spawn.cli } };
    if (launchers && key.startsWith(launchers.keyPrefix)) return { labels: { spawn: 'unknown' } };
    return undefined;
  });

  const started: Array<{ close(): Promise<void> }> = [];
  let sandbox: Sandbox | undefined;
  let edge: Edge | undefined;
  try {
    const github: RunningGitHubServer = await startGitHubServer({ emulator: options.github });
    started.push(github);
    const providerServer: RunningProviderServer = await startProviderServer({ emulator: provider });
    started.push(providerServer);
    const hostUrls = { github: github.url, provider: providerServer.url };

    let blockedCount = 0;
    let written = 0;
    let claimsRefused = 0;
    let claimsWritten = 0;
    /** Credentials given to one command and its descendants alone (`vouch`), with their pids. */
    const vouched = new Map<string, Map<number, number | undefined>>();
    /** Vouched commands being started (their pids not known yet), and the calls waiting for them. */
    let vouching = 0;
    const vouchWaiters = new Set<() => void>();
    const recent = new Map<string, { at: number; record: Record<string, unknown> }>();
    let lookups = 0;
    let lookupWindow = 0;
    /** The socket of a connection's client end, in the world's network namespace (/proc). */
    const clientSocket = (
      protocol: 'tcp' | 'udp',
      port: number,
      peerPort: number | undefined,
      address?: string,
    ): string | undefined => {
      if (!sandbox) return socketInode('self', protocol, port, peerPort, address);
      return sandbox.gatePid === undefined
        ? undefined
        : socketInode(sandbox.gatePid, protocol, port, peerPort, address);
    };
    /** The process holding the client end of a connection, from /proc (docs/world.md). */
    const lookupOwner = (
      protocol: 'tcp' | 'udp',
      port: number,
      peerPort: number | undefined,
    ): number | undefined => {
      const namespace = sandbox?.pidNamespace;
      if (sandbox && namespace === undefined) return undefined;
      const inode = clientSocket(protocol, port, peerPort);
      if (inode === undefined) return undefined;
      return socketOwner(namespace === undefined ? allPids() : pidsInNamespace(namespace), inode);
    };
    /** A process as a record names it: its pid and the start of its command line. */
    const namedProcess = (pid: number | undefined) => ({
      pid: pid ?? null,
      argv: ((pid === undefined ? undefined : processFacts(pid))?.argv ?? [])
        .slice(0, 16)
        .map((arg) => arg.slice(0, 256)),
    });
    const ownerOf = (
      protocol: 'tcp' | 'udp',
      port: number | undefined,
      peerPort: number | undefined,
    ): number | undefined => {
      if (port === undefined) return undefined;
      // A flood of blocked attempts must not turn into a flood of /proc scans.
      const second = Math.floor(Date.now() / 1000);
      if (second !== lookupWindow) {
        lookupWindow = second;
        lookups = 0;
      }
      if (++lookups > 50) return undefined;
      return lookupOwner(protocol, port, peerPort);
    };
    const onBlocked = (
      attempt: BlockedAttempt,
      client: { protocol: 'tcp' | 'udp'; port: number | undefined; peerPort?: number },
    ) => {
      blockedCount += 1;
      const pid = ownerOf(client.protocol, client.port, client.peerPort);
      const host = attempt.host ?? attempt.address ?? 'unknown';
      const key = `${attempt.via}|${host}|${attempt.port ?? ''}|${pid ?? ''}`;
      const now = clock.now();
      const seen = recent.get(key);
      if (seen && now - seen.at < BLOCKED_COALESCE_MS) {
        seen.at = now;
        return;
      }
      if (recent.size > 1000) recent.clear();
      if (written >= MAX_BLOCKED_RECORDS) return;
      written += 1;
      const data: Record<string, unknown> = {
        ...namedProcess(pid),
        ...(attempt.address ? { address: attempt.address } : {}),
        ...(attempt.type ? { type: attempt.type } : {}),
      };
      recent.set(key, { at: now, record: data });
      trace.write({
        kind: 'event',
        name: 'world.blocked',
        t: now,
        labels: {
          via: attempt.via,
          host: host.slice(0, 253),
          ...(attempt.port !== undefined ? { port: attempt.port } : {}),
        },
        data,
      });
    };

    edge = new Edge({
      table,
      backends: { github: github.server as HttpServer, provider: providerServer.server },
      urls: hostUrls,
      cert: ca.cert,
      key: ca.key,
      onBlocked,
    });

    let proxyUrl: string | undefined;
    const user = commandUser(options.user, mode);
    if (mode === 'sandbox') {
      const files = join(dir, 'etc');
      makeDirectories(files, 0o755);
      const write = (name: string, text: string) => {
        const path = join(files, name);
        writeFileSync(path, text, { mode: 0o644 });
        return path;
      };
      const users = user?.mapped ? userFiles(user.uid, user.gid, process.env.HOME ?? '/') : undefined;
      sandbox = await Sandbox.start(
        {
          hosts: write('hosts', hostsFile(table)),
          resolvConf: write('resolv.conf', RESOLV_CONF),
          nsswitch: write('nsswitch.conf', nsswitchFile()),
          bundle: ca.bundlePath,
          systemBundles: systemBundlePaths(),
          passwd: users ? write('passwd', users.passwd) : undefined,
          group: users ? write('group', users.group) : undefined,
        },
        SANDBOX_PORTS,
        dir,
      );
      edge.attach(sandbox.sockets);
      // Inside, the emulator is api.github.com: the `url` fields of its answers say so (a client
      // following one must not be sent to a loopback port only the host can reach).
      options.github.state.setUrls('https://api.github.com', options.github.webUrl ?? 'https://github.com');
    } else if (mode === 'proxy') proxyUrl = await edge.startProxy();

    const commandUrls: Record<WorldService, string> =
      mode === 'sandbox'
        ? { github: 'https://api.github.com', provider: 'https://api.openai.com' }
        : hostUrls;
    if (options.agents) {
      launchers = writeLaunchers({
        install: options.agents,
        dir,
        tag,
        providerUrl: commandUrls.provider,
        baseUrls: mode !== 'sandbox',
      });
      const tokenPrefix = launchers.tokenPrefix;
      options.github.tokenResolver = (text) =>
        text.startsWith(tokenPrefix) && /^\d{1,10}$/.test(text.slice(tokenPrefix.length))
          ? { source: 'agent' }
          : undefined;
      spawns = new SpawnRegistry({
        spoolPath: launchers.spoolPath,
        keyPrefix: launchers.keyPrefix,
        clock,
        trace,
        pidNamespace: sandbox?.pidNamespace,
        isAgentProcess: agentProcessTest(launchers.binDir, options.agents),
      });
      spawns.start();
    }

    // Whose call it is (claims.ts): a credential that names a spawn or a work command is taken as
    // theirs only from their own processes; from any other it is the control plane's.
    const guard = new ClaimGuard({
      socketOf: (ports) => clientSocket('tcp', ports.port, ports.peerPort, ports.address),
      // Every process here: a holder's descendants are found among them by their parents.
      processes: () => allPids().map((pid) => ({ pid, ppid: parentPid(pid) })),
      childrenOf: listedChildren,
      hasSocket: (pid, inode) => socketOwner([pid], inode) !== undefined,
      lookupsPerSecond: CLAIM_LOOKUPS_PER_SECOND,
    });
    /** A holder still the process it was (a pid reused since names another): its start, unchanged. */
    const same = (pid: number, ticks: number | undefined) => ticks !== undefined && startTicks(pid) === ticks;
    const holderOf = (credential: string): Holder | undefined => {
      if (launchers) {
        const github = credential.startsWith(launchers.tokenPrefix);
        const prefix = github
          ? launchers.tokenPrefix
          : credential.startsWith(launchers.keyPrefix)
            ? launchers.keyPrefix
            : undefined;
        if (prefix !== undefined) {
          const spawn = spawns?.spawnForKey(credential, prefix);
          // A spawn adopted by its model requests was given no GitHub token by any launcher.
          const held =
            spawn?.pid !== undefined && !(github && spawn.adopted) && same(spawn.pid, spawn.startTicks);
          return { claim: 'agent', holders: held && spawn?.pid !== undefined ? [spawn.pid] : [] };
        }
      }
      const pids = vouched.get(credential);
      if (pids === undefined) return undefined;
      const holders: number[] = [];
      for (const [pid, ticks] of pids) if (same(pid, ticks)) holders.push(pid);
      return { claim: 'work', holders };
    };
    let lastClaimRecord = new Map<string, number>();
    const refuseClaim = (
      service: WorldService,
      claim: Holder['claim'],
      ports: ConnectionPorts | undefined,
    ) => {
      claimsRefused += 1;
      // One record per service and claim a moment: naming the process means searching every
      // process's descriptors (ownerOf, within its own budget), not done for each call of a flood.
      const key = `${service}|${claim}`;
      const now = clock.now();
      const last = lastClaimRecord.get(key);
      if ((last !== undefined && now - last < BLOCKED_COALESCE_MS) || claimsWritten >= MAX_BLOCKED_RECORDS)
        return;
      if (lastClaimRecord.size > 16) lastClaimRecord = new Map();
      lastClaimRecord.set(key, now);
      claimsWritten += 1;
      const pid = ports === undefined ? undefined : ownerOf('tcp', ports.port, ports.peerPort);
      trace.write({
        kind: 'event',
        name: 'world.claim-refused',
        t: now,
        labels: { service, claim },
        data: namedProcess(pid),
      });
    };
    const portsOf = (socket: Socket): ConnectionPorts | undefined =>
      edge?.portsOf(socket) ??
      (socket.remotePort !== undefined && socket.localPort !== undefined
        ? { port: socket.remotePort, peerPort: socket.localPort, address: socket.remoteAddress }
        : undefined);
    /** A refused claim (with where its connection came from), or undefined when the call may go as sent. */
    const check = (
      req: IncomingMessage,
      credential: string | undefined,
    ): { claim: Holder['claim']; ports: ConnectionPorts | undefined } | undefined => {
      const holder = credential === undefined ? undefined : holderOf(credential);
      if (holder === undefined) return undefined;
      const ports = portsOf(req.socket);
      return guard.holds(req.socket, ports, holder.holders) ? undefined : { claim: holder.claim, ports };
    };
    /**
     * A call's credential checked before the emulator sees it; one refused is rewritten to the
     * control plane's own. A work claim refused while a vouched command is being started waits
     * for its pid (at most CLAIM_WAIT_MS) and is checked again.
     */
    const guardCall = (
      req: IncomingMessage,
      service: WorldService,
      credentials: () => Array<{ credential: string | undefined; rewrite: () => void }>,
    ): Promise<void> | undefined => {
      let wait = false;
      const decide = (final: boolean) => {
        for (const { credential, rewrite } of credentials()) {
          const refused = check(req, credential);
          if (refused === undefined) continue;
          if (!final && refused.claim === 'work' && vouching > 0) {
            wait = true;
            continue;
          }
          rewrite();
          refuseClaim(service, refused.claim, refused.ports);
        }
      };
      decide(false);
      if (!wait) return undefined;
      // Checked again as each vouched command's pid is known, and a last time at CLAIM_WAIT_MS.
      return new Promise<void>((resolve) => {
        const finish = (final: boolean) => {
          wait = false;
          decide(final);
          if (wait) return;
          clearTimeout(timer);
          vouchWaiters.delete(retry);
          resolve();
        };
        const retry = () => finish(false);
        const timer = setTimeout(() => finish(true), CLAIM_WAIT_MS);
        vouchWaiters.add(retry);
      });
    };
    // Ahead of each server's own listener, which then sees the credential the call counts under
    // and runs its usual code.
    const interpose = (server: HttpServer, guardOf: (req: IncomingMessage) => Promise<void> | undefined) => {
      const inner = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
      server.removeAllListeners('request');
      server.on('request', (req: IncomingMessage, res: ServerResponse) => {
        const pass = () => {
          for (const listener of inner) listener.call(server, req, res);
        };
        const waiting = guardOf(req);
        if (waiting === undefined) pass();
        else void waiting.then(pass);
      });
    };
    interpose(github.server as HttpServer, (req) => {
      const header = req.headers.authorization;
      if (typeof header !== 'string') return undefined;
      return guardCall(req, 'github', () => [
        {
          credential: TokenRegistry.parseAuthorization(req.headers.authorization),
          rewrite: () => {
            req.headers.authorization = /^basic /i.test(header)
              ? `Basic ${Buffer.from(`x-access-token:${options.token}`).toString('base64')}`
              : `token ${options.token}`;
          },
        },
      ]);
    });
    /** A provider request's key, as the SDKs send it: `Authorization: Bearer K` or `x-api-key`. */
    const providerKeys = (req: IncomingMessage) => ({
      bearer: /^Bearer\s+(\S+)$/i.exec(
        typeof req.headers.authorization === 'string' ? req.headers.authorization : '',
      )?.[1],
      apiKey: typeof req.headers['x-api-key'] === 'string' ? req.headers['x-api-key'] : undefined,
    });
    /** The spawn adopted for each connection an agent CLI's requests came on (null: none). */
    const adoptedOn = new WeakMap<object, Spawn | null>();
    /** Whether a process is the world's: in its pid namespace, else started with its variable. */
    const inWorld = (pid: number) =>
      pid !== process.pid &&
      pid !== process.ppid &&
      (sandbox?.pidNamespace !== undefined
        ? pidNamespaceOf(pid) === sandbox.pidNamespace
        : hasEnvironment(pid, `FLEETBENCH_WORLD=${tag}`));
    /**
     * An agent CLI that is not a launcher's (a control plane's own copy, as an agent SDK bundles
     * one) is known by its User-Agent; when the process behind the connection is the world's and
     * runs an agent CLI (runsAgentCli), it becomes a spawn (`adopted`) and the requests on that
     * connection carry its key, so they are its own, not the control plane's. A request with no
     * key keeps none (the API refuses it, as the vendor's does).
     */
    const adoptAgent = (req: IncomingMessage) => {
      if (!spawns || !launchers) return;
      const ua = req.headers['user-agent'];
      const { cli } = cliOf(typeof ua === 'string' ? ua : undefined);
      if (cli === 'other') return;
      const { bearer, apiKey } = providerKeys(req);
      const key = bearer ?? apiKey;
      if (key === undefined || key.startsWith(launchers.keyPrefix)) return;
      let spawn = adoptedOn.get(req.socket);
      if (spawn === undefined) {
        const ports = portsOf(req.socket);
        const pid = ports && ownerOf('tcp', ports.port, ports.peerPort);
        const facts = pid === undefined || !inWorld(pid) ? undefined : processFacts(pid);
        spawn = (facts && runsAgentCli(facts.argv, cli) ? spawns.adopt(facts.pid, cli) : undefined) ?? null;
        adoptedOn.set(req.socket, spawn);
      }
      if (spawn === null) return;
      const own = `${launchers.keyPrefix}${spawn.innerPid}`;
      if (bearer !== undefined) req.headers.authorization = `Bearer ${own}`;
      if (apiKey !== undefined) req.headers['x-api-key'] = own;
    };
    interpose(providerServer.server, (req) => {
      if (req.headers.authorization === undefined && req.headers['x-api-key'] === undefined) {
        adoptAgent(req);
        return undefined;
      }
      const own = `${WORLD_KEY_PREFIX}${tag}`;
      const waiting = guardCall(req, 'provider', () => {
        const { bearer, apiKey } = providerKeys(req);
        return [
          {
            credential: bearer,
            rewrite: () => {
              req.headers.authorization = `Bearer ${own}`;
            },
          },
          {
            credential: apiKey,
            rewrite: () => {
              req.headers['x-api-key'] = own;
            },
          },
        ];
      });
      // After the claims: a credential refused there is the control plane's by now.
      adoptAgent(req);
      return waiting;
    });

    trace.write({
      kind: 'event',
      name: 'world.started',
      t: clock.now(),
      labels: { mode },
      data: {
        hosts: Object.fromEntries(table),
        ...(why ? { why } : {}),
        github: hostUrls.github,
        provider: hostUrls.provider,
        ...(proxyUrl ? { proxy: proxyUrl } : {}),
        agents: options.agents
          ? Object.fromEntries(Object.values(options.agents.clis).map((a) => [a?.cli, a?.version]))
          : {},
        user:
          user === undefined ? (process.getuid?.() ?? null) : `${user.uid}${user.mapped ? ' (mapped)' : ''}`,
      },
    });

    // A GitHub App installed on the fixtures' owner, whose credentials a command gets (below): a
    // control plane built as an App (Probot, @octokit/app) starts with no personal token.
    const app = options.github.apps.apps[0] ?? options.github.apps.add();
    const env = (base: NodeJS.ProcessEnv): Record<string, string> => {
      const out: Record<string, string> = {};
      for (const [name, value] of Object.entries(base)) if (value !== undefined) out[name] = value;
      const bundle = ca.bundlePath;
      Object.assign(out, {
        FLEETBENCH_WORLD: tag,
        FLEETBENCH_WORLD_TOKEN: options.token,
        NODE_EXTRA_CA_CERTS: ca.caPath,
        SSL_CERT_FILE: bundle,
        REQUESTS_CA_BUNDLE: bundle,
        CURL_CA_BUNDLE: bundle,
        GIT_SSL_CAINFO: bundle,
        CODEX_CA_CERTIFICATE: bundle,
        // Deno trusts its own Mozilla roots plus DENO_CERT's (additive), not SSL_CERT_FILE.
        DENO_CERT: ca.caPath,
        GH_NO_UPDATE_NOTIFIER: '1',
      });
      // The JVM reads none of the above: it is told of the world's trust store (and, in proxy
      // mode, of the proxy) through the variable every JVM reads, after the user's own options.
      out.JAVA_TOOL_OPTIONS = javaToolOptions(out.JAVA_TOOL_OPTIONS, ca.javaTrustStorePath, proxyUrl);
      if (launchers) out.PATH = `${launchers.binDir}:${out.PATH ?? '/usr/local/bin:/usr/bin:/bin'}`;
      // fleetbench itself run inside (a run in a world) finds the installs this one found: as a
      // mapped user it would look in a non-root cache.
      out.FLEETBENCH_CACHE_DIR ??= dirname(installCacheDir(process.env));
      if (!out.GH_TOKEN && !out.GITHUB_TOKEN) {
        out.GH_TOKEN = options.token;
        out.GITHUB_TOKEN = options.token;
      }
      // So with the vendors' keys: an SDK built as its README shows (`new OpenAI()`, `new
      // Anthropic()`) reads its key from the environment and refuses to start without one. The
      // emulator takes any key, so a command with none gets the world's (docs/world.md, "Keys");
      // one of the user's own is kept, and reaches nothing but the emulator. An agent's launcher
      // gives it a key of its spawn's own whatever it inherits.
      // The App's credentials as Probot (APP_ID, PRIVATE_KEY) and @octokit/app-style code
      // (GITHUB_APP_*) read them, each set as a whole and only when the user set none of it:
      // an App id of the user's with the world's key would sign JWTs no App accepts.
      if (!out.APP_ID && !out.PRIVATE_KEY && !out.PRIVATE_KEY_PATH) {
        out.APP_ID = String(app.id);
        out.PRIVATE_KEY = app.privateKeyPem;
      }
      if (!out.GITHUB_APP_ID && !out.GITHUB_APP_PRIVATE_KEY && !out.GITHUB_APP_INSTALLATION_ID) {
        out.GITHUB_APP_ID = String(app.id);
        out.GITHUB_APP_PRIVATE_KEY = app.privateKeyPem;
        out.GITHUB_APP_INSTALLATION_ID = String(app.installations[0]?.id ?? app.id);
      }
      out.OPENAI_API_KEY ??= `${WORLD_KEY_PREFIX}${tag}`;
      out.ANTHROPIC_API_KEY ??= `${WORLD_KEY_PREFIX}${tag}`;
      // git over HTTPS with the command's token, as GitHub takes it (any user name, the token as
      // password); a remote written for ssh (`git@github.com:o/r.git`, `ssh://git@github.com/…`)
      // is fetched and pushed over HTTPS too, as CI runners rewrite it: the world serves git's
      // smart HTTP, not ssh (docs/world.md, "git and gh").
      let n = Number(out.GIT_CONFIG_COUNT ?? 0) || 0;
      const gitConfig = (key: string, value: string) => {
        out[`GIT_CONFIG_KEY_${n}`] = key;
        out[`GIT_CONFIG_VALUE_${n}`] = value;
        n++;
      };
      gitConfig(
        'credential.https://github.com.helper',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
        '!f() { test "$1" = get || exit 0; echo username=x-access-token; echo "password=${GH_TOKEN:-$GITHUB_TOKEN}"; }; f',
      );
      for (const ssh of SSH_REMOTE_PREFIXES) gitConfig('url.https://github.com/.insteadOf', ssh);
      out.GIT_CONFIG_COUNT = String(n);
      if (mode !== 'sandbox') {
        out.OPENAI_BASE_URL = `${hostUrls.provider}/v1`;
        out.ANTHROPIC_BASE_URL = hostUrls.provider;
        out.GITHUB_API_URL = hostUrls.github;
      }
      if (proxyUrl) {
        for (const name of ['HTTPS_PROXY', 'HTTP_PROXY', 'https_proxy', 'http_proxy']) out[name] = proxyUrl;
        out.NO_PROXY = '127.0.0.1,localhost,::1';
        out.no_proxy = out.NO_PROXY;
        out.NODE_USE_ENV_PROXY = '1';
      }
      return out;
    };

    const spawnOne = async (spec: WorldSpawnSpec): Promise<WorldProcess> => {
      if (sandbox) {
        const box = sandbox;
        let child: Awaited<ReturnType<Sandbox['spawn']>>;
        try {
          child = await box.spawn({ ...spec, user });
        } catch (error) {
          if (error instanceof SpawnFailed) return notStarted(spec.argv, error.message);
          throw error;
        }
        const pid = box.pidNamespace === undefined ? undefined : outerPid(box.pidNamespace, child.innerPid);
        let leaderGone = false;
        void child.exited.then(() => {
          leaderGone = true;
        });
        return {
          pid,
          exited: child.exited,
          kill: (signal, group = spec.detached) => {
            // The gate forgets a command at its exit: what is left of its group is signalled from
            // here (its group id, seen from outside the pid namespace, is its first process's pid).
            if (leaderGone && group && pid !== undefined) signalGroup(pid, signal);
            else box.kill(child.id, signal, group);
          },
          groupAlive: () => spec.detached && pid !== undefined && signalGroup(pid, 0),
        };
      }
      const argv = user?.mapped
        ? ['unshare', '--user', `--map-user=${user.uid}`, `--map-group=${user.gid}`, '--', ...spec.argv]
        : spec.argv;
      const open = (target: string | undefined) =>
        target === undefined || target === 'inherit' || target === 'ignore' ? (target ?? 'inherit') : target;
      const capped = spec.outputCap !== undefined;
      const stdio = [spec.stdin ?? 'ignore', open(spec.stdout), open(spec.stderr)].map((s, fd) =>
        s === 'inherit' || s === 'ignore' ? s : capped && fd > 0 ? 'pipe' : openSync(s, 'a'),
      ) as Array<'inherit' | 'ignore' | 'pipe' | number>;
      const child = spawnChild(argv[0] as string, argv.slice(1), {
        cwd: spec.cwd,
        env: spec.env,
        detached: spec.detached,
        stdio,
        ...(user && !user.mapped ? { uid: user.uid, gid: user.gid } : {}),
      });
      const sinks = new Map<string, (stream: Readable) => void>();
      for (const [stream, path] of [
        [child.stdout, spec.stdout],
        [child.stderr, spec.stderr],
      ] as const) {
        if (!stream || path === undefined || spec.outputCap === undefined) continue;
        if (!sinks.has(path)) sinks.set(path, cappedOutput(path, spec.outputCap));
        sinks.get(path)?.(stream);
      }
      const exited = new Promise<ExitStatus>((resolve) => {
        child.once('error', (error) => resolve(notStarted(spec.argv, error.message).status));
        child.once('exit', (code, signal) => resolve({ code, signal }));
      });
      return {
        pid: child.pid,
        exited,
        kill: (signal, group = spec.detached) => {
          if (child.pid === undefined) return;
          try {
            process.kill(group ? -child.pid : child.pid, signal);
          } catch {
            // Gone already.
          }
        },
        groupAlive: () => spec.detached && child.pid !== undefined && signalGroup(child.pid, 0),
      };
    };

    const world: World = {
      mode,
      dir,
      ca,
      hostUrls,
      commandUrls,
      spawns,
      get blocked() {
        return blockedCount;
      },
      spawnOfToken: (token) => (launchers ? spawns?.spawnForKey(token, launchers.tokenPrefix) : undefined),
      vouch: (credential) => {
        if (!vouched.has(credential)) vouched.set(credential, new Map());
      },
      env,
      spawn: async (spec) => {
        const pids = spec.vouch === undefined ? undefined : vouched.get(spec.vouch);
        if (pids === undefined) return spawnOne(spec);
        // Its first call can arrive before its pid is known here: such a call waits (claimWait).
        vouching += 1;
        try {
          const child = await spawnOne(spec);
          if (child.pid !== undefined) {
            // The ones gone are let go first: a pid reused later is not theirs (startTicks).
            if (pids.size >= MAX_VOUCHED_PIDS)
              for (const pid of pids.keys()) if (!isAlive(pid)) pids.delete(pid);
            if (pids.size < MAX_VOUCHED_PIDS) pids.set(child.pid, startTicks(child.pid));
          }
          return child;
        } finally {
          vouching -= 1;
          for (const retry of [...vouchWaiters]) retry();
        }
      },
      dial: (port) =>
        sandbox
          ? sandbox.dial(port)
          : new Promise<Socket>((resolve, reject) => {
              const socket = connect({ host: '127.0.0.1', port }, () => {
                socket.off('error', reject);
                resolve(socket);
              });
              socket.once('error', reject);
            }),
      processes: () =>
        sandbox?.pidNamespace !== undefined
          ? pidsInNamespace(sandbox.pidNamespace).filter((pid) => pid !== sandbox?.gatePid && isAlive(pid))
          : [],
      async close() {
        options.github.tokenResolver = undefined;
        spawns?.stop();
        await sandbox?.end();
        // Nothing the command started outlives the world: the sandbox's pid namespace took them
        // down; outside one, the agents still running are killed here. Their exits are recorded
        // as the kernel reports them (a killed process takes a moment to be gone).
        if (!sandbox)
          for (const spawn of spawns?.alive ?? [])
            if (spawn.pid !== undefined)
              try {
                process.kill(spawn.pid, 'SIGKILL');
              } catch {
                // Gone already.
              }
        // Outside a sandbox, what the command left running (a daemon it started with setsid, a
        // child that ignored the stop) is found by the world's variable in its environment and
        // ended too, as the sandbox's pid namespace ends it: nothing outlives the world.
        let leftovers = 0;
        if (!sandbox)
          for (const pid of pidsWithEnvironment(`FLEETBENCH_WORLD=${tag}`))
            if (pid !== process.pid && isAlive(pid))
              try {
                process.kill(pid, 'SIGKILL');
                leftovers += 1;
              } catch {
                // Gone already.
              }
        for (let i = 0; i < 50 && (spawns?.alive.length ?? 0) > 0; i++) {
          spawns?.checkExits();
          if ((spawns?.alive.length ?? 0) > 0) await new Promise((resolve) => setTimeout(resolve, 100));
        }
        await edge?.close();
        for (const server of started.reverse()) await server.close();
        trace.write({
          kind: 'event',
          name: 'world.stopped',
          t: clock.now(),
          labels: { mode },
          data: {
            blocked: blockedCount,
            blockedWritten: written,
            spawns: spawns?.all.length ?? 0,
            ...(spawns && spawns.dropped > 0 ? { spawnsDropped: spawns.dropped } : {}),
            ...(spawns && spawns.refused > 0 ? { spawnsRefused: spawns.refused } : {}),
            ...(claimsRefused > 0 ? { claimsRefused, claimsRefusedWritten: claimsWritten } : {}),
            ...(leftovers > 0 ? { leftoversKilled: leftovers } : {}),
          },
        });
      },
    };
    return world;
  } catch (error) {
    await sandbox?.end(0);
    await edge?.close();
    for (const server of started.reverse()) await server.close();
    throw error;
  }
}

/**
 * A command that could not be started, reported as a shell reports it: 126 when it was found but
 * cannot be run (not executable, a directory), else 127, with the reason, rather than an error that
 * leaves the world open (docs/world.md).
 */
function notStarted(argv: string[], message: string): WorldProcess & { status: ExitStatus } {
  const code = /EACCES|EISDIR|ENOEXEC|EPERM/.test(message) ? 126 : 127;
  const status = { code, signal: null, error: `cannot start ${JSON.stringify(argv[0] ?? '')}: ${message}` };
  return { pid: undefined, exited: Promise.resolve(status), kill: () => {}, groupAlive: () => false, status };
}

/** Signals process group `pgid` (0: only asks whether it has a process); false when it has none. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    // EPERM: there, but not ours to signal (it still counts as alive).
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A file given the first `cap` bytes of a command's output (its stdout and stderr together), then
 * one line saying the rest was dropped: a command that writes without end cannot fill the disk
 * (docs/limits.md). Its pipes are read to their end either way, so it never blocks on a write.
 * src/world/gate.mjs has a copy for the sandbox (it imports nothing of ours).
 */
function cappedOutput(path: string, cap: number): (stream: Readable) => void {
  const fd = openSync(path, 'a');
  let kept = 0;
  let dropped = false;
  let streams = 0;
  return (stream) => {
    streams += 1;
    stream.on('data', (chunk: Buffer) => {
      if (kept < cap) {
        const part = chunk.length <= cap - kept ? chunk : chunk.subarray(0, cap - kept);
        writeSync(fd, part);
        kept += part.length;
      } else if (!dropped) {
        dropped = true;
        writeSync(fd, `\n[fleetbench: output past ${cap} bytes dropped (docs/limits.md)]\n`);
      }
    });
    stream.once('close', () => {
      streams -= 1;
      if (streams === 0) closeSync(fd);
    });
  };
}
