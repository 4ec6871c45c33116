/**
 * What every accumulator of the analyzer is (docs/architecture.md, "src/analyze/"): it folds
 * records in (`addApi`, `addSpan`, ... as it needs), merges an accumulator of the same kind that
 * saw the records after its own (file order), and goes to and from a structured-clone-safe state
 * for worker threads. `Analyzer` composes them (analyzer.ts, ACCUMULATORS): a new metric is one
 * file here, one line there, plus the call in the analyzer's dispatch by kind.
 *
 * An api record is never kept past `addApi`: the trace scanner hands every api line over as the
 * same reused object (src/trace/scanner.ts). Copy what you keep.
 */
import { type ScannedRow, STRING_TAG } from '../../trace/scanner.ts';

export interface Accumulator<State> {
  /** Folds in an accumulator that saw the records after this one's. Mutates this, not `other`. */
  merge(other: this): void;
  /** Structured-clone safe; may share this accumulator's memory (it is sent, then dropped). */
  toState(): State;
}

export interface AccumulatorKind<A extends Accumulator<State>, State> {
  new (): A;
  /** Takes ownership of `state`. */
  fromState(state: State): A;
  /** The array buffers of a state, moved rather than copied across a thread boundary. */
  transferables?(state: State): ArrayBuffer[];
}

export type LabelMap = Record<string, string | number | boolean>;

export function addTo(map: Map<string, number>, key: string, value: number): void {
  map.set(key, (map.get(key) ?? 0) + value);
}

/** Stable key of a label set: keys sorted. */
export function labelKey(labels: LabelMap | undefined): string {
  if (labels === undefined) return '';
  const keys = Object.keys(labels);
  if (keys.length === 0) return '';
  keys.sort();
  let out = '';
  for (const key of keys) out += `${JSON.stringify(key)}:${JSON.stringify(labels[key])},`;
  return out;
}

export function sortedLabels(labels: LabelMap | undefined): LabelMap {
  const out: LabelMap = {};
  if (labels === undefined) return out;
  for (const key of Object.keys(labels).sort()) out[key] = labels[key]!;
  return out;
}

/**
 * Values kept by the scanner's id of one field's string (scanner.ts ScannedRow): a record the
 * scanner read finds its entry by an array index instead of a map lookup by string, which was
 * ~13 % of an analysis thread's time for ApiCounts' ten maps alone. Slot 0 is the field absent.
 * The ids are one generation's: the cache empties itself when the scanner forgets them. Only a
 * cache: what it holds must be the same objects the accumulator's maps hold.
 */
export class ById<T> {
  private row: ScannedRow | undefined;
  private generation = -1;
  private id = -1;
  private tag = -1;
  private entries: Array<T | undefined> = [];

  constructor(private readonly field: string) {}

  /** The slot of the field's value in `row` (the last scanned record). */
  slot(row: ScannedRow): number {
    if (row !== this.row || row.generation[0] !== this.generation) this.reset(row);
    return row.tags[this.tag] === STRING_TAG ? row.ids[this.id]! + 1 : 0;
  }

  get(slot: number): T | undefined {
    return this.entries[slot];
  }

  set(slot: number, value: T): void {
    this.entries[slot] = value;
  }

  private reset(row: ScannedRow): void {
    this.row = row;
    this.generation = row.generation[0]!;
    this.id = row.idIndex(this.field);
    this.tag = row.tagIndex(this.field);
    if (this.id < 0 || this.tag < 0) throw new Error(`api scanner: field '${this.field}' is not read`);
    this.entries = [];
  }
}
