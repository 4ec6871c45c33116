/**
 * Entry of a control-plane child of the supervisor: `reference-worker.js --state DIR
 * [--recover KIND] [--github URL --token T]`. Talks to its supervisor over the IPC channel:
 * sends `listening`, every event, and answers `barrier`s; obeys `drain` (graceful or hot
 * restart: `{type: 'drain', kind}`).
 * Without a supervisor (no IPC channel) it prints events as NDJSON on stdout, which makes it
 * usable alone for debugging.
 */
import { parseArgs } from 'node:util';
import type { TargetEvent } from '../contract/protocol.ts';
import { startReferenceServer } from './server.ts';

const { values } = parseArgs({
  options: {
    state: { type: 'string' },
    recover: { type: 'string' },
    github: { type: 'string' },
    token: { type: 'string' },
    port: { type: 'string', default: '0' },
  },
});
if (!values.state) {
  process.stderr.write('reference worker: --state DIR is required\n');
  process.exit(2);
}

const supervised = typeof process.send === 'function';
const emit = (event: TargetEvent) => {
  if (supervised) process.send!({ type: 'event', event });
  else process.stdout.write(`${JSON.stringify(event)}\n`);
};
const log = (line: string) => {
  if (supervised) process.send!({ type: 'log', line });
  else process.stderr.write(`${line}\n`);
};

let server: Awaited<ReturnType<typeof startReferenceServer>>;
try {
  server = await startReferenceServer({
    stateDir: values.state,
    port: Number(values.port),
    github: values.github && values.token ? { url: values.github, token: values.token } : undefined,
    recover: values.recover,
    emit,
    log,
  });
} catch (error) {
  // Said in one line (the supervisor reports the failed start); no stack for a state it cannot read.
  process.stderr.write(
    `reference control plane: cannot start: ${(error as Error)?.message ?? String(error)}\n`,
  );
  process.exit(1);
}

if (supervised) {
  process.send!({ type: 'listening', port: server.port, pid: process.pid });
  process.on('message', (message: { type?: string; id?: number; kind?: 'graceful' | 'hot' }) => {
    if (message.type === 'barrier') process.send!({ type: 'barrier', id: message.id });
    else if (message.type === 'drain') {
      void server.drain(message.kind === 'hot' ? 'hot' : 'graceful').then(async () => {
        await server.close();
        // Exit once every event sent so far has left over the IPC channel.
        process.send!({ type: 'drained', pid: process.pid }, () => process.exit(0));
      });
    }
  });
  // The supervisor went away: nothing would ever stop this process otherwise.
  process.on('disconnect', () => {
    void server.close().then(() => process.exit(0));
  });
} else {
  process.stderr.write(`reference control plane listening on http://127.0.0.1:${server.port}\n`);
}
const stop = () => {
  void server.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
