/**
 * Which host names the world serves, and with what: the GitHub hosts are the run's GitHub
 * emulator, the model hosts its provider emulator; every other name is blocked (docs/world.md,
 * "Hosts"). In the sandbox each service has a loopback address of its own (the namespace's `lo`
 * holds all of 127.0.0.0/8), so a connection says by its destination address which service it
 * wants before a byte is read, and one certificate names every host.
 *
 * Also the small files the sandbox binds over the system's: /etc/hosts, /etc/resolv.conf,
 * /etc/nsswitch.conf and, when the command's user has no entry, /etc/passwd and /etc/group.
 */
import { existsSync, readFileSync } from 'node:fs';
import { FleetbenchError } from '../base/errors.ts';

export const WORLD_SERVICES = ['github', 'provider'] as const;
export type WorldService = (typeof WORLD_SERVICES)[number];

/**
 * The hosts the world serves by default: GitHub's web/git host, its API and upload hosts, and the
 * model APIs the official SDKs and the pinned agent CLIs default to (codex and the OpenAI SDK:
 * api.openai.com; Claude Code and the Anthropic SDK: api.anthropic.com; opencode speaks to the
 * provider its configuration names, which the launcher points at api.openai.com).
 */
export const DEFAULT_HOSTS: Readonly<Record<string, WorldService>> = {
  'github.com': 'github',
  'api.github.com': 'github',
  'uploads.github.com': 'github',
  'api.openai.com': 'provider',
  'api.anthropic.com': 'provider',
};

/** Each service's address inside the sandbox. */
export const SERVICE_ADDRESS: Readonly<Record<WorldService, string>> = {
  github: '127.0.0.2',
  provider: '127.0.0.3',
};

/** At most this many hosts (the defaults and `--host` together): docs/limits.md. */
export const MAX_WORLD_HOSTS = 64;

const HOST_NAME =
  /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/;

/**
 * The world's host table: the defaults plus `NAME=SERVICE` entries (`--host ghe.example.com=github`),
 * checked. A later entry for the same name wins.
 */
export function hostTable(extra: readonly string[] = []): Map<string, WorldService> {
  const table = new Map<string, WorldService>(Object.entries(DEFAULT_HOSTS));
  for (const entry of extra) {
    const match = /^([^=]+)=(.+)$/.exec(entry);
    const name = match?.[1]?.trim().toLowerCase().replace(/\.$/, '');
    const service = match?.[2]?.trim();
    if (!name || !service)
      throw new FleetbenchError('E_USAGE', `--host ${entry}: expected NAME=SERVICE (github or provider)`);
    if (!HOST_NAME.test(name))
      throw new FleetbenchError('E_USAGE', `--host ${entry}: '${name}' is not a DNS host name`);
    if (!(WORLD_SERVICES as readonly string[]).includes(service))
      throw new FleetbenchError(
        'E_USAGE',
        `--host ${entry}: unknown service '${service}' (have: ${WORLD_SERVICES.join(', ')})`,
      );
    table.set(name, service as WorldService);
  }
  if (table.size > MAX_WORLD_HOSTS)
    throw new FleetbenchError(
      'E_USAGE',
      `--host: at most ${MAX_WORLD_HOSTS} hosts in a world (docs/limits.md)`,
    );
  return table;
}

/** The service a host name (any case, with or without the root dot) is served by, if any. */
export function serviceOf(table: ReadonlyMap<string, WorldService>, host: string): WorldService | undefined {
  return table.get(host.toLowerCase().replace(/\.$/, ''));
}

/** The service behind a sandbox address, if it is one of theirs. */
export function serviceAt(address: string): WorldService | undefined {
  const plain = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  for (const service of WORLD_SERVICES) if (SERVICE_ADDRESS[service] === plain) return service;
  return undefined;
}

/** A host name that stands for a sandbox address in a record (the first the table maps there). */
export function hostAt(table: ReadonlyMap<string, WorldService>, address: string): string | undefined {
  const service = serviceAt(address);
  if (!service) return undefined;
  for (const [name, s] of table) if (s === service) return name;
  return undefined;
}

export function hostsFile(table: ReadonlyMap<string, WorldService>): string {
  const lines = [
    '# fleetbench world: these names are the run emulators, every other name is blocked (docs/world.md)',
    '127.0.0.1 localhost',
    '::1 localhost ip6-localhost ip6-loopback',
  ];
  for (const service of WORLD_SERVICES) {
    const names = [...table].filter(([, s]) => s === service).map(([name]) => name);
    if (names.length > 0) lines.push(`${SERVICE_ADDRESS[service]} ${names.join(' ')}`);
  }
  return `${lines.join('\n')}\n`;
}

/** One attempt, one second: the world's DNS server answers at once, so a resolver never waits. */
export const RESOLV_CONF = 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n';

/**
 * The system's nsswitch.conf with its `hosts:` line replaced by `files dns`: a resolver module
 * that asks a daemon outside the namespace (systemd-resolved, nscd, mdns) would otherwise answer
 * for names the world must block.
 */
export function nsswitchFile(): string {
  const system = existsSync('/etc/nsswitch.conf') ? readFileSync('/etc/nsswitch.conf', 'utf8') : '';
  const kept = system.split('\n').filter((line) => !/^\s*hosts\s*:/.test(line) && line.trim() !== '');
  return `${[...kept, 'hosts: files dns'].join('\n')}\n`;
}

/**
 * /etc/passwd and /etc/group with an entry for `uid`/`gid` when the system has none, so that
 * tools that look their user up (ssh, whoami, some CLIs) find one. Undefined when both exist.
 */
export function userFiles(
  uid: number,
  gid: number,
  home: string,
): { passwd: string; group: string } | undefined {
  const passwd = existsSync('/etc/passwd') ? readFileSync('/etc/passwd', 'utf8') : '';
  const group = existsSync('/etc/group') ? readFileSync('/etc/group', 'utf8') : '';
  const hasUser = passwd.split('\n').some((line) => line.split(':')[2] === String(uid));
  const hasGroup = group.split('\n').some((line) => line.split(':')[2] === String(gid));
  if (hasUser && hasGroup) return undefined;
  const end = (text: string) => (text === '' || text.endsWith('\n') ? text : `${text}\n`);
  return {
    passwd: hasUser ? passwd : `${end(passwd)}fleetbench:x:${uid}:${gid}:fleetbench world:${home}:/bin/sh\n`,
    group: hasGroup ? group : `${end(group)}fleetbench:x:${gid}:\n`,
  };
}
