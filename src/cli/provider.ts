/**
 * `fleetbench provider serve`: the provider emulator (OpenAI Responses and Chat Completions,
 * Anthropic Messages) on 127.0.0.1, for the real codex, Claude Code and opencode CLIs or any
 * client of those APIs. Prints the base URLs, the admin token and how to point each CLI at it;
 * Ctrl-C or SIGTERM stops it and closes the trace with its footer (docs/provider-emulator.md).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { type Command, InvalidArgumentError } from 'commander';
import { FleetbenchError } from '../base/errors.ts';
import { PROVIDER_LIMITS } from '../base/limits.ts';
import { VERSION } from '../base/version.ts';
import { FAULT_KINDS } from '../provider/faults.ts';
import { listenHost } from './github.ts';
import { endServedTrace, serveUntil } from './interrupt.ts';
import { collect, integerOption, portOption, tokenOption } from './options.ts';
import type { CommandIo } from './output.ts';

interface ServeOptions {
  port: number;
  host: '127.0.0.1' | '0.0.0.0';
  seed: number;
  timeScale: number;
  scripts?: string;
  script?: string;
  latency: string;
  ttft?: string;
  outputTps?: number;
  maxRunning?: number;
  loadFactor: number;
  limit: string[];
  fault: string[];
  model: string[];
  trace?: string;
  adminToken?: string;
  requireKnownKeys?: boolean;
  json?: boolean;
}

/** A number option within [min, max], its bound named when refused (docs/limits.md). */
function boundedNumber(min: number, max: number) {
  return (text: string): number => {
    const n = Number(text);
    if (!Number.isFinite(n) || n < min || n > max)
      throw new InvalidArgumentError(`expected a number from ${min} to ${max} (docs/limits.md)`);
    return n;
  };
}

export function register(program: Command, io: CommandIo): void {
  const provider = program
    .command('provider')
    .description(
      'the model-provider emulator (OpenAI Responses and Chat Completions, Anthropic Messages) for real agent CLIs',
    );
  provider
    .command('serve')
    .description(
      'serve the provider emulator on 127.0.0.1 for codex, Claude Code, opencode or any client of those APIs',
    )
    .option('--port <n>', 'port (0 picks a free one)', portOption, 0)
    .option('--host <addr>', '127.0.0.1, or 0.0.0.0 in a container behind a Service', listenHost, '127.0.0.1')
    .option('--seed <n>', 'seed of the answers, ids and latency', integerOption(0), 1)
    .option(
      '--time-scale <x>',
      'run-time ms per real ms (limits and fault windows follow it)',
      boundedNumber(PROVIDER_LIMITS.minTimeScale, PROVIDER_LIMITS.maxTimeScale),
      1,
    )
    .option(
      '--scripts <file>',
      'YAML agent scripts (docs/provider-emulator.md#scripts); built in: hello, tool-call, coding',
    )
    .option('--script <name>', 'the script a request follows when neither its key nor its prompt names one')
    .option('--latency <profile>', 'none, fast or realistic (docs/provider-emulator.md#latency)', 'none')
    .option('--ttft <ms>', 'time to first token MEDIAN[:P95] in ms, over the profile')
    .option(
      '--output-tps <n>',
      'output tokens per second, over the profile',
      boundedNumber(PROVIDER_LIMITS.minOutputTokensPerSec, PROVIDER_LIMITS.maxOutputTokensPerSec),
    )
    .option(
      '--max-running <n>',
      'latency under load: at most N requests generated at once, the rest queued (docs/provider-emulator.md#load)',
      integerOption(1, PROVIDER_LIMITS.maxRunning),
    )
    .option(
      '--load-factor <x>',
      'with --max-running: first-token and inter-token times multiplied by X at N running',
      boundedNumber(1, PROVIDER_LIMITS.maxLoadFactor),
      1,
    )
    .option(
      '--limit <key=n>',
      'a per-key limit: rpm, itpm, otpm, tpm, concurrent (repeatable; none by default)',
      collect,
      [],
    )
    .option(
      '--fault <spec>',
      `KIND[:N][@cli=,session=,count=,share=,from=,until=], KIND one of ${FAULT_KINDS.join(', ')} (rate-limit:RETRY_S, cut:AFTER_CHUNKS, stream-error:AFTER_CHUNKS, slow-first-token:MS; docs/provider-emulator.md#faults; repeatable)`,
      collect,
      [],
    )
    .option(
      '--model <NAME[=WINDOW[/CAP]]>',
      "serve a model the table lacks (a newer model, a fine-tune): its context window and output cap in tokens, else a fine-tune's base's, else the largest window (docs/provider-emulator.md#a-model-the-table-lacks; repeatable)",
      collect,
      [],
    )
    .option('--trace <file>', 'write every request as a provider.request span to this JSONL trace')
    .option('--admin-token <token>', 'admin token for /_fleetbench/* (default: random)', tokenOption)
    .option('--require-known-keys', 'answer keys not minted through the admin API with 401')
    .option('--json', 'print the connection details as one JSON line')
    .action((options: ServeOptions) => serve(options, io));
}

async function serve(options: ServeOptions, io: CommandIo): Promise<void> {
  const [providerModule, { RealClock }, { Rng }, { TraceWriter, servedTraceHeader }] = await Promise.all([
    import('../provider/index.ts'),
    import('../clock/index.ts'),
    import('../base/rng.ts'),
    import('../trace/writer.ts'),
  ]);
  const { ProviderEmulator, startProviderServer, parseFaultFlag } = providerModule;
  const scripts = options.scripts ? providerModule.loadScriptsFile(options.scripts) : undefined;
  const latency = latencyFrom(options, providerModule);
  const limits = limitsFrom(options.limit, providerModule.LIMIT_KEYS);
  const faults = options.fault.map(parseFaultFlag);
  const models = modelsFrom(options.model, providerModule.parseModelSpecs);
  const scriptsWithDefault =
    options.script !== undefined ? { scripts: scripts?.scripts ?? {}, default: options.script } : scripts;
  const clock = new RealClock({ timeScale: options.timeScale });
  const life = serveUntil();
  const trace = options.trace
    ? new TraceWriter(
        options.trace,
        servedTraceHeader({
          runId: randomUUID(),
          toolVersion: VERSION,
          name: 'provider-serve',
          target: 'provider-emulator',
          seed: options.seed,
          timeScale: options.timeScale,
          epochMs: clock.epochMs,
        }),
        // A trace that can no longer be written (a full disk) stops the server, said by path.
        { onWriteError: life.fail },
      )
    : undefined;
  let emulator: InstanceType<typeof ProviderEmulator>;
  try {
    emulator = new ProviderEmulator({
      clock,
      rng: new Rng(options.seed),
      trace,
      scripts: scriptsWithDefault,
      latency,
      limits,
      load:
        options.maxRunning !== undefined
          ? { maxRunning: options.maxRunning, factor: options.loadFactor }
          : undefined,
      requireKnownKeys: options.requireKnownKeys ?? false,
      models,
      adminToken: options.adminToken ?? `fbp_${randomBytes(18).toString('base64url')}`,
    });
  } catch (error) {
    trace?.close('failed', clock.now());
    if (error instanceof FleetbenchError) throw error;
    throw new FleetbenchError('E_USAGE', (error as Error).message);
  }
  for (const fault of faults) emulator.addFault(fault);
  let server: Awaited<ReturnType<typeof startProviderServer>>;
  try {
    server = await startProviderServer({ emulator, port: options.port, host: options.host });
  } catch (error) {
    trace?.close('failed', clock.now());
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE')
      throw new FleetbenchError('E_USAGE', `port ${options.port} is already in use`);
    throw error;
  }
  const details = {
    url: server.url,
    openaiBaseUrl: `${server.url}/v1`,
    anthropicBaseUrl: server.url,
    adminToken: emulator.adminToken,
    scripts: emulator.scriptNames(),
    latency: emulator.latency.name,
    limits,
    models: models.map((model) => model.name),
    trace: options.trace,
  };
  if (options.json) io.stdout.write(`${JSON.stringify(details)}\n`);
  else
    io.stdout.write(
      [
        `fleetbench provider emulator listening on ${server.url}`,
        `  OpenAI     ${details.openaiBaseUrl}   (POST /responses, /chat/completions)`,
        `  Anthropic  ${details.anthropicBaseUrl}   (POST /v1/messages)`,
        `  scripts    ${details.scripts.join(', ')}`,
        `  latency    ${details.latency}; limits ${Object.keys(limits).length === 0 ? 'none' : JSON.stringify(limits)}`,
        ...(models.length > 0 ? [`  models     the table's, and ${details.models.join(', ')}`] : []),
        `  admin      ${emulator.adminToken}   (Authorization: Bearer <admin> on /_fleetbench/*)`,
        ...(options.trace ? [`  trace      ${options.trace}`] : []),
        'Point an agent CLI at it: docs/provider-emulator.md#pointing-a-cli-at-it',
        '  (fleetbench agents try codex|claude|opencode runs one against an emulator of its own)',
        'Ctrl-C stops the server.',
        '',
      ].join('\n'),
    );
  const failure = await life.stopped();
  await server.close();
  endServedTrace(trace, failure, clock.now());
  if (!options.json) io.stderr.write(`stopped after ${emulator.snapshot().requests} request(s)\n`);
}

type ProviderModule = typeof import('../provider/index.ts');

function latencyFrom(options: ServeOptions, provider: ProviderModule) {
  const base = provider.LATENCY_PROFILES[options.latency];
  if (!base)
    throw new FleetbenchError(
      'E_USAGE',
      `--latency ${options.latency}: expected ${Object.keys(provider.LATENCY_PROFILES).join(', ')}`,
    );
  let profile = base;
  if (options.ttft !== undefined) {
    const parts = options.ttft.split(':').map(Number);
    const median = parts[0] ?? Number.NaN;
    const p95 = parts[1] ?? median;
    if (!(median >= 0 && p95 >= median && p95 <= PROVIDER_LIMITS.maxTtftMs))
      throw new FleetbenchError(
        'E_USAGE',
        `--ttft ${options.ttft}: expected MEDIAN[:P95] in ms, P95 >= MEDIAN, at most ${PROVIDER_LIMITS.maxTtftMs} (docs/limits.md)`,
      );
    profile = {
      ...profile,
      name: `${profile.name}+ttft`,
      ttft:
        median === p95 || median === 0 ? { kind: 'fixed', ms: median } : { kind: 'lognormal', median, p95 },
    };
  }
  if (options.outputTps !== undefined)
    profile = {
      ...profile,
      name: `${profile.name}+tps`,
      outputTokensPerSec: options.outputTps,
      chunkMs: profile.chunkMs || 50,
    };
  return profile;
}

export function limitsFrom(flags: string[], keys: readonly string[]): Record<string, number> {
  const limits: Record<string, number> = {};
  for (const flag of flags) {
    const [key = '', value = ''] = flag.split('=', 2);
    const n = Number(value);
    if (!keys.includes(key) || !Number.isInteger(n) || n < 1 || n > 1e12)
      throw new FleetbenchError(
        'E_USAGE',
        `--limit ${flag}: expected KEY=N with KEY one of ${keys.join(', ')} and N from 1 to 10^12`,
      );
    limits[key] = n;
  }
  return limits;
}

/**
 * The `--model` flags, each `NAME[=WINDOW[/CAP]]`; the first bad one is refused naming it and the
 * bound (docs/limits.md). Shared with `fleetbench world`.
 */
export function modelsFrom(
  flags: string[],
  parse: typeof import('../provider/index.ts')['parseModelSpecs'],
): import('../provider/index.ts').ExtraModel[] {
  const models = parse(flags);
  if (Array.isArray(models)) return models;
  throw new FleetbenchError('E_USAGE', `--model ${flags[models.index] ?? ''}: ${models.reason}`);
}
