/**
 * The Prometheus text exposition format, version 0.0.4 (what `GET /metrics` answers): families
 * with `# HELP` and `# TYPE`, samples `name{label="value"} number`. Label values escape `\`, `"`
 * and newlines; HELP text escapes `\` and newlines.
 */
export type MetricType = 'gauge' | 'counter' | 'summary' | 'histogram';

export interface Sample {
  labels?: Record<string, string | number | boolean>;
  value: number;
  /** For summaries and histograms: `_sum` / `_count` / `_bucket` samples. */
  suffix?: string;
}

export interface Family {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const escapeHelp = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeValue = (text: string) => text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/** A label name Prometheus accepts: [a-zA-Z_][a-zA-Z0-9_]*. */
export function labelName(name: string): string {
  const cleaned = name.replace(/[^a-zA-Z0-9_]/g, '_');
  return /^[a-zA-Z_]/.test(cleaned) ? cleaned : `_${cleaned}`;
}

function number(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

export function formatFamilies(families: readonly Family[]): string {
  let out = '';
  for (const family of families) {
    out += `# HELP ${family.name} ${escapeHelp(family.help)}\n# TYPE ${family.name} ${family.type}\n`;
    for (const sample of family.samples) {
      const labels = Object.entries(sample.labels ?? {});
      const labelText =
        labels.length === 0
          ? ''
          : `{${labels.map(([k, v]) => `${labelName(k)}="${escapeValue(String(v))}"`).join(',')}}`;
      out += `${family.name}${sample.suffix ?? ''}${labelText} ${number(sample.value)}\n`;
    }
  }
  return out;
}

/** Prometheus's default buckets (seconds): web-request latencies from 5 ms to 10 s. */
export const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Schedule lag is mostly under a few ms when the load generator keeps up: finer at the low end. */
export const LAG_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * A Prometheus histogram (fixed upper bounds, cumulative buckets), per label set. The HDR
 * histograms the analysis uses answer percentiles exactly; this one answers what Prometheus and
 * Grafana aggregate across scrapes and instances (histogram_quantile over rate of buckets).
 */
export class BucketHistogram {
  private readonly series = new Map<
    string,
    { labels: Record<string, string>; counts: number[]; sum: number; count: number }
  >();

  constructor(private readonly bounds: readonly number[]) {}

  observe(value: number, labels: Record<string, string> = {}): void {
    const key = JSON.stringify(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { labels, counts: new Array<number>(this.bounds.length).fill(0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    const i = this.bounds.findIndex((b) => value <= b);
    if (i >= 0) s.counts[i]!++;
    s.sum += value;
    s.count++;
  }

  samples(): Sample[] {
    const out: Sample[] = [];
    for (const s of [...this.series.values()].sort((a, b) =>
      JSON.stringify(a.labels).localeCompare(JSON.stringify(b.labels)),
    )) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += s.counts[i]!;
        out.push({ suffix: '_bucket', labels: { ...s.labels, le: String(bound) }, value: cumulative });
      });
      out.push({ suffix: '_bucket', labels: { ...s.labels, le: '+Inf' }, value: s.count });
      out.push({ suffix: '_sum', labels: s.labels, value: s.sum });
      out.push({ suffix: '_count', labels: s.labels, value: s.count });
    }
    return out;
  }
}

/**
 * A budget row's unit as Prometheus wants it: a base unit in the family's name and the value
 * scaled to it (milliseconds → seconds, percent → a 0–1 ratio, per minute → per second);
 * counts have no unit suffix.
 */
export function baseUnit(unit: string): { suffix: string; factor: number } {
  switch (unit) {
    case 'ms':
      return { suffix: '_seconds', factor: 1 / 1000 };
    case '%':
      return { suffix: '_ratio', factor: 1 / 100 };
    case 'req/s':
      return { suffix: '_per_second', factor: 1 };
    case 'writes/min':
      return { suffix: '_per_second', factor: 1 / 60 };
    default:
      return { suffix: '', factor: 1 };
  }
}
