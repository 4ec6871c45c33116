/**
 * Progress of a matrix on stderr: cells done, running and left. A cli-progress bar on a
 * terminal; plain lines otherwise (CI logs, pipes), one per finished run.
 */
import cliProgress from 'cli-progress';
import type { CommandIo } from './output.ts';

export interface MatrixProgress {
  /** The number of runs is known once the selection is expanded. */
  plan(total: number): void;
  started(running: number): void;
  done(key: string, wallMs: number, running: number): void;
  stop(): void;
}

export function createMatrixProgress(label: string, io: CommandIo): MatrixProgress {
  const stream = io.stderr;
  if (io.quiet) return { plan() {}, started() {}, done() {}, stop() {} };
  let total = 0;
  let finished = 0;
  let bar: cliProgress.SingleBar | undefined;
  const payload = (running: number) => ({ running, left: Math.max(0, total - finished - running) });
  return {
    plan(n) {
      total = n;
      if (stream.isTTY) {
        bar = new cliProgress.SingleBar(
          {
            // A terminal is the process's own stderr, a real tty stream.
            stream: stream as NodeJS.WriteStream,
            format: `${label} [{bar}] {value}/{total} done · {running} running · {left} left · {duration_formatted}`,
            hideCursor: true,
            barsize: 30,
            fps: 10,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total, 0, payload(0));
      } else {
        stream.write(`fleetbench ${label}: ${total} run${total === 1 ? '' : 's'} to do\n`);
      }
    },
    started(running) {
      bar?.update(finished, payload(running));
    },
    done(key, wallMs, running) {
      finished++;
      if (bar) bar.update(finished, payload(running));
      else {
        const p = payload(running);
        stream.write(
          `fleetbench ${label}: ${key} done in ${(wallMs / 1000).toFixed(2)} s (${finished}/${total} done, ${p.running} running, ${p.left} left)\n`,
        );
      }
    },
    stop() {
      bar?.stop();
      bar = undefined;
    },
  };
}

/** `model learn` on a long trace: a bar over each trace's bytes on a terminal; nothing elsewhere. */
export interface LearnProgressBar {
  read(file: string, bytesRead: number, bytesTotal: number): void;
  stop(): void;
}

/** Traces shorter than this are read in a moment: no bar. */
export const LEARN_PROGRESS_MIN_BYTES = 8 * 1024 * 1024;

export function createLearnProgress(io: CommandIo): LearnProgressBar {
  const stream = io.stderr;
  if (io.quiet || !stream.isTTY) return { read() {}, stop() {} };
  let bar: cliProgress.SingleBar | undefined;
  let current: string | undefined;
  return {
    read(file, bytesRead, bytesTotal) {
      if (bytesTotal < LEARN_PROGRESS_MIN_BYTES) return;
      const mb = (n: number) => (n / 1024 / 1024).toFixed(0);
      if (file !== current) {
        bar?.stop();
        current = file;
        bar = new cliProgress.SingleBar(
          {
            stream: stream as NodeJS.WriteStream,
            format: `model learn ${file} [{bar}] {percentage}% · {read}/{size} MB · {duration_formatted}`,
            hideCursor: true,
            barsize: 30,
            fps: 5,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(bytesTotal, 0, { read: '0', size: mb(bytesTotal) });
      }
      bar?.update(bytesRead, { read: mb(bytesRead), size: mb(bytesTotal) });
    },
    stop() {
      bar?.stop();
      bar = undefined;
    },
  };
}
