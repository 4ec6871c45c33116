/**
 * The world's timestamps and versions: the run's clock, the one global sequence every change
 * takes a number from (`version`, so ETags and `updated_at` ties have a deterministic order), the
 * database ids, and the dates of the fixture objects, which all lie before the run starts.
 *
 * Times are run-time milliseconds from the Clock; JSON renders them through `clock.toWallMs`.
 */
import { type Clock, VIRTUAL_EPOCH_MS } from '../../clock/index.ts';
import type { RepoFixture } from '../fixtures.ts';

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

export class WorldTime {
  readonly clock: Clock;
  private seq = 0;
  private nextId = 1;

  constructor(clock: Clock) {
    this.clock = clock;
  }

  /** Run time now. */
  now(): number {
    return this.clock.now();
  }

  /** A new version number: larger than every earlier one. */
  bump(): number {
    return ++this.seq;
  }

  /** The latest version handed out. */
  get version(): number {
    return this.seq;
  }

  /** A new database id (users, repositories, issues, comments, ... share one sequence, as on GitHub). */
  id(): number {
    return this.nextId++;
  }

  /**
   * A commit's git date (Unix seconds). Fixture commits (dated before the run starts) count from a
   * fixed epoch, so the same fixtures make the same SHAs under any clock; commits made during the
   * run take the clock's wall time (a virtual clock's is deterministic too).
   */
  commitSeconds(t: number): number {
    const wall = t < 0 ? VIRTUAL_EPOCH_MS + t : this.clock.toWallMs(t);
    return Math.floor(wall / 1000);
  }

  /** The run time of a wall-clock instant (a client's `started_at`), whatever the clock's scale. */
  fromWall(wallMs: number): number {
    const now = this.clock.now();
    const wallPerRunSecond = this.clock.toWallMs(now + 1000) - this.clock.toWallMs(now);
    return now + ((wallMs - this.clock.toWallMs(now)) * 1000) / wallPerRunSecond;
  }

  /** `2026-01-01T00:00:00Z`, GitHub's format (no milliseconds). */
  iso(t: number): string {
    const s = new Date(this.clock.toWallMs(t)).toISOString();
    return `${s.slice(0, 19)}Z`;
  }
}

/**
 * When each fixture repository was created: its objects (issues, then pull requests) follow it a
 * minute apart, so each repository gets a slot of an hour, or longer when it holds more than
 * 59 objects, and the slots end an hour before the run starts. Every fixture timestamp is then
 * before the server's clock whatever the sizes (`--issues-per-repo 1200` spans 20 hours), and a
 * push during the run moves `pushed_at` forward. Small fixtures keep the dates they always had
 * (repository k of n at -(n + 1 - k) hours).
 */
export function fixtureRepoDates(repos: readonly RepoFixture[]): number[] {
  const slots = repos.map((repo) => {
    const objects = (repo.issues?.length ?? 0) + (repo.pulls?.length ?? 0);
    return Math.max(HOUR_MS, (objects + 1) * MINUTE_MS);
  });
  let t = -HOUR_MS - slots.reduce((sum, slot) => sum + slot, 0);
  return slots.map((slot) => {
    const at = t;
    t += slot;
    return at;
  });
}

/** The minute between two fixture objects of a repository. */
export const FIXTURE_STEP_MS = MINUTE_MS;
