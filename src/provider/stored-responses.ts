/**
 * The Responses API's stored responses (docs/provider-emulator.md, "Stored responses"). OpenAI
 * keeps a response made with `store` (its default) so that a later request can go on from it
 * with `previous_response_id` instead of sending the conversation again, and so that it can be
 * read back (`GET /v1/responses/{id}`) or deleted. Going on from a response costs as much input
 * as sending its whole context again: the vendor counts the previous turns as the request's input.
 *
 * Each response keeps only its own items (its request's input and its output) and a link to the
 * response it went on from, so a long chain is not copied at every turn. Bounded
 * (PROVIDER_LIMITS.storedResponses): the oldest forgotten first, and a response is judged by its
 * whole chain's characters, so everything the kept responses reach is within the bound.
 */
import { PROVIDER_LIMITS } from '../base/limits.ts';
import type { ConversationItem } from './conversation.ts';
import type { RenderInput } from './render.ts';

export interface StoredResponse {
  id: string;
  /** The response it went on from (undefined: the first of its chain). */
  previous: StoredResponse | undefined;
  /** Its request's own items, then its output. */
  items: ConversationItem[];
  /** Characters of this response's items and of every response before it in its chain. */
  chainChars: number;
  /** What renders it whole again, for `GET /v1/responses/{id}`. */
  render: RenderInput;
  /** Its output items by their ids (what an `item_reference` names). */
  outputs: ReadonlyArray<[string, ConversationItem]>;
}

/** Characters an item holds: what the bound counts. */
function itemChars(item: ConversationItem): number {
  switch (item.kind) {
    case 'tool-call':
      return item.name.length + item.args.length + item.callId.length;
    case 'tool-result':
      return item.callId.length + item.text.length;
    default:
      return item.text.length;
  }
}

export class StoredResponses {
  private readonly byId = new Map<string, StoredResponse>();
  /** The kept responses' output items by their ids (`msg_…`, `fc_…`), for `item_reference`. */
  private readonly items = new Map<string, ConversationItem>();
  private chars = 0;
  private readonly maxResponses: number;
  private readonly maxChars: number;

  constructor(limits: { maxResponses: number; maxChars: number } = PROVIDER_LIMITS.storedResponses) {
    this.maxResponses = limits.maxResponses;
    this.maxChars = limits.maxChars;
  }

  get(id: string): StoredResponse | undefined {
    return this.byId.get(id);
  }

  /** An output item of a kept response, by its id. */
  item(id: string): ConversationItem | undefined {
    return this.items.get(id);
  }

  /** Every item of the chain that ends at `response`, oldest first. */
  context(response: StoredResponse): ConversationItem[] {
    const chain: StoredResponse[] = [];
    for (let r: StoredResponse | undefined = response; r !== undefined; r = r.previous) chain.push(r);
    const items: ConversationItem[] = [];
    for (let i = chain.length - 1; i >= 0; i--) for (const item of chain[i]!.items) items.push(item);
    return items;
  }

  /**
   * Keeps a response. One whose chain alone is over the bound is not kept (a later request
   * naming it is told it is not found, as for one made with `store: false`).
   */
  put(
    id: string,
    previous: StoredResponse | undefined,
    items: ConversationItem[],
    render: RenderInput,
    outputs: ReadonlyArray<[string, ConversationItem]> = [],
  ): void {
    let chainChars = previous?.chainChars ?? 0;
    for (const item of items) chainChars += itemChars(item);
    if (chainChars > this.maxChars) return;
    this.delete(id);
    this.byId.set(id, { id, previous, items, chainChars, render, outputs });
    for (const [itemId, item] of outputs) this.items.set(itemId, item);
    this.chars += chainChars;
    for (const oldest of this.byId.keys()) {
      if (this.byId.size <= this.maxResponses && this.chars <= this.maxChars) break;
      this.delete(oldest);
    }
  }

  /** Forgets a response (and its output items); false when it was not kept. */
  delete(id: string): boolean {
    const response = this.byId.get(id);
    if (response === undefined) return false;
    this.byId.delete(id);
    for (const [itemId] of response.outputs) this.items.delete(itemId);
    this.chars -= response.chainChars;
    return true;
  }
}
