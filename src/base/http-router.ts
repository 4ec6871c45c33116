/**
 * The routing of fleetbench's protocol servers (`reference serve`, its supervisor, a live run's
 * metrics and OTLP receiver): find-my-way matches a method and a path, path parameters come
 * back decoded, and each server keeps its own answers (its error shapes differ: the http target
 * protocol's `{error: {code, message}}`, OTLP's status). The GitHub emulator routes by its own
 * table (`RestRouter`, src/github/rest.ts), which also carries each route's cost and documentation.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import FindMyWay from 'find-my-way';

/** What a matched request carries besides itself: decoded path parameters, the path as sent, the query. */
export interface RouteMatch {
  params: Record<string, string>;
  /** The path as the client encoded it (no query): for echoing an id as sent. */
  path: string;
  query: URLSearchParams;
}

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, match: RouteMatch) => unknown;

/** The request's handler, bound to its match. */
export type RouteAnswer = (res: ServerResponse) => unknown;

/**
 * A request whose path would match a route but for a malformed percent-encoding in one of its
 * parameters (`/v1/sessions/%E0%A4%A`): the client's fault, which the server answers naming the
 * parameter (find-my-way alone matches no route at all for such a path).
 */
export class MalformedParam {
  constructor(
    /** The parameter's name in the route (`id` of `/v1/sessions/:id`). */
    readonly param: string,
  ) {}
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Every method a route may take (for a path that answers the same way whatever the method). */
export const METHODS: readonly Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * The longest path parameter matched (as sent, percent-encoded): three times the longest id the
 * protocol takes (docs/limits.md), so a too-long id reaches the handler's own check and its
 * message; past this, the request matches no route (404).
 */
const MAX_PARAM_CHARS = 1024;

function decodes(segment: string): boolean {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}

export class Routes {
  private readonly router = FindMyWay({ maxParamLength: MAX_PARAM_CHARS });

  on(method: Method | readonly Method[], path: string, handler: RouteHandler): this {
    this.router.on(method as Method | Method[], path, handler as never);
    return this;
  }

  /**
   * The request's handler, bound to its match; a `MalformedParam` when the path matches a route
   * only once a parameter's malformed percent-encoding is taken literally; undefined when no
   * route has its method and path.
   */
  match(req: IncomingMessage): RouteAnswer | MalformedParam | undefined {
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const method = (req.method ?? 'GET') as Method;
    const found = this.find(method, path);
    if (!found) return this.malformed(method, path);
    const params: Record<string, string> = {};
    for (const [key, value] of Object.entries(found.params)) if (value !== undefined) params[key] = value;
    const query = new URLSearchParams(queryAt < 0 ? '' : url.slice(queryAt + 1));
    const handler = found.handler as unknown as RouteHandler;
    return (res) => handler(req, res, { params, path, query });
  }

  private find(method: Method, path: string): ReturnType<typeof this.router.find> {
    try {
      return this.router.find(method, path);
    } catch {
      return null;
    }
  }

  /**
   * find-my-way decodes the whole path before it matches, so one bad escape hides the route:
   * the segments that do not decode are escaped (`%` → `%25`, so the parameter comes back as
   * sent) and matched again; a parameter holding one of them is the one to name.
   */
  private malformed(method: Method, path: string): MalformedParam | undefined {
    const segments = path.split('/');
    const bad = new Set(segments.filter((segment) => !decodes(segment)));
    if (bad.size === 0) return undefined;
    const repaired = segments.map((segment) => (bad.has(segment) ? encodeURIComponent(segment) : segment));
    const found = this.find(method, repaired.join('/'));
    if (!found) return undefined;
    const param = Object.entries(found.params).find(([, value]) => value !== undefined && bad.has(value));
    return param ? new MalformedParam(param[0]) : undefined;
  }
}
