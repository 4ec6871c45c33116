/**
 * Repository webhooks over REST ("Repository webhooks" in GitHub's REST docs): make, list, read,
 * change and delete a repository's hooks, read a hook's configuration, ping it, and list its
 * deliveries. Only the repository's admins may (world/access.ts); anyone else is answered 404,
 * as GitHub answers for what a token may not see. The hooks and their deliveries are
 * webhooks.ts's.
 */
import {
  actor,
  bodyField,
  fail,
  notFound,
  numberParam,
  paginate,
  type RestContext,
  type RestResult,
  type RestRouter,
  validation,
  withRepo,
} from './rest-kit.ts';
import type { Repo } from './state.ts';
import {
  configObject,
  deliveryObject,
  type Hook,
  type HookConfig,
  hookObject,
  WEBHOOK_BOUNDS,
  type Webhooks,
  webhooksOf,
} from './webhooks.ts';
import { roleOf } from './world/access.ts';

/** The repository, when the token's user is its admin (else 404, as GitHub answers). */
function withAdminRepo(ctx: RestContext, fn: (repo: Repo, hooks: Webhooks) => RestResult): RestResult {
  return withRepo(ctx, (repo) => {
    const hooks = webhooksOf(ctx.state);
    if (hooks === undefined || ctx.user === undefined || roleOf(ctx.user, repo) !== 'admin')
      return notFound();
    return fn(repo, hooks);
  });
}

function withHook(ctx: RestContext, fn: (hook: Hook, hooks: Webhooks) => RestResult): RestResult {
  return withAdminRepo(ctx, (repo, hooks) => {
    const hook = hooks.hook(repo, numberParam(ctx.params[2]));
    return hook === undefined ? notFound() : fn(hook, hooks);
  });
}

const json = (status: number, value: unknown): RestResult => ({ status, body: JSON.stringify(value) });

/** A hook's `config` from a request body, over `base` (a PATCH changes what it names); a string is a refusal. */
function readConfig(value: unknown, base: HookConfig | undefined): HookConfig | string {
  if (value === undefined && base !== undefined) return base;
  if (value === null || typeof value !== 'object') return 'config';
  const input = value as Record<string, unknown>;
  const url = input.url ?? base?.url;
  if (typeof url !== 'string' || url.length > WEBHOOK_BOUNDS.configChars) return 'url';
  try {
    new URL(url);
  } catch {
    return 'url';
  }
  const contentType = input.content_type ?? base?.contentType ?? 'form';
  if (contentType !== 'json' && contentType !== 'form') return 'content_type';
  const secret = input.secret ?? base?.secret;
  if (secret !== undefined && (typeof secret !== 'string' || secret.length > WEBHOOK_BOUNDS.configChars))
    return 'secret';
  const insecure = String(input.insecure_ssl ?? base?.insecureSsl ?? '0');
  if (insecure !== '0' && insecure !== '1') return 'insecure_ssl';
  return { url, contentType, secret: secret === '' ? undefined : secret, insecureSsl: insecure };
}

/** The event names a hook may have (docs/limits.md). */
const MAX_HOOK_EVENTS = 300;

function readEvents(value: unknown): string[] | undefined {
  if (!Array.isArray(value) || value.length > MAX_HOOK_EVENTS) return undefined;
  if (!value.every((e) => typeof e === 'string' && e.length > 0 && e.length <= 100)) return undefined;
  return value as string[];
}

export function addHookRoutes(r: RestRouter): void {
  const base = '/repos/{owner}/{repo}/hooks';
  const docs = 'repos/webhooks';
  r.add('GET', base, `${docs}#list-repository-webhooks`, (ctx) =>
    withAdminRepo(ctx, (repo, hooks) => {
      const { items, page } = paginate(ctx, hooks.hooksOf(repo));
      return {
        ...json(
          200,
          items.map((h) => hookObject(ctx.state, h)),
        ),
        page,
      };
    }),
  );
  r.add(
    'POST',
    base,
    `${docs}#create-a-repository-webhook`,
    (ctx) =>
      withAdminRepo(ctx, (repo, hooks) => {
        const name = bodyField(ctx, 'name');
        if (name !== undefined && name !== 'web') return validation('Hook', 'name', 'invalid');
        const config = readConfig(bodyField(ctx, 'config'), undefined);
        if (typeof config === 'string')
          return validation('Hook', config, config === 'config' ? 'missing_field' : 'invalid');
        const rawEvents = bodyField(ctx, 'events');
        const events = rawEvents === undefined ? ['push'] : readEvents(rawEvents);
        if (events === undefined) return validation('Hook', 'events', 'invalid');
        const active = bodyField(ctx, 'active');
        if (active !== undefined && typeof active !== 'boolean')
          return validation('Hook', 'active', 'invalid');
        if (hooks.hooksOf(repo).length >= WEBHOOK_BOUNDS.hooksPerRepo)
          return fail(422, 'Validation Failed', {
            errors: [
              {
                resource: 'Hook',
                code: 'custom',
                message: `The "web" hook has already been created ${WEBHOOK_BOUNDS.hooksPerRepo} times on this repository`,
              },
            ],
          });
        const hook = hooks.create(repo, { config, events, active: active ?? true }, actor(ctx));
        const body = hookObject(ctx.state, hook);
        return { ...json(201, body), location: String(body.url) };
      }),
    { contentCreating: true },
  );
  r.add('GET', `${base}/{hook_id}`, `${docs}#get-a-repository-webhook`, (ctx) =>
    withHook(ctx, (hook) => json(200, hookObject(ctx.state, hook))),
  );
  r.add('PATCH', `${base}/{hook_id}`, `${docs}#update-a-repository-webhook`, (ctx) =>
    withHook(ctx, (hook, hooks) => {
      const config = readConfig(bodyField(ctx, 'config'), hook.config);
      if (typeof config === 'string') return validation('Hook', config, 'invalid');
      let events = hook.events;
      for (const [field, change] of [
        ['events', 'set'],
        ['add_events', 'add'],
        ['remove_events', 'remove'],
      ] as const) {
        const value = bodyField(ctx, field);
        if (value === undefined) continue;
        const named = readEvents(value);
        if (named === undefined) return validation('Hook', field, 'invalid');
        events =
          change === 'set'
            ? named
            : change === 'add'
              ? [...events, ...named]
              : events.filter((e) => !named.includes(e));
      }
      // `add_events` adds to what the hook has: the list stays within the 300 names a hook may
      // have (docs/limits.md), or 300 names at a time grew it without end.
      if (new Set(events).size > MAX_HOOK_EVENTS) return validation('Hook', 'events', 'invalid');
      const active = bodyField(ctx, 'active');
      if (active !== undefined && typeof active !== 'boolean') return validation('Hook', 'active', 'invalid');
      hooks.update(hook, { config, events, ...(active === undefined ? {} : { active }) });
      return json(200, hookObject(ctx.state, hook));
    }),
  );
  r.add('DELETE', `${base}/{hook_id}`, `${docs}#delete-a-repository-webhook`, (ctx) =>
    withHook(ctx, (hook, hooks) => {
      hooks.delete(hook);
      return { status: 204, body: '' };
    }),
  );
  r.add('GET', `${base}/{hook_id}/config`, `${docs}#get-a-webhook-configuration-for-a-repository`, (ctx) =>
    withHook(ctx, (hook) => json(200, configObject(hook.config))),
  );
  r.add('POST', `${base}/{hook_id}/pings`, `${docs}#ping-a-repository-webhook`, (ctx) =>
    withHook(ctx, (hook, hooks) => {
      hooks.ping(hook, actor(ctx));
      return { status: 204, body: '' };
    }),
  );
  r.add('GET', `${base}/{hook_id}/deliveries`, `${docs}#list-deliveries-for-a-repository-webhook`, (ctx) =>
    withHook(ctx, (hook) => {
      // Newest first, as GitHub lists them; `per_page` up to 100 (cursor pages are not modelled).
      const perPage = Math.min(100, Math.max(1, Number(ctx.query.get('per_page') ?? 30) || 30));
      const newest = hook.deliveries.slice(-perPage).reverse();
      return json(
        200,
        newest.map((d) => deliveryObject(ctx.state, hook, d, false)),
      );
    }),
  );
  r.add(
    'GET',
    `${base}/{hook_id}/deliveries/{delivery_id}`,
    `${docs}#get-a-delivery-for-a-repository-webhook`,
    (ctx) =>
      withHook(ctx, (hook) => {
        const id = numberParam(ctx.params[3]);
        const delivery = hook.deliveries.find((d) => d.id === id);
        return delivery === undefined
          ? notFound()
          : json(200, deliveryObject(ctx.state, hook, delivery, true));
      }),
  );
}
