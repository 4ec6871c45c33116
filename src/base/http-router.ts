/**
 * The routing of fleetbench's protocol servers (`reference serve`, its supervisor, a live run's
 * metrics and OTLP receiver): find-my-way matches a method and a path, path parameters come
 * back decoded, and each server keeps its own answers (its error shapes differ: the http target
 * protocol's `{error: {code, message}}`, OTLP's status). The GitHub emulator routes by its own
 * table (`RestRouter`, src/github/rest.ts), which also carries each route's cost and documentation.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import FindMyWay from 'find-my-way';

/** What a matched request carries besides itself: decoded path parameters and the query. */
export interface RouteMatch {
  params: Record<string, string>;
  query: URLSearchParams;
}

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, match: RouteMatch) => unknown;

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * The longest path parameter matched (as sent, percent-encoded): three times the longest id the
 * protocol takes (docs/limits.md), so a too-long id reaches the handler's own check and its
 * message; past this, the request matches no route (404).
 */
const MAX_PARAM_CHARS = 1024;

export class Routes {
  private readonly router = FindMyWay({ maxParamLength: MAX_PARAM_CHARS });

  on(method: Method | Method[], path: string, handler: RouteHandler): this {
    this.router.on(method, path, handler as never);
    return this;
  }

  /**
   * The request's handler, bound to its match, or undefined when no route has its method and
   * path (a malformed percent-encoding included).
   */
  match(req: IncomingMessage): ((res: ServerResponse) => unknown) | undefined {
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    let found: ReturnType<typeof this.router.find>;
    try {
      found = this.router.find((req.method ?? 'GET') as Method, path);
    } catch {
      return undefined;
    }
    if (!found) return undefined;
    const params: Record<string, string> = {};
    for (const [key, value] of Object.entries(found.params)) if (value !== undefined) params[key] = value;
    const query = new URLSearchParams(queryAt < 0 ? '' : url.slice(queryAt + 1));
    const handler = found.handler as unknown as RouteHandler;
    return (res) => handler(req, res, { params, query });
  }
}
