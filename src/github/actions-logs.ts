/**
 * Actions logs. GitHub answers `GET …/actions/jobs/{id}/logs` and `…/actions/runs/{id}/logs` with
 * a 302 to a signed download URL (a plain-text job log, a zip of a run's logs); the emulator's
 * download URLs are its own, on its origin, under `/actions-results/`, signed with an HMAC of the
 * path (no token needed, as GitHub's are not; a URL changed by hand is refused 403). They are not
 * API calls: the rate limit does not count them and the trace does not record them, as GitHub's
 * downloads are not API calls either; the 302s are.
 *
 * A log is derived from the check run, so it is deterministic: one file per step (`Set up job`,
 * `Run <name>`, `Complete job`, actions.ts), the check step saying its conclusion and, for a
 * check that did not succeed, an `##[error]` line with its output's title and summary. A job log
 * is at most MAX_JOB_LOG_CHARS (the check run's output is cut to fit).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import {
  jobSteps,
  latestAttempt,
  type WorkflowRunView,
  workflowRunById,
  workflowRunOfJob,
} from './actions.ts';
import type { CheckRun, GitHubState, Repo } from './state.ts';

/** The emulator's bound on one job's log text (the check run's output is cut to fit). */
export const MAX_JOB_LOG_CHARS = 256 * 1024;
const PREFIX = '/actions-results/';

/** `2026-01-01T00:00:00.0000000Z`: GitHub's log timestamps. */
function stamp(state: GitHubState, t: number): string {
  return state.time.iso(t).replace(/(\.\d{3})?Z$/, (_, ms: string | undefined) => `${ms ?? '.000'}0000Z`);
}

/** Each step's log lines of a job, by step number. */
export function jobStepLogs(
  state: GitHubState,
  repo: Repo,
  view: WorkflowRunView,
  job: CheckRun,
): Map<number, string> {
  const logs = new Map<number, string>();
  const t0 = stamp(state, job.startedAt);
  const t1 = job.completedAt === null ? t0 : stamp(state, job.completedAt);
  const lines = (at: string, texts: string[]) => texts.map((text) => `${at} ${text}\n`).join('');
  for (const step of jobSteps(job)) {
    if (step.number === 1)
      logs.set(
        1,
        lines(t0, [
          `Current runner version: 'fleetbench'`,
          `Job: ${job.name} (attempt ${job.attempt ?? 1} of workflow run ${view.run.id})`,
          `Repository: ${repo.fullName}`,
          `Head: ${job.headSha} (${view.branch})`,
        ]),
      );
    else if (step.number === 2) {
      const output = [job.output.title, job.output.summary, job.output.text]
        .filter((part): part is string => typeof part === 'string' && part !== '')
        .join('\n');
      const room = MAX_JOB_LOG_CHARS - 4_096;
      const shown =
        output.length > room
          ? `${output.slice(0, room)}\n[log truncated at ${MAX_JOB_LOG_CHARS} characters]`
          : output;
      const body = [`##[group]Run ${job.name}`, `##[endgroup]`, ...(shown === '' ? [] : shown.split('\n'))];
      const end =
        step.status !== 'completed'
          ? []
          : job.conclusion === 'success' || job.conclusion === 'neutral' || job.conclusion === 'skipped'
            ? [`${job.name}: ${job.conclusion}`]
            : [
                `##[error]${job.name}: ${job.conclusion}${job.output.title ? `: ${job.output.title}` : ''}${
                  job.output.summary ? ` (${job.output.summary.split('\n')[0]!.slice(0, 1_000)})` : ''
                }`,
                job.conclusion === 'cancelled'
                  ? '##[error]The operation was canceled.'
                  : '##[error]Process completed with exit code 1.',
              ];
      logs.set(2, lines(t0, body) + lines(t1, end));
    } else if (step.status === 'completed')
      logs.set(
        step.number,
        lines(t1, ['Cleaning up orphan processes', `Job ${job.name} completed: ${job.conclusion}`]),
      );
  }
  return logs;
}

/** A job's whole log: its steps' logs in order. */
export function jobLog(state: GitHubState, repo: Repo, view: WorkflowRunView, job: CheckRun): string {
  return [...jobStepLogs(state, repo, view, job).values()].join('');
}

/**
 * A run's logs as GitHub zips them: `<n>_<job>.txt` for each job's whole log and
 * `<job>/<step>_<step name>.txt` for each step's (what `gh run view --log` reads).
 */
export function runLogsZip(state: GitHubState, repo: Repo, view: WorkflowRunView): Buffer {
  const job = latestAttempt(view);
  const dir = job.name.replaceAll('/', '');
  const files: [string, string][] = [[`0_${dir}.txt`, jobLog(state, repo, view, job)]];
  const steps = jobSteps(job);
  for (const [number, text] of jobStepLogs(state, repo, view, job)) {
    const step = steps.find((s) => s.number === number)!;
    files.push([`${dir}/${number}_${step.name.replaceAll('/', '')}.txt`, text]);
  }
  return zip(files);
}

/** The signed download URL of a job's log or a run's logs. */
export function logDownloadUrl(
  state: GitHubState,
  repo: Repo,
  what: `jobs/${number}.txt` | `runs/${number}/${number}.zip`,
) {
  const path = `${PREFIX}${repo.fullName}/${what}`;
  return `${new URL(state.apiUrl).origin}${path}?sig=${sign(state, path)}`;
}

function sign(state: GitHubState, path: string): string {
  return createHmac('sha256', state.workflows.logKey).update(path).digest('hex');
}

export function isActionsLogPath(url: string): boolean {
  return url.startsWith(PREFIX);
}

/** Serves a download URL made by `logDownloadUrl`: 403 for a bad signature, 404 for what is gone. */
export function serveActionsLog(
  state: GitHubState,
  req: IncomingMessage | Http2ServerRequest,
  res: ServerResponse | Http2ServerResponse,
): void {
  const { status, type, body } = download(state, req.url ?? '/');
  res.writeHead(status, { 'content-type': type, 'content-length': String(Buffer.byteLength(body)) });
  if (req.method === 'HEAD') res.end();
  else res.end(body);
}

const TEXT = 'text/plain; charset=utf-8';
const NOT_FOUND = { status: 404, type: TEXT, body: 'Not Found\n' };

function download(state: GitHubState, path: string): { status: number; type: string; body: string | Buffer } {
  const url = new URL(path, 'http://x');
  const given = Buffer.from(url.searchParams.get('sig') ?? '');
  const wanted = Buffer.from(sign(state, url.pathname));
  if (given.length !== wanted.length || !timingSafeEqual(given, wanted))
    return { status: 403, type: TEXT, body: 'Server failed to authenticate the request.\n' };
  const match = /^\/actions-results\/([^/]+)\/([^/]+)\/(?:jobs\/(\d+)\.txt|runs\/(\d+)\/(\d+)\.zip)$/.exec(
    url.pathname,
  );
  const repo = match === null ? undefined : state.findRepo(match[1]!, match[2]!);
  if (match === null || repo === undefined) return NOT_FOUND;
  if (match[3] !== undefined) {
    const id = Number(match[3]);
    const view = workflowRunOfJob(state, repo, id);
    const job = view?.attempts.find((attempt) => attempt.id === id);
    if (view === undefined || job === undefined) return NOT_FOUND;
    return { status: 200, type: TEXT, body: jobLog(state, repo, view, job) };
  }
  const view = workflowRunById(repo, Number(match[4]));
  const attempts = Number(match[5]);
  if (view === undefined || attempts < 1 || attempts > view.attempts.length) return NOT_FOUND;
  const upTo = { ...view, attempts: view.attempts.slice(0, attempts) };
  return { status: 200, type: 'application/zip', body: runLogsZip(state, repo, upTo) };
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** 1980-01-01, the first date a zip can say: the files' dates do not vary with the run. */
const DOS_DATE = (1 << 5) | 1;

/** A zip of text files, stored (no compression): what any unzip, and Go's archive/zip, reads. */
export function zip(files: readonly [string, string][]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of files) {
    const nameBytes = Buffer.from(name, 'utf8');
    const data = Buffer.from(text, 'utf8');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(DOS_DATE, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(DOS_DATE, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + data.length;
  }
  const size = centrals.reduce((sum, b) => sum + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(size, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}
