/**
 * A name a user wrote (a scenario's `name`, a file's base name) as one path segment under the
 * output directory: letters, digits and `._=-` only, no leading dot (so never `.` or `..`), at
 * most 100 characters. `name: "../../../x"` becomes `___.._.._x`, inside the output directory.
 */
export function safePathSegment(name: string, fallback = 'run'): string {
  const cleaned = name
    .replace(/[^A-Za-z0-9._=-]+/g, '_')
    .replace(/^\.+/, (dots) => '_'.repeat(dots.length))
    .slice(0, 100);
  return cleaned === '' ? fallback : cleaned;
}
