/**
 * A server's close() ends every connection it accepted, whatever state the connection is in,
 * and resolves in seconds: a run's end waits on it. Found in CI: a TLS connection that had not
 * finished its handshake was on no list of node:http2's, so the GitHub emulator's close() waited
 * for the client (gh, orphaned when AO was killed) and the run never ended. A property test
 * searches the mixes of connection states for one that holds close() past its bound.
 */
import { connect as connectTcp, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as connectTls } from 'node:tls';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/real.ts';
import { generateSelfSignedCert, startGitHubServer } from '../src/github/index.ts';
import { startLiveServer } from '../src/live/server.ts';
import { ProviderEmulator, startProviderServer } from '../src/provider/index.ts';
import { startReferenceServer } from '../src/reference/server.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { inProcess } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const dir = scratchDir('fleetbench-close-');
const openssl = systemTool('openssl', ['version'], 'openssl');
/** The TLS server's certificate, made by openssl when that server is first started. */
let cert: ReturnType<typeof generateSelfSignedCert> | undefined;
const tlsCert = () => {
  openssl.require();
  cert ??= generateSelfSignedCert(join(dir, 'tls'));
  return cert;
};
/** close() and every client's end: well inside a run's stop, far below any client timeout. */
const BOUND_MS = 3_000;

/** What a client has done on its connection when the server closes. */
const STATES = [
  'silent', // connected, sent nothing
  'half-request-line',
  'half-headers',
  'half-body', // a POST's headers, then 1 byte of 1,000 declared
  'half-client-hello', // a TLS record header and a few bytes of its 512
  'answered-idle', // a whole request answered, the connection kept alive
  'tls-silent', // TLS handshake done, nothing since (TLS servers only)
] as const;
type State = (typeof STATES)[number];

const REQUEST = 'GET /_fleetbench/none HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

/** Opens a connection and brings it to `state`; resolves to the socket once it is there. */
async function open(port: number, state: State, tls: boolean): Promise<Socket> {
  if (tls && (state === 'tls-silent' || state === 'answered-idle')) {
    const socket = connectTls({ port, host: '127.0.0.1', ca: tlsCert().cert, ALPNProtocols: ['http/1.1'] });
    socket.on('error', () => undefined);
    socket.resume();
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', () => resolve());
      socket.once('error', reject);
    });
    if (state === 'answered-idle') await answered(socket);
    return socket;
  }
  const socket = connectTcp(port, '127.0.0.1');
  socket.on('error', () => undefined);
  // Read (and drop) what comes, so that the server's end reaches the client as 'close'.
  socket.resume();
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  switch (state) {
    case 'half-request-line':
      socket.write('GET /rate_li');
      break;
    case 'half-headers':
      socket.write('GET /rate_limit HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      break;
    case 'half-body':
      socket.write('POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{');
      break;
    case 'half-client-hello':
      socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]));
      break;
    case 'answered-idle':
      if (!tls) await answered(socket);
      break;
    default:
      break;
  }
  return socket;
}

/** Sends one request and waits for the first bytes of its answer (the connection stays open). */
function answered(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    socket.once('data', () => resolve());
    socket.write(REQUEST);
  });
}

interface Served {
  port: number;
  tls: boolean;
  close(): Promise<void>;
}

const servers: Record<string, () => Promise<Served>> = {
  'github serve (HTTP)': async () => {
    const server = await startGitHubServer({ emulator: inProcess().emulator, git: false });
    return { port: server.port, tls: false, close: () => server.close() };
  },
  'github serve (TLS: HTTP/2 and HTTP/1.1)': async () => {
    const server = await startGitHubServer({ emulator: inProcess().emulator, git: false, tls: tlsCert() });
    return { port: server.port, tls: true, close: () => server.close() };
  },
  'provider serve': async () => {
    const server = await startProviderServer({
      emulator: new ProviderEmulator({ clock: new RealClock(), rng: new Rng(1) }),
    });
    return { port: server.port, tls: false, close: () => server.close() };
  },
  "reference serve's control plane": async () => {
    const server = await startReferenceServer({
      stateDir: join(dir, `state-${Math.random().toString(36).slice(2)}`),
      emit: () => undefined,
    });
    return { port: server.port, tls: false, close: () => server.close() };
  },
  "a live run's receivers": async () => {
    const server = await startLiveServer({
      port: 0,
      clock: new RealClock({ timeScale: 1 }),
      trace: new MemorySink(),
      otlp: true,
    });
    return { port: server.port, tls: false, close: () => server.close() };
  },
};

function withinBound<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took over ${BOUND_MS} ms`)), BOUND_MS);
    }),
  ]);
}

describe('close() ends every connection, whatever its state, in seconds', () => {
  for (const [name, start] of Object.entries(servers)) {
    // The TLS server's certificate is made with openssl.
    it.skipIf(name.includes('TLS') && openssl.skip)(
      name,
      async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.constantFrom(...STATES), { minLength: 1, maxLength: 8 }),
            async (states) => {
              const server = await start();
              const sockets: Socket[] = [];
              try {
                for (const state of states) {
                  // A plain server has no TLS handshake to finish: its 'tls-silent' is 'silent'.
                  sockets.push(
                    await open(
                      server.port,
                      server.tls || state !== 'tls-silent' ? state : 'silent',
                      server.tls,
                    ),
                  );
                }
                const ended = sockets.map(
                  (socket) =>
                    new Promise<void>((resolve) => {
                      if (socket.destroyed) resolve();
                      else socket.once('close', () => resolve());
                    }),
                );
                await withinBound(`close() with connections ${states.join(', ')}`, server.close());
                await withinBound(`the clients' end (${states.join(', ')})`, Promise.all(ended));
                // And it listens no more.
                const late = connectTcp(server.port, '127.0.0.1');
                const refused = await new Promise<string>((resolve) => {
                  late.once('connect', () => resolve('connected'));
                  late.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
                });
                late.destroy();
                expect(refused).toBe('ECONNREFUSED');
              } finally {
                for (const socket of sockets) socket.destroy();
                await server.close();
              }
            },
          ),
          { numRuns: 12 },
        );
      },
      120_000,
    );
  }
});
