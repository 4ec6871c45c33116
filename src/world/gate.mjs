// The world's gate (docs/world.md, "The sandbox"): the one fleetbench process inside the sandbox's
// network and pid namespaces. It opens the listening sockets the world answers on (HTTPS and
// HTTP for the emulators' addresses, DNS, and the ports a blocked attempt is caught on), hands
// each to fleetbench outside over the IPC channel (the sockets stay in the namespace; fleetbench
// accepts on them), then starts the commands it is asked to, as the world's user, and reports
// their exits. It is the pid namespace's first process after bwrap's own init: when it exits,
// the kernel ends everything the commands started.
//
// Plain JavaScript with no imports but Node's own: it starts in ~40 ms and is copied as it is into
// the package (scripts/build.ts).
import { spawn, spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { closeSync, openSync, writeSync } from 'node:fs';
import { connect, createServer } from 'node:net';

const config = JSON.parse(process.env.FLEETBENCH_GATE ?? '{}');
delete process.env.FLEETBENCH_GATE;
const children = new Map();

function send(message, handle) {
  if (process.connected) process.send(message, handle);
}

// A socket handed over stays open here too, and whichever process reads first gets a connection
// or datagram: once fleetbench has it, this copy is closed, so only fleetbench accepts and reads.
function handOver(message, handle) {
  return new Promise((resolve) => {
    if (!process.connected) {
      resolve();
      return;
    }
    process.send(message, handle, () => {
      handle.close();
      resolve();
    });
  });
}

// Every address is local: a connection to any IPv4 address reaches the catch-all listeners (and is
// recorded) instead of failing unseen with "network unreachable". Needs iproute2; without it the
// emulators' addresses still work and other addresses fail at once. IPv6 likewise, where the
// namespace has IPv6 (its loopback has ::1): the listeners are then dual-stack, so an IPv6
// address is caught and recorded as an IPv4 one is (an IPv4 one arrives as ::ffff:a.b.c.d).
let route = false;
let route6 = false;
if (config.route) {
  const result = spawnSync('ip', ['route', 'add', 'local', 'default', 'dev', 'lo'], { stdio: 'ignore' });
  route = result.status === 0;
  const result6 = spawnSync('ip', ['-6', 'route', 'add', 'local', 'default', 'dev', 'lo'], {
    stdio: 'ignore',
  });
  route6 = result6.status === 0;
}

function listenTcp(port, host = route6 ? '::' : '0.0.0.0') {
  return new Promise((resolve) => {
    const server = createServer({ pauseOnConnect: true });
    server.once('error', (error) =>
      // An IPv6 socket the kernel refuses after all: IPv4 only, as without the IPv6 route.
      host === '::' ? listenTcp(port, '0.0.0.0').then(resolve) : resolve({ port, error: error.message }),
    );
    // LISTEN_BACKLOG (src/base/limits.ts; this file runs alone in the sandbox and imports nothing of ours).
    server.listen({ port, host, ipv6Only: false, backlog: 4096 }, () => {
      handOver({ type: 'listener', proto: 'tcp', port }, server).then(() => resolve({ port }));
    });
  });
}

// DNS over UDP on the resolver's address only: an answer from a socket bound to 0.0.0.0 could leave
// from another local address, and a resolver drops an answer that does not come from the address
// it asked. A query sent straight to another address finds no listener and fails at once.
function listenUdp(port) {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    socket.once('error', (error) => resolve({ port, error: error.message }));
    socket.bind(port, '127.0.0.1', () => {
      handOver({ type: 'listener', proto: 'udp', port }, socket).then(() => resolve({ port }));
    });
  });
}

function stdioOf(spec, capped) {
  if (spec === 'inherit' || spec === 'ignore') return spec;
  return capped ? 'pipe' : openSync(spec, 'a');
}

// A file given the first `cap` bytes of a command's output (its stdout and stderr together), then
// one line saying the rest was dropped: a command that writes without end cannot fill the disk.
// Its pipes are read to their end either way, so it never blocks on a write. A copy of
// src/world/world.ts's cappedOutput (this file imports nothing of ours).
function cappedOutput(path, cap) {
  const fd = openSync(path, 'a');
  let kept = 0;
  let dropped = false;
  let streams = 0;
  return (stream) => {
    streams += 1;
    stream.on('data', (chunk) => {
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

function start(message) {
  const { id, argv, cwd, env, user, detached } = message;
  // A mapped user: uid inside a user namespace of the command's own, the invoking user outside.
  // A host user: a real setuid to that account (fleetbench is root).
  const mapped =
    user?.mapped === true
      ? ['unshare', '--user', `--map-user=${user.uid}`, `--map-group=${user.gid}`, '--', ...argv]
      : argv;
  let child;
  try {
    child = spawn(mapped[0], mapped.slice(1), {
      cwd,
      env,
      detached: detached === true,
      ...(user !== undefined && user.mapped !== true ? { uid: user.uid, gid: user.gid } : {}),
      stdio: [
        stdioOf(message.stdin ?? 'ignore', false),
        stdioOf(message.stdout ?? 'inherit', message.outputCap !== undefined),
        stdioOf(message.stderr ?? 'inherit', message.outputCap !== undefined),
      ],
    });
  } catch (error) {
    send({ type: 'spawn-failed', id, error: error.message });
    return;
  }
  const sinks = new Map();
  for (const [stream, path] of [
    [child.stdout, message.stdout],
    [child.stderr, message.stderr],
  ]) {
    if (!stream) continue;
    if (!sinks.has(path)) sinks.set(path, cappedOutput(path, message.outputCap));
    sinks.get(path)(stream);
  }
  child.once('error', (error) => send({ type: 'spawn-failed', id, error: error.message }));
  if (child.pid === undefined) return;
  children.set(id, { child, detached: detached === true });
  send({ type: 'spawned', id, pid: child.pid });
  child.once('exit', (code, signal) => {
    children.delete(id);
    send({ type: 'exit', id, code, signal });
  });
}

function kill(message) {
  const entry = children.get(message.id);
  if (!entry?.child.pid) return;
  try {
    // A detached child leads a process group: the signal reaches everything still in it.
    process.kill(
      entry.detached && message.group !== false ? -entry.child.pid : entry.child.pid,
      message.signal,
    );
  } catch {
    // Already gone.
  }
}

function end(graceMs) {
  for (const id of children.keys()) kill({ id, signal: 'SIGTERM' });
  const timer = setTimeout(() => process.exit(0), graceMs);
  timer.unref?.();
  const check = setInterval(() => {
    if (children.size === 0) process.exit(0);
  }, 20);
  check.unref?.();
}

// A connection to a port inside the namespace (the control plane's own HTTP API), made here and
// handed to fleetbench, which cannot reach the namespace's loopback from outside.
function dial(message) {
  const socket = connect({ host: '127.0.0.1', port: message.port });
  socket.once('error', (error) =>
    send({ type: 'dial-failed', id: message.id, error: error.code ?? error.message }),
  );
  socket.once('connect', () => {
    socket.removeAllListeners('error');
    socket.pause();
    send({ type: 'dialed', id: message.id }, socket);
  });
}

process.on('message', (message) => {
  if (message?.type === 'spawn') start(message);
  else if (message?.type === 'dial') dial(message);
  else if (message?.type === 'kill') kill(message);
  else if (message?.type === 'end') end(Math.max(0, Math.min(10_000, Number(message.graceMs) || 0)));
});
// fleetbench gone: nothing here may outlive it (bwrap's --die-with-parent ends the namespace too).
process.on('disconnect', () => process.exit(0));
// Ctrl-C on the terminal reaches every process of the foreground group: the command decides what
// it means, and fleetbench ends the world when it is done.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => end(2_000));

const tcp = await Promise.all((config.tcp ?? []).map((port) => listenTcp(port)));
const udp = await Promise.all((config.udp ?? []).map(listenUdp));
send({ type: 'ready', route, route6, pid: process.pid, tcp, udp });
