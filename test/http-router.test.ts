import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { MalformedParam, type RouteMatch, Routes } from '../src/base/http-router.ts';

const request = (method: string, url: string) => ({ method, url }) as IncomingMessage;

describe('Routes (the protocol servers’ router)', () => {
  const seen: RouteMatch[] = [];
  const routes = new Routes()
    .on('GET', '/v1/sessions/:session', (_req, _res, match) => seen.push(match))
    .on('POST', '/v1/actors/:actor/park', (_req, _res, match) => seen.push(match));

  it('hands a match its decoded parameters, the path as sent and the query', () => {
    const answer = routes.match(request('GET', '/v1/sessions/s%2D1?x=1'));
    expect(typeof answer).toBe('function');
    (answer as (res: ServerResponse) => unknown)({} as ServerResponse);
    expect(seen.at(-1)?.params).toEqual({ session: 's-1' });
    expect(seen.at(-1)?.path).toBe('/v1/sessions/s%2D1');
    expect(seen.at(-1)?.query.get('x')).toBe('1');
  });

  it('tells a malformed parameter (named) from no route at all', () => {
    const malformed = routes.match(request('GET', '/v1/sessions/%E0%A4%A'));
    expect(malformed).toBeInstanceOf(MalformedParam);
    expect((malformed as MalformedParam).param).toBe('session');
    expect((routes.match(request('POST', '/v1/actors/a%ZZ/park')) as MalformedParam).param).toBe('actor');
    // The method or the rest of the path still has to fit a route.
    expect(routes.match(request('POST', '/v1/sessions/%E0%A4%A'))).toBeUndefined();
    expect(routes.match(request('GET', '/v1/nowhere/%E0%A4%A'))).toBeUndefined();
    expect(routes.match(request('GET', '/v1/sessions%ZZ'))).toBeUndefined();
    expect(routes.match(request('GET', '/v1/nowhere'))).toBeUndefined();
  });

  it('matches no route for a parameter past 1,024 characters as sent, in milliseconds (a 10 MB id)', () => {
    expect(typeof routes.match(request('GET', `/v1/sessions/${'s'.repeat(1024)}`))).toBe('function');
    expect(routes.match(request('GET', `/v1/sessions/${'s'.repeat(1025)}`))).toBeUndefined();
    const started = performance.now();
    expect(routes.match(request('GET', `/v1/sessions/${'%41'.repeat(3_500_000)}`))).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
