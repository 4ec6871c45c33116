/**
 * The Prometheus text exposition format, version 0.0.4 (what `GET /metrics` answers): families
 * with `# HELP` and `# TYPE`, samples `name{label="value"} number`. Label values escape `\`, `"`
 * and newlines; HELP text escapes `\` and newlines.
 */
export type MetricType = 'gauge' | 'counter' | 'summary';

export interface Sample {
  labels?: Record<string, string | number | boolean>;
  value: number;
  /** For summaries: `_sum` / `_count` samples. */
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
