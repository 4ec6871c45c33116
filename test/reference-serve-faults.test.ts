/**
 * `reference serve` against hostile requests and hostile state (issue 30): an id that would
 * break a header later is refused at the door, naming the field; a run whose GitHub cannot be
 * reached is refused (502) and leaves nothing behind; a restart that cannot recover its run fails
 * that run (500) and the server takes the next one; a state that keeps killing the control plane
 * is quarantined. In every case the server goes on answering. Real processes (the supervisor and
 * its control-plane child), real sockets, real clocks: a crash loop only shows in real time.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { TargetEvent } from '../src/contract/protocol.ts';
import { startGitHubServer } from '../src/github/http.ts';
import { type RunningSupervisor, startSupervisor } from '../src/reference/supervisor.ts';
import { inProcess } from './helpers/github.ts';
import { scratchDir } from './helpers/tmp.ts';
import { waitUntil } from './helpers/wait.ts';

const dir = scratchDir('fleetbench-serve-faults-');
const closers: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

/** A GitHub emulator served on loopback until the file ends (or until `close`). */
async function github() {
  const { emulator } = inProcess();
  const server = await startGitHubServer({ emulator });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await server.close();
    emulator.close();
  };
  closers.push(close);
  return { url: server.url, token: emulator.defaultToken, close };
}

async function supervisor(name: string): Promise<RunningSupervisor> {
  const running = await startSupervisor({ stateDir: join(dir, name), readyTimeoutMs: 30_000 });
  closers.push(() => running.close());
  return running;
}

const post = (url: string, body: unknown) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/** A run's start request; the time scale makes the 30 s poll interval 1.5 s of real time. */
const runStart = (gh: { url: string; token: string }, over: Record<string, unknown> = {}) => ({
  runId: 'r',
  epochMs: Date.now(),
  timeScale: 20,
  seed: 1,
  scenario: 'hostile',
  github: { url: gh.url, token: gh.token },
  ...over,
});

const session = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  repo: 'fleetbench/repo-1',
  issue: 1,
  branch: `fleet/${id}`,
  ...over,
});

/**
 * The events a supervisor streams (GET /v1/events), collected as they arrive: opened once the
 * run has started (a new run ends the streams of the one before).
 */
function watchEvents(base: string): { events: TargetEvent[]; close(): void } {
  const events: TargetEvent[] = [];
  const req = httpRequest(`${base}/v1/events?since=1`, (res) => {
    let buffer = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line) events.push(JSON.parse(line) as TargetEvent);
        newline = buffer.indexOf('\n');
      }
    });
    res.on('error', () => undefined);
  });
  req.on('error', () => undefined);
  req.end();
  return { events, close: () => req.destroy() };
}

const errorOf = async (res: Response) =>
  ((await res.json()) as { error: { code: string; message: string } }).error;

describe('ids and names are checked at the door', () => {
  it('a NUL, a newline, a megabyte: 400 naming the field; the control plane keeps polling, nothing restarts', async () => {
    const gh = await github();
    const sup = await supervisor('door');
    expect((await post(`${sup.url}/v1/run`, runStart(gh))).status).toBe(200);
    const pid = sup.childPid();

    const refused: Array<[unknown, RegExp]> = [
      [session('s-\u0000x'), /^id: expected letters, digits/],
      [session('x'.repeat(200_000)), /^id: expected at most 128 characters/],
      [session('s-1', { repo: 'fleetbench/repo-1\u0000' }), /^repo: expected owner\/name/],
      [session('s-1', { repo: '../etc' }), /^repo: /],
      [session('s-1', { branch: 'fleet/a\r\nx-evil: 1' }), /^branch: expected letters, digits/],
      [session('s-1', { issue: 1e300 }), /^issue: /],
    ];
    for (const [body, message] of refused) {
      const res = await post(`${sup.url}/v1/sessions`, body);
      expect(res.status).toBe(400);
      const error = await errorOf(res);
      expect(error.code).toBe('bad_request');
      expect(error.message).toMatch(message);
      expect(error.message.length).toBeLessThan(300);
    }
    const runRefused: Array<[unknown, RegExp]> = [
      [runStart(gh, { scenario: 'x\nimmutable: true' }), /^scenario: expected no control characters/],
      [runStart(gh, { runId: 'r'.repeat(10_000) }), /^runId: expected at most 256/],
      [
        runStart(gh, { github: { url: gh.url, token: 'a\u0000b' } }),
        /^github\.token: expected visible ASCII/,
      ],
      [runStart(gh, { github: { url: 'file:///etc/passwd', token: 't' } }), /^github\.url: expected an http/],
      // A segment outside its run would end the shared run for the others (its stop counted).
      [runStart(gh, { segment: { index: 2, count: 2 } }), /^segment\.index: expected index below count/],
      [runStart(gh, { segment: { index: 0, count: 1e9 } }), /^segment\.count: expected at most 1000/],
    ];
    for (const [body, message] of runRefused) {
      // The supervisor streams a new run's events from its start: a refused one changes nothing.
      const res = await post(`${sup.url}/v1/run`, body);
      expect(res.status).toBe(400);
      expect((await errorOf(res)).message).toMatch(message);
    }
    // A malformed escape in a path is the request's fault too, named by the id it spoils.
    const escaped = await fetch(`${sup.url}/v1/sessions/%E0%A4%A`);
    expect(escaped.status).toBe(400);
    expect(await errorOf(escaped)).toEqual({
      code: 'bad_request',
      message: 'session id: malformed percent-encoding in the path',
    });
    const escapedActor = await post(`${sup.url}/v1/actors/%E0%A4%A/park`, { phase: 'p' });
    expect(escapedActor.status).toBe(400);
    expect((await errorOf(escapedActor)).message).toBe('actor id: malformed percent-encoding in the path');
    // A malformed escape in a path no route takes is no route: 404, the path as sent.
    const nowhere = await fetch(`${sup.url}/v1/nowhere/%E0%A4%A`);
    expect(nowhere.status).toBe(404);
    expect((await errorOf(nowhere)).message).toBe('GET /v1/nowhere/%E0%A4%A: no such endpoint');

    // The run refused nothing good: a valid session is created and polled, cycle after cycle.
    expect((await post(`${sup.url}/v1/run`, runStart(gh))).status).toBe(200);
    const watch = watchEvents(sup.url);
    closers.push(watch.close);
    expect((await post(`${sup.url}/v1/sessions`, session('s-0001'))).status).toBe(201);
    // A session's paths look the session up first: an unknown one is quoted as sent, a method
    // its path does not take is no endpoint.
    const unknown = await fetch(`${sup.url}/v1/sessions/s%2D9/turns`);
    expect(unknown.status).toBe(404);
    expect((await errorOf(unknown)).message).toBe("no session 's%2D9'");
    const wrongMethod = await fetch(`${sup.url}/v1/sessions/s-0001`, { method: 'PUT' });
    expect(wrongMethod.status).toBe(404);
    expect((await errorOf(wrongMethod)).message).toBe('PUT /v1/sessions/s-0001: no such endpoint');
    const encoded = await fetch(`${sup.url}/v1/sessions/s%2D0001`);
    expect(encoded.status).toBe(200);
    expect(((await encoded.json()) as { id: string }).id).toBe('s-0001');
    const cycles = () =>
      watch.events.filter((e) => e.name === 'poll.cycle' && (e.data as { sessions: number }).sessions > 0);
    await waitUntil('three poll cycles with the session', () => cycles().length >= 3, { timeoutMs: 45_000 });
    expect(sup.childPid()).toBe(pid);
    expect(watch.events.filter((e) => e.name === 'controlplane.exit')).toEqual([]);
  }, 90_000);
});

describe('state a control plane reloads cannot keep it down', () => {
  it('a journal line with a NUL id is dropped and reported at the restart; the sessions around it are recovered and polled', async () => {
    const gh = await github();
    const sup = await supervisor('journal');
    expect((await post(`${sup.url}/v1/run`, runStart(gh))).status).toBe(200);
    const watch = watchEvents(sup.url);
    closers.push(watch.close);
    expect((await post(`${sup.url}/v1/sessions`, session('s-0001'))).status).toBe(201);
    // What an older version (no check at the door) or a hand edit left in the journal.
    const journal = join(dir, 'journal', 'sessions.jsonl');
    appendFileSync(
      journal,
      `${JSON.stringify({ ...session('s-\u0000x'), state: 'working', createdAt: 0 })}\n`,
    );
    const restart = await post(`${sup.url}/v1/restart`, { kind: 'hard' });
    expect(restart.status).toBe(200);
    const pid = sup.childPid();
    const corrupt = watch.events.find((e) => e.name === 'controlplane.state_corrupt');
    expect(corrupt?.data).toMatchObject({ path: journal, lost: '1 session record(s)' });
    expect(readFileSync(journal, 'utf8')).not.toContain('\\u0000');
    expect((await fetch(`${sup.url}/v1/sessions/s-0001`)).status).toBe(200);
    // Polled after the restart, by the same process: no crash, no restart loop.
    const readyAt = watch.events.findLastIndex((e) => e.name === 'controlplane.ready');
    await waitUntil(
      'three poll cycles after the restart',
      () => watch.events.slice(readyAt).filter((e) => e.name === 'poll.cycle').length >= 3,
      { timeoutMs: 45_000 },
    );
    expect(sup.childPid()).toBe(pid);
    expect(watch.events.filter((e) => e.name === 'controlplane.exit')).toEqual([]);
  }, 90_000);

  it('a sessions.jsonl that is a directory is moved aside (not a 500 EISDIR at every run); sessions are journaled again', async () => {
    const gh = await github();
    const journal = join(dir, 'journal-dir', 'sessions.jsonl');
    mkdirSync(journal, { recursive: true });
    const sup = await supervisor('journal-dir');
    for (let i = 0; i < 2; i++) {
      const started = await post(`${sup.url}/v1/run`, runStart(gh));
      expect(started.status, await started.clone().text()).toBe(200);
    }
    expect(statSync(`${journal}.corrupt`).isDirectory()).toBe(true);
    expect((await post(`${sup.url}/v1/sessions`, session('s-0001'))).status).toBe(201);
    await waitUntil(
      'the session journaled',
      () => existsSync(journal) && readFileSync(journal, 'utf8').includes('s-0001'),
    );
    expect(statSync(journal).isFile()).toBe(true);
  }, 90_000);

  it('a control plane that dies three times in a minute starts with its state quarantined, and takes a new run', async () => {
    const gh = await github();
    const sup = await supervisor('crashloop');
    expect((await post(`${sup.url}/v1/run`, runStart(gh))).status).toBe(200);
    const watch = watchEvents(sup.url);
    closers.push(watch.close);
    expect((await post(`${sup.url}/v1/sessions`, session('s-0001'))).status).toBe(201);
    // Killed from outside, as whatever kills it for good would: each time the supervisor starts
    // it again from its state, until the third.
    for (let i = 0; i < 3; i++) {
      const pid = sup.childPid();
      expect(pid).toBeGreaterThan(0);
      process.kill(pid!, 'SIGKILL');
      await waitUntil('a new control plane', () => (sup.childPid() ?? pid) !== pid, { timeoutMs: 30_000 });
    }
    await waitUntil('the quarantine', () =>
      watch.events.some((e) => e.name === 'controlplane.state_quarantined'),
    );
    const quarantined = watch.events.find((e) => e.name === 'controlplane.state_quarantined');
    expect((quarantined!.data as { moved: string[] }).moved).toContain(
      join(dir, 'crashloop', 'run.json.quarantined'),
    );
    expect(existsSync(join(dir, 'crashloop', 'run.json'))).toBe(false);
    // Up, with no run; the next run starts as on a fresh state directory.
    const noRun = await post(`${sup.url}/v1/sessions`, session('s-0002'));
    expect(noRun.status).toBe(409);
    expect((await errorOf(noRun)).code).toBe('no_run');
    expect((await post(`${sup.url}/v1/run`, runStart(gh))).status).toBe(200);
    expect((await post(`${sup.url}/v1/sessions`, session('s-0002'))).status).toBe(201);
  }, 120_000);
});

describe('a run that cannot start or recover fails that run, and the server takes the next', () => {
  it('POST /v1/run with a GitHub that cannot be reached: 502 naming github.url, nothing saved; a restart then fails alone', async () => {
    const gh = await github();
    const sup = await supervisor('unreachable');
    const start = await post(`${sup.url}/v1/run`, runStart({ url: 'http://127.0.0.1:1', token: 't' }));
    expect(start.status).toBe(502);
    const error = await errorOf(start);
    expect(error.code).toBe('bad_gateway');
    expect(error.message).toMatch(
      /^github\.url: the run cannot start against http:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/,
    );
    expect(existsSync(join(dir, 'unreachable', 'run.json'))).toBe(false);
    // A restart has no run to recover: it says so, and the server stays up.
    const restart = await post(`${sup.url}/v1/restart`, { kind: 'hard' });
    expect(restart.status).toBe(500);
    expect((await errorOf(restart)).message).toMatch(/the run cannot be recovered: no run to recover/);
    const good = await post(`${sup.url}/v1/run`, runStart(gh));
    expect(good.status).toBe(200);
    expect((await post(`${sup.url}/v1/sessions`, session('s-0001'))).status).toBe(201);
  }, 90_000);

  it("the run's GitHub gone (its fleetbench killed mid-run): the restart fails that run (500), the next run starts", async () => {
    const gone = await github();
    const sup = await supervisor('gone');
    expect((await post(`${sup.url}/v1/run`, runStart(gone))).status).toBe(200);
    const watch = watchEvents(sup.url);
    closers.push(watch.close);
    expect((await post(`${sup.url}/v1/sessions`, session('s-0001'))).status).toBe(201);
    await gone.close();
    const restart = await post(`${sup.url}/v1/restart`, { kind: 'hard' });
    expect(restart.status).toBe(500);
    expect((await errorOf(restart)).message).toMatch(/the run cannot be recovered: .*ECONNREFUSED/);
    expect(watch.events.some((e) => e.name === 'controlplane.recover_failed')).toBe(true);
    expect(existsSync(join(dir, 'gone', 'run.json.failed'))).toBe(true);
    // The server answers, with no run, and takes a new one against a live GitHub.
    const noRun = await post(`${sup.url}/v1/sessions`, session('s-0002'));
    expect(noRun.status).toBe(409);
    expect((await errorOf(noRun)).code).toBe('no_run');
    const live = await github();
    expect((await post(`${sup.url}/v1/run`, runStart(live))).status).toBe(200);
    expect((await post(`${sup.url}/v1/sessions`, session('s-0002'))).status).toBe(201);
    // ...and that run restarts as any other.
    expect((await post(`${sup.url}/v1/restart`, { kind: 'hard' })).status).toBe(200);
  }, 120_000);
});
