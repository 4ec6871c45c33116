import { isAscii } from 'node:buffer';

/**
 * Bytes to text. Traces are almost always pure ASCII, and Node's ASCII decoder is about ten
 * times faster than its UTF-8 one, so the (SIMD) check pays for itself many times over.
 */
export function decode(buffer: Buffer, start: number, end: number): string {
  return isAscii(buffer.subarray(start, end))
    ? buffer.toString('ascii', start, end)
    : buffer.toString('utf8', start, end);
}
