/**
 * A gauge over time, for charts (sessions by state, in-flight calls): per second of run time the
 * last sample (by time; a tie goes to the later record), in two growable typed arrays, so memory
 * is bounded by the run's length in seconds and merging is exact. At the end each track is cut
 * into at most MAX_SERIES_POINTS bins, keeping each bin's last sample with its own time.
 */
import { MAX_SECONDS } from './bins.ts';

export interface GaugeTrack {
  /** Sample time (ms) per second slot; NaN where no sample fell. */
  t: Float64Array;
  v: Float64Array;
  length: number;
}

/** Gauge label sets that get a track; beyond this a gauge keeps only its totals (a warning says so). */
export const MAX_GAUGE_TRACKS = 256;

export function newTrack(): GaugeTrack {
  return { t: new Float64Array(64).fill(Number.NaN), v: new Float64Array(64), length: 0 };
}

function grow(track: GaugeTrack, index: number): void {
  if (index < track.t.length) return;
  let size = track.t.length * 2;
  while (size <= index) size *= 2;
  const t = new Float64Array(size).fill(Number.NaN);
  t.set(track.t);
  const v = new Float64Array(size);
  v.set(track.v);
  track.t = t;
  track.v = v;
}

/** Records a sample; false when t is beyond the longest series kept. */
export function trackAdd(track: GaugeTrack, t: number, value: number): boolean {
  const index = t > 0 ? Math.floor(t / 1000) : 0;
  if (index >= MAX_SECONDS) return false;
  grow(track, index);
  const seen = track.t[index]!;
  if (Number.isNaN(seen) || t >= seen) {
    track.t[index] = t;
    track.v[index] = value;
  }
  if (index >= track.length) track.length = index + 1;
  return true;
}

/** Folds in a track of records that came later in the file (ties go to it). */
export function trackMerge(into: GaugeTrack, later: GaugeTrack): void {
  for (let i = 0; i < later.length; i++) {
    const t = later.t[i]!;
    if (!Number.isNaN(t)) trackAdd(into, t, later.v[i]!);
  }
}

/** The last sample of each bin of `binMs` (a multiple of 1 s), as parallel arrays. */
export function trackPoints(track: GaugeTrack, binMs: number): { t: number[]; v: number[] } {
  const perBin = Math.max(1, Math.round(binMs / 1000));
  const t: number[] = [];
  const v: number[] = [];
  for (let start = 0; start < track.length; start += perBin) {
    let best = -1;
    for (let i = start; i < Math.min(track.length, start + perBin); i++) {
      if (!Number.isNaN(track.t[i]!) && (best < 0 || track.t[i]! >= track.t[best]!)) best = i;
    }
    if (best >= 0) {
      t.push(track.t[best]!);
      v.push(track.v[best]!);
    }
  }
  return { t, v };
}
