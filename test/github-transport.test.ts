/**
 * HttpTransport's lean HTTP/1.1 client (src/github/http1.ts) against real servers on loopback:
 * a raw TCP server that frames answers the ways HTTP/1.1 allows (Content-Length, chunked, close,
 * interim 100, split across writes), keep-alive reuse and its stale-socket race, the socket
 * limit, timeouts, and the emulator itself.
 */
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer, type Server, type Socket } from 'node:net';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator, startGitHubServer } from '../src/github/index.ts';
import { HttpTransport } from '../src/github/transport.ts';

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A TCP server that answers each request (once its head arrived) with `answer(head, socket)`. */
async function rawServer(answer: (head: string, socket: Socket, index: number) => void) {
  const sockets = new Set<Socket>();
  let connections = 0;
  let requests = 0;
  const server: Server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buffered = '';
    socket.on('data', (d) => {
      buffered += d.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const request = buffered.slice(0, end + 4 + length);
        buffered = buffered.slice(end + 4 + length);
        answer(request, socket, requests++);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${port}`, connections: () => connections, requests: () => requests };
}

function transport(url: string, options: ConstructorParameters<typeof HttpTransport>[1] = {}) {
  const t = new HttpTransport(url, options);
  closers.push(() => t.close());
  return t;
}

describe('HttpTransport over plain HTTP (lean HTTP/1.1 client)', () => {
  it('frames Content-Length and chunked bodies split across writes, skips 100, reads 304 without a body', async () => {
    const body = JSON.stringify({ text: 'héllo ✓ wörld', n: 1 });
    const bytes = Buffer.from(body);
    const server = await rawServer((head, socket, i) => {
      if (i === 0) {
        // Content-Length, the body split inside a multi-byte character.
        socket.write(
          `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Twice: a\r\nX-Twice: b\r\nContent-Length: ${bytes.length}\r\n\r\n`,
        );
        socket.write(bytes.subarray(0, 5));
        setTimeout(() => socket.write(bytes.subarray(5)), 20);
      } else if (i === 1) {
        // Chunked, with an interim 100 first and the chunks in separate writes.
        socket.write(
          'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n',
        );
        socket.write(`${bytes.subarray(0, 7).length.toString(16)}\r\n`);
        socket.write(Buffer.concat([bytes.subarray(0, 7), Buffer.from('\r\n')]));
        setTimeout(() => {
          socket.write(`${(bytes.length - 7).toString(16)};ext=1\r\n`);
          socket.write(Buffer.concat([bytes.subarray(7), Buffer.from('\r\n0\r\n\r\n')]));
        }, 20);
      } else {
        expect(head).toMatch(/if-none-match: W\/"abc"/);
        socket.write('HTTP/1.1 304 Not Modified\r\nETag: W/"abc"\r\nContent-Length: 0\r\n\r\n');
      }
    });
    const t = transport(server.url, { token: 'tok' });
    const first = await t.request({ method: 'GET', path: '/a', headers: {} });
    expect(first).toEqual({
      status: 200,
      headers: {
        'content-type': 'application/json',
        'x-twice': 'a, b',
        'content-length': String(bytes.length),
      },
      body,
    });
    const second = await t.request({ method: 'GET', path: '/b', headers: {} });
    expect(second.status).toBe(201);
    expect(second.body).toBe(body);
    const third = await t.request({ method: 'GET', path: '/c', headers: { 'if-none-match': 'W/"abc"' } });
    expect(third).toEqual({ status: 304, headers: { etag: 'W/"abc"', 'content-length': '0' }, body: '' });
    // One keep-alive connection served all three.
    expect(server.connections()).toBe(1);
  });

  it('sends the token, default headers and a UTF-8 body with its byte length', async () => {
    const server = await rawServer((head, socket) => {
      const echo = Buffer.from(head, 'latin1').toString('utf8');
      const out = Buffer.from(echo);
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${out.length}\r\n\r\n`);
      socket.write(out);
    });
    const t = transport(`${server.url}/api/v3`, { token: 'tok', headers: { 'x-fleetbench-session': 's1' } });
    const res = await t.request({
      method: 'POST',
      path: '/repos/o/r/issues',
      headers: {},
      body: '{"title":"ünï"}',
    });
    expect(res.body).toMatch(/^POST \/api\/v3\/repos\/o\/r\/issues HTTP\/1\.1\r\n/);
    expect(res.body).toContain('authorization: token tok\r\n');
    expect(res.body).toContain('x-fleetbench-session: s1\r\n');
    expect(res.body).toContain('content-type: application/json\r\n');
    expect(res.body).toContain(`content-length: ${Buffer.byteLength('{"title":"ünï"}')}\r\n`);
    expect(res.body.endsWith('\r\n\r\n{"title":"ünï"}')).toBe(true);
    await expect(
      t.request({ method: 'GET', path: '/x', headers: { 'x-bad': 'a\r\nx-injected: 1' } }),
    ).rejects.toThrow(/invalid character/);
  });

  it('reads a body framed by the close, honours connection: close, and resends a GET on a stale keep-alive socket', async () => {
    const server = await rawServer((_head, socket, i) => {
      if (i === 0) socket.end('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close');
      else if (i === 1) {
        // Answers, then drops the idle connection as a server's keep-alive timeout would.
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
        setTimeout(() => socket.destroy(), 10);
      } else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain');
    });
    const t = transport(server.url);
    expect((await t.request({ method: 'GET', path: '/1', headers: {} })).body).toBe('until close');
    expect((await t.request({ method: 'GET', path: '/2', headers: {} })).body).toBe('ok');
    await new Promise((r) => setTimeout(r, 50));
    expect((await t.request({ method: 'GET', path: '/3', headers: {} })).body).toBe('again');
    expect(server.connections()).toBe(3);
  });

  it('keeps to maxSockets, queues the rest, and times out a request nobody answers', async () => {
    const server = await rawServer((head, socket) => {
      if (head.startsWith('GET /never')) return;
      setTimeout(() => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx'), 10);
    });
    // Queued requests count their wait against the timeout: on a loaded machine 300 ms does
    // not cover four rounds, so the queueing is checked with a timeout no load reaches.
    const t = transport(server.url, { maxSockets: 2, timeoutMs: 30_000 });
    const answers = await Promise.all(
      Array.from({ length: 7 }, (_, i) => t.request({ method: 'GET', path: `/${i}`, headers: {} })),
    );
    expect(answers.map((a) => a.body).join('')).toBe('xxxxxxx');
    expect(server.connections()).toBe(2);
    const impatient = transport(server.url, { timeoutMs: 300 });
    await expect(impatient.request({ method: 'GET', path: '/never', headers: {} })).rejects.toThrow(
      /timeout after 300 ms/,
    );
  });

  it('fails cleanly when nothing listens', async () => {
    const probe = createHttpServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const t = transport(`http://127.0.0.1:${port}`);
    await expect(t.request({ method: 'GET', path: '/', headers: {} })).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
  });

  it('gets the emulator’s ETag, then a 304 that is recorded and free', async () => {
    const clock = new RealClock();
    const emulator = new GitHubEmulator({
      clock,
      rng: new Rng(1),
      latency: false,
      fixtures: { repos: 1, issuesPerRepo: 4, pullsPerRepo: 3 },
    });
    const server = await startGitHubServer({ emulator });
    closers.push(() => server.close());
    const t = transport(server.url, { token: emulator.defaultToken });
    const path = '/repos/fleetbench/repo-1/pulls?state=open&per_page=1';
    const first = await t.request({ method: 'GET', path, headers: {} });
    expect(first.status).toBe(200);
    expect(JSON.parse(first.body)).toHaveLength(1);
    const again = await t.request({ method: 'GET', path, headers: { 'if-none-match': first.headers.etag } });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers['x-ratelimit-used']).toBe(first.headers['x-ratelimit-used']);
    expect(again.headers['content-type']).toBeUndefined();
    expect(emulator.stats().notModified).toBe(1);
  });
});

describe('HttpTransport: pipelining, the shared read buffer, headers read on demand', () => {
  it('sends GETs started together on one connection in one write and matches answers split anywhere to them in order', async () => {
    const arrivals: number[] = [];
    const queued = new Map<Socket, Promise<void>>();
    const server = await rawServer((head, socket, i) => {
      arrivals.push(i);
      const path = head.slice(4, head.indexOf(' ', 4));
      const body = `answer to ${path} ✓`;
      const answer = Buffer.from(
        `HTTP/1.1 200 OK\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Path: ${path}\r\n\r\n${body}`,
      );
      // Every answer in three writes, cut inside the head and inside a multi-byte character,
      // the last one later; answers stay in order on the connection, as a server keeps them.
      const previous = queued.get(socket) ?? Promise.resolve();
      queued.set(
        socket,
        previous.then(async () => {
          socket.write(answer.subarray(0, 10));
          socket.write(answer.subarray(10, answer.length - 2));
          await new Promise((resolve) => setTimeout(resolve, 5));
          socket.write(answer.subarray(answer.length - 2));
        }),
      );
    });
    const t = transport(server.url, { pipelining: 4 });
    const paths = Array.from({ length: 10 }, (_, i) => `/p${i}`);
    const answers = await Promise.all(paths.map((path) => t.request({ method: 'GET', path, headers: {} })));
    expect(answers.map((a) => a.body)).toEqual(paths.map((path) => `answer to ${path} ✓`));
    expect(answers.map((a) => a.headers['x-path'])).toEqual(paths);
    // Ten GETs at a depth of four: three connections (4 + 4 + 2), each batch written at once.
    expect(server.connections()).toBe(3);
    expect(arrivals).toHaveLength(10);
  });

  it('never pipelines a request with a body, and keeps one request per connection by default', async () => {
    const server = await rawServer((head, socket) => {
      const line = head.slice(0, head.indexOf('\r\n'));
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${line.length}\r\n\r\n${line}`);
    });
    const t = transport(server.url, { pipelining: 8 });
    const answers = await Promise.all([
      t.request({ method: 'GET', path: '/a', headers: {} }),
      t.request({ method: 'POST', path: '/b', headers: {}, body: '{}' }),
      t.request({ method: 'GET', path: '/c', headers: {} }),
    ]);
    expect(answers.map((a) => a.body)).toEqual(['GET /a HTTP/1.1', 'POST /b HTTP/1.1', 'GET /c HTTP/1.1']);
    // The two GETs share one connection, the POST has its own.
    expect(server.connections()).toBe(2);
    const plain = await rawServer((_head, socket) =>
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx'),
    );
    const unpipelined = transport(plain.url);
    await Promise.all([1, 2, 3].map(() => unpipelined.request({ method: 'GET', path: '/', headers: {} })));
    expect(plain.connections()).toBe(3);
  });

  it('resends what was pipelined behind an answer that closes the connection, and stops pipelining', async () => {
    const server = await rawServer((head, socket) => {
      const path = head.slice(4, head.indexOf(' ', 4));
      // An HTTP/1.0-style server: one answer per connection, whatever was sent behind it.
      if (!socket.destroyed)
        socket.end(`HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: ${path.length}\r\n\r\n${path}`);
      socket.destroy();
    });
    const t = transport(server.url, { pipelining: 4 });
    const paths = ['/1', '/2', '/3', '/4'];
    const answers = await Promise.all(paths.map((path) => t.request({ method: 'GET', path, headers: {} })));
    expect(answers.map((a) => a.body)).toEqual(paths);
    // One connection for the batch, then one for each request it could not answer.
    expect(server.connections()).toBe(4);
    const again = await Promise.all(paths.map((path) => t.request({ method: 'GET', path, headers: {} })));
    expect(again.map((a) => a.body)).toEqual(paths);
    expect(server.connections()).toBe(8);
  });

  it('times out a pipelined batch nobody answers, and the pool goes on working', async () => {
    const blocked = new Set<Socket>();
    const server = await rawServer((head, socket) => {
      // A request the server never gets to: nothing after it on that connection is answered.
      if (head.startsWith('GET /never')) blocked.add(socket);
      if (!blocked.has(socket)) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    });
    const t = transport(server.url, { pipelining: 4, timeoutMs: 300 });
    const stuck = [
      t.request({ method: 'GET', path: '/never', headers: {} }),
      t.request({ method: 'GET', path: '/behind', headers: {} }),
    ];
    for (const request of stuck) await expect(request).rejects.toThrow(/timeout after 300 ms/);
    expect((await t.request({ method: 'GET', path: '/later', headers: {} })).body).toBe('ok');
  });

  it('times out the requests of many clients on one shared sweep, one closing leaves the others timed', async () => {
    const server = await rawServer(() => undefined);
    const clients = Array.from({ length: 20 }, () => transport(server.url, { timeoutMs: 300 }));
    const requests = clients.map((t, i) => t.request({ method: 'GET', path: `/${i}`, headers: {} }));
    clients[0]!.close();
    await expect(requests[0]).rejects.toThrow(/transport closed/);
    for (const request of requests.slice(1)) await expect(request).rejects.toThrow(/timeout after 300 ms/);
  });

  it('keeps each connection’s unfinished answer apart while their reads share one buffer', async () => {
    const halves: Array<() => void> = [];
    const server = await rawServer((head, socket) => {
      const path = head.slice(4, head.indexOf(' ', 4));
      const body = `${path.slice(1)}`.repeat(3000);
      const answer = Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      socket.write(answer.subarray(0, 5000));
      halves.push(() => {
        socket.write(answer.subarray(5000));
      });
      // Both first halves are in before either second half is sent.
      if (halves.length === 2)
        setTimeout(() => {
          for (const send of halves.splice(0)) send();
        }, 30);
    });
    const t = transport(server.url);
    const [a, b] = await Promise.all([
      t.request({ method: 'GET', path: '/a', headers: {} }),
      t.request({ method: 'GET', path: '/b', headers: {} }),
    ]);
    expect(a.body).toBe('a'.repeat(3000));
    expect(b.body).toBe('b'.repeat(3000));
    expect(server.connections()).toBe(2);
  });

  it('gives headers that read, spread, list, serialise and print as the plain object they are', async () => {
    const server = await rawServer((_head, socket) =>
      socket.write(
        'HTTP/1.1 200 OK\r\nETag: "e1"\r\nX-Twice: a\r\n  Content-Type : text/plain\r\nX-Twice: b\r\nContent-Length: 2\r\n\r\nok',
      ),
    );
    const t = transport(server.url);
    const expected = { etag: '"e1"', 'x-twice': 'a, b', 'content-type': 'text/plain', 'content-length': '2' };
    const answers = await Promise.all(
      [1, 2, 3, 4, 5].map(() => t.request({ method: 'GET', path: '/', headers: {} })),
    );
    const [first, second, third, fourth, fifth] = answers.map((a) => a.headers);
    expect({ ...first }).toEqual(expected);
    expect(Object.keys(second!)).toEqual(Object.keys(expected));
    expect(JSON.parse(JSON.stringify(third))).toEqual(expected);
    expect(inspect(fourth)).toBe(inspect(expected));
    expect(
      'etag' in fifth! && fifth.etag === '"e1"' && Object.getPrototypeOf(fifth) === Object.prototype,
    ).toBe(true);
    fifth!.added = 'yes';
    expect(fifth).toEqual({ ...expected, added: 'yes' });
  });
});
