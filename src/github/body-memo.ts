/**
 * A response body is often the same large string many times over (a cached list rendered once per
 * version): what is derived from it (its byte length, its bytes) is kept for the last few, and
 * worked out afresh for small bodies, where a lookup would cost more than it saves.
 */
const LARGE = 2048;

export function largeBodyMemo<T>(capacity: number, derive: (body: string) => T): (body: string) => T {
  const memo = new Map<string, T>();
  return (body) => {
    let value = memo.get(body);
    if (value === undefined) {
      value = derive(body);
      if (memo.size >= capacity) memo.clear();
      memo.set(body, value);
    }
    return value;
  };
}

export function isLargeBody(body: string): boolean {
  return body.length >= LARGE;
}
