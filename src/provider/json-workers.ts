/**
 * Large request bodies parsed off the main thread. `JSON.parse` of a body near the 16 MiB limit
 * takes 90-500 ms, during which the server answers nobody (docs/performance.md, "One hostile
 * request's hold on the event loop"). Handing the parsed value back whole would not help:
 * rebuilding it from the structured clone costs the main thread as much as parsing it. So a
 * worker parses the body and cuts the value into pieces of about `PIECE_CHARS` of JSON (a small
 * subtree whole; a larger object or array as an empty one, then its members in batches), and the
 * main thread rebuilds it a few pieces at a time, letting the event loop run between them.
 *
 * Given `keep` (the server gives the fields the emulator reads, REQUEST_FIELDS), the worker hands
 * over only those fields of a body that is an object, and of any other body only its type (an
 * empty array or string; the emulator refuses it for its type alone). A field no reader reads is
 * never rebuilt on the main thread: 15 MiB of small objects in one cost the main thread seconds
 * of rebuilding and collections of up to 200 ms (docs/performance.md).
 *
 * At most `PROVIDER_LIMITS.jsonWorkers` workers, started on the first large body, each parsing
 * one body at a time; `close()` ends them. A body that is not JSON gets the parser's own message,
 * the same one `JSON.parse` gives on the main thread, so its 400 is the same.
 */
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { PROVIDER_LIMITS } from '../base/limits.ts';
import type { ParsedBody } from './types.ts';

/** JSON characters in one piece: rebuilding one costs the main thread a few milliseconds. */
const PIECE_CHARS = 256 * 1024;
/** Below this depth a large container is cut; deeper, it is sent whole (no body is that deep). */
const MAX_CUT_DEPTH = 64;

/**
 * The worker, as plain JavaScript run with `eval` (it needs nothing but JSON.parse, so nothing to
 * bundle). A piece is `[path, op, value]`: op 0 makes `value` the root, 1 appends `value`'s items
 * to the array at `path`, 2 defines `value`'s [key, value] pairs on the object at `path`.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const PIECE_CHARS = workerData.pieceChars;
const MAX_CUT_DEPTH = ${MAX_CUT_DEPTH};
const KEEP = workerData.keep === undefined ? undefined : new Set(workerData.keep);
// What is handed over of a parsed body: all of it, or only the fields in KEEP.
function kept(value) {
  if (KEEP === undefined) return value;
  if (Array.isArray(value)) return [];
  if (typeof value === 'string') return '';
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const key in value) if (KEEP.has(key)) out[key] = value[key];
  return out;
}
// The JSON size of a value, counted no further than past limit (or depth): enough to know
// whether it fits in a piece, at a cost bounded by the piece's size.
function sizeUpTo(value, limit, depth) {
  if (typeof value === 'string') return value.length + 2;
  if (value === null || typeof value !== 'object') return 8;
  if (depth > MAX_CUT_DEPTH) return Infinity;
  let size = 2;
  if (Array.isArray(value)) {
    for (const item of value) {
      size += 1 + sizeUpTo(item, limit - size, depth + 1);
      if (size > limit) return size;
    }
  } else {
    for (const key in value) {
      size += key.length + 4 + sizeUpTo(value[key], limit - size, depth + 1);
      if (size > limit) return size;
    }
  }
  return size;
}
function cut(value, path, depth, out) {
  const isArray = Array.isArray(value);
  let batch = [];
  let batchSize = 0;
  const flush = () => {
    if (batch.length > 0) out.push([path, isArray ? 1 : 2, batch]);
    batch = [];
    batchSize = 0;
  };
  const member = (key, item) => {
    const size = sizeUpTo(item, PIECE_CHARS, 0);
    if (size <= PIECE_CHARS || item === null || typeof item !== 'object' || depth >= MAX_CUT_DEPTH) {
      if (batchSize + size > PIECE_CHARS) flush();
      batch.push(isArray ? item : [key, item]);
      batchSize += size;
      return;
    }
    batch.push(isArray ? (Array.isArray(item) ? [] : {}) : [key, Array.isArray(item) ? [] : {}]);
    flush();
    cut(item, [...path, key], depth + 1, out);
  };
  if (isArray) for (let i = 0; i < value.length; i++) member(i, value[i]);
  else for (const key in value) member(key, value[key]);
  flush();
}
parentPort.on('message', ({ chunks, port }) => {
  let value;
  try {
    value = kept(JSON.parse(Buffer.concat(chunks).toString('utf8')));
  } catch (error) {
    port.postMessage([[], -1, error.message]);
    port.close();
    parentPort.postMessage(1);
    return;
  }
  const pieces = [];
  if (value === null || typeof value !== 'object' || sizeUpTo(value, PIECE_CHARS, 0) <= PIECE_CHARS)
    pieces.push([[], 0, value]);
  else {
    pieces.push([[], 0, Array.isArray(value) ? [] : {}]);
    cut(value, [], 0, pieces);
  }
  value = undefined;
  for (const piece of pieces) port.postMessage(piece);
  port.close();
  parentPort.postMessage(pieces.length);
});
`;

type Piece = [path: Array<string | number>, op: -1 | 0 | 1 | 2, value: unknown];

/** Applies one piece to the value being rebuilt; returns the root. */
function apply(root: unknown, [path, op, value]: Piece): unknown {
  if (op === 0) return value;
  let target = root as Record<string | number, unknown>;
  for (const step of path) target = target[step] as Record<string | number, unknown>;
  if (op === 1) for (const item of value as unknown[]) (target as unknown as unknown[]).push(item);
  // Defined, not assigned: a `__proto__` key stays a key, as JSON.parse leaves it.
  else
    for (const [key, item] of value as Array<[string, unknown]>)
      Object.defineProperty(target, key, {
        value: item,
        writable: true,
        enumerable: true,
        configurable: true,
      });
  return root;
}

interface Job {
  chunks: readonly Uint8Array[];
  resolve(parsed: ParsedBody): void;
  reject(error: Error): void;
}

export interface JsonWorkers {
  /**
   * `chunks` (UTF-8 JSON, in pieces as read; taken: their memory moves to the worker, where they
   * are joined: joining 16 MiB here held the loop for 50 ms) parsed as `JSON.parse` would (only
   * the fields in `keep`, if given), rebuilt on this thread in steps given to `runStep` (each
   * runs one slice of the event loop).
   */
  parse(chunks: readonly Uint8Array[], runStep: (step: () => void) => void): Promise<ParsedBody>;
  close(): Promise<void>;
}

export interface JsonWorkersOptions {
  /** Workers at most (default PROVIDER_LIMITS.jsonWorkers.workers). */
  workers?: number;
  /** Smaller pieces only to test the cutting on small bodies. */
  pieceChars?: number;
  /** The only fields of an object body handed over (default: the whole value). */
  keep?: readonly string[];
}

export function jsonWorkers({
  workers: size = PROVIDER_LIMITS.jsonWorkers.workers,
  pieceChars = PIECE_CHARS,
  keep,
}: JsonWorkersOptions = {}): JsonWorkers {
  const idle: Worker[] = [];
  const all = new Set<Worker>();
  const queue: Array<{ job: Job; runStep: (step: () => void) => void }> = [];
  let closed = false;

  const start = (): Worker => {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { pieceChars, keep } });
    // A served emulator exits when its server closes, parse or no parse.
    worker.unref();
    all.add(worker);
    worker.on('exit', () => {
      all.delete(worker);
      const at = idle.indexOf(worker);
      if (at >= 0) idle.splice(at, 1);
    });
    return worker;
  };

  const run = (worker: Worker, job: Job, runStep: (step: () => void) => void) => {
    const { port1, port2 } = new MessageChannel();
    const fail = (error: Error) => {
      worker.off('message', onDone);
      port1.close();
      all.delete(worker);
      job.reject(error);
      next();
    };
    const onError = (error: Error) => fail(error);
    const onExit = () => fail(new Error('the JSON worker stopped'));
    const onDone = () => {
      worker.off('error', onError);
      worker.off('exit', onExit);
      rebuild(port1, runStep).then(job.resolve, job.reject);
      idle.push(worker);
      next();
    };
    worker.once('message', onDone);
    worker.once('error', onError);
    worker.once('exit', onExit);
    // A chunk that is all of its memory moves to the worker; one sharing it (a socket's first
    // read, with the headers) is copied.
    const moved = new Set<ArrayBuffer>();
    const chunks = job.chunks.map((chunk) => {
      const own =
        chunk.byteOffset === 0 &&
        chunk.byteLength === chunk.buffer.byteLength &&
        chunk.buffer instanceof ArrayBuffer &&
        !moved.has(chunk.buffer);
      const sent = own ? chunk : chunk.slice();
      moved.add(sent.buffer as ArrayBuffer);
      return sent;
    });
    worker.postMessage({ chunks, port: port2 }, [...moved, port2]);
  };

  const next = () => {
    if (closed || queue.length === 0) return;
    const worker = idle.pop() ?? (all.size < size ? start() : undefined);
    if (!worker) return;
    const { job, runStep } = queue.shift() as (typeof queue)[number];
    run(worker, job, runStep);
  };

  return {
    parse: (chunks, runStep) =>
      new Promise<ParsedBody>((resolve, reject) => {
        if (closed) {
          reject(new Error('the JSON workers are closed'));
          return;
        }
        queue.push({ job: { chunks, resolve, reject }, runStep });
        next();
      }),
    close: async () => {
      closed = true;
      for (const { job } of queue.splice(0)) job.reject(new Error('the JSON workers are closed'));
      const workers = [...all];
      all.clear();
      idle.length = 0;
      await Promise.all(workers.map((worker) => worker.terminate()));
    },
  };
}

/** Reads the pieces a worker left on `port`, one step at a time. */
function rebuild(port: MessagePort, runStep: (step: () => void) => void): Promise<ParsedBody> {
  return new Promise((resolve, reject) => {
    let root: unknown;
    const step = () => {
      try {
        const received = receiveMessageOnPort(port);
        if (received === undefined) {
          port.close();
          resolve({ ok: true, value: root });
          return;
        }
        const piece = received.message as Piece;
        if (piece[1] === -1) {
          port.close();
          resolve({ ok: false, message: piece[2] as string });
          return;
        }
        root = apply(root, piece);
        runStep(step);
      } catch (error) {
        port.close();
        reject(error as Error);
      }
    };
    runStep(step);
  });
}
