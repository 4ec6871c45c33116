/**
 * The models the provider emulator serves: each model the pinned CLIs default to or are
 * configured with (codex 0.169.0, Claude Code 2.1.328, opencode 1.18.33 as fleetbench sets it up),
 * with the context window and output cap its vendor publishes. A request naming another model is
 * refused as the vendor refuses it (404 `not_found_error` / `model_not_found`); a request over the
 * context window or asking for more output than the cap gets the vendor's 400. Where each number
 * comes from: docs/provider-emulator.md, "Models".
 */

export type ModelVendor = 'anthropic' | 'openai';

export interface ModelInfo {
  id: string;
  vendor: ModelVendor;
  /** Other names the API takes for it (Anthropic's dated ids and aliases). */
  aliases?: readonly string[];
  displayName: string;
  /** Tokens of input and output together. */
  contextWindow: number;
  /** The most input one request may carry (OpenAI states it apart: the window less the output cap). */
  maxInputTokens: number;
  /** The most output tokens one request may ask for (`max_tokens`, `max_output_tokens`). */
  maxOutputTokens: number;
  /** The shortest prefix the vendor caches, tokens. */
  minCacheTokens: number;
}

const anthropic = (
  id: string,
  displayName: string,
  contextWindow: number,
  maxOutputTokens: number,
  aliases: string[] = [],
): ModelInfo => ({
  id,
  vendor: 'anthropic',
  aliases,
  displayName,
  contextWindow,
  // Anthropic counts the prompt alone against the window (input + max_tokens over it is capped, not refused).
  maxInputTokens: contextWindow,
  maxOutputTokens,
  // Anthropic's documented minimum cacheable prompt for its Sonnet and Opus models.
  minCacheTokens: 1024,
});

const openai = (
  id: string,
  displayName: string,
  contextWindow: number,
  maxOutputTokens: number,
): ModelInfo => ({
  id,
  vendor: 'openai',
  displayName,
  contextWindow,
  maxInputTokens: contextWindow - maxOutputTokens,
  maxOutputTokens,
  // OpenAI caches prompts of 1,024 tokens and more.
  minCacheTokens: 1024,
});

/** The table; docs/provider-emulator.md lists it with the source of every number. */
export const MODELS: readonly ModelInfo[] = [
  // Claude Code 2.1.328's default for an API key with no model set.
  anthropic('claude-opus-5-5', 'Claude Opus 5.5', 1_000_000, 128_000),
  anthropic('claude-opus-5', 'Claude Opus 5', 1_000_000, 128_000),
  anthropic('claude-sonnet-5-5', 'Claude Sonnet 5.5', 1_000_000, 128_000),
  anthropic('claude-haiku-5-5', 'Claude Haiku 5.5', 1_000_000, 128_000),
  anthropic('claude-opus-4-7', 'Claude Opus 4.7', 1_000_000, 128_000),
  anthropic('claude-sonnet-4-6', 'Claude Sonnet 4.6', 1_000_000, 64_000),
  // fleetbench's agents run Claude Code with this one (src/agents/catalog.ts).
  anthropic('claude-sonnet-4-5-20250929', 'Claude Sonnet 4.5', 200_000, 64_000, ['claude-sonnet-4-5']),
  anthropic('claude-haiku-4-5-20251001', 'Claude Haiku 4.5', 200_000, 64_000, ['claude-haiku-4-5']),
  // codex 0.169.0's default with no model set.
  openai('gpt-6.1-sol', 'GPT-6.1 Sol', 1_050_000, 128_000),
  // fleetbench's agents run codex with this one (src/agents/catalog.ts).
  openai('gpt-5.5', 'GPT-5.5', 1_050_000, 128_000),
];

/**
 * fleetbench's own model name (opencode is configured with it, as any OpenAI-compatible
 * provider's model): no vendor's, with a window as large as the largest above.
 */
export const FLEETBENCH_MODEL: ModelInfo = openai('fleetbench-model', 'fleetbench model', 1_050_000, 128_000);

const BY_NAME = new Map<string, ModelInfo>();
for (const model of [...MODELS, FLEETBENCH_MODEL]) {
  BY_NAME.set(model.id, model);
  for (const alias of model.aliases ?? []) BY_NAME.set(alias, model);
}

/** The model a request names, by id or alias; undefined when the table has none by that name. */
export function modelNamed(name: string): ModelInfo | undefined {
  return BY_NAME.get(name);
}

/** Every model the table serves, in its order (the model lists' `data`). */
export const LISTED_MODELS: readonly ModelInfo[] = [...MODELS, FLEETBENCH_MODEL];

/**
 * The `created` / `created_at` every listed model reports: fleetbench's, not a vendor's release
 * date (the lists' clients read ids and limits, not dates).
 */
export const MODEL_CREATED = '2026-01-01T00:00:00Z';
