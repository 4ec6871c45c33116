/**
 * The provider emulator on 127.0.0.1 behind the vendors' official SDKs (no retries, so a refusal
 * is seen as given), for the test files that drive it as a user's code does. Every server started
 * is closed by `closeSdkServers` (an afterEach of the file).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Rng } from '../../src/base/rng.ts';
import { RealClock } from '../../src/clock/real.ts';
import {
  ProviderEmulator,
  type ProviderEmulatorOptions,
  startProviderServer,
} from '../../src/provider/index.ts';
import { MemorySink } from '../../src/trace/writer.ts';

const servers: Array<{ close(): Promise<void> }> = [];

export async function closeSdkServers(): Promise<void> {
  await Promise.all(servers.splice(0).map((server) => server.close()));
}

/** An emulator on the real clock with `seed`, its server, both SDKs pointed at it, and its provider spans. */
export async function serveWithSdks(options: Partial<ProviderEmulatorOptions> = {}, seed = 3) {
  const trace = new MemorySink();
  const emulator = new ProviderEmulator({ clock: new RealClock(), rng: new Rng(seed), trace, ...options });
  const server = await startProviderServer({ emulator });
  servers.push(server);
  const anthropic = new Anthropic({ apiKey: 'k-anthropic', baseURL: server.url, maxRetries: 0 });
  const openai = new OpenAI({ apiKey: 'k-openai', baseURL: `${server.url}/v1`, maxRetries: 0 });
  const spans = () =>
    trace.records.flatMap((record) =>
      record.kind === 'span' && record.name === 'provider.request' ? [record] : [],
    );
  return { emulator, url: server.url, anthropic, openai, spans };
}
