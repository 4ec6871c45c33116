/** When api calls ran: start/end bins (bursts, concurrency, call series) and latency by protocol. */
import type { ApiRecord } from '../../trace/schema.ts';
import { StartEndBins, type StartEndBinsState } from '../bins.ts';
import { LatencyHistogram, type LatencyHistogramState } from '../histogram.ts';
import type { Accumulator } from './accumulator.ts';

export interface ApiTimingState {
  bins: StartEndBinsState;
  rest: LatencyHistogramState;
  graphql: LatencyHistogramState;
}

export class ApiTiming implements Accumulator<ApiTimingState> {
  bins = new StartEndBins();
  rest = new LatencyHistogram();
  graphql = new LatencyHistogram();

  addApi(r: ApiRecord): void {
    (r.protocol === 'graphql' ? this.graphql : this.rest).record(r.dur);
    this.bins.add(r.t, r.t + r.dur);
  }

  /** All calls: the REST and GraphQL histograms added (exact; cheaper than recording twice). */
  allLatency(): LatencyHistogram {
    const all = new LatencyHistogram();
    all.merge(this.rest);
    all.merge(this.graphql);
    return all;
  }

  merge(other: ApiTiming): void {
    this.bins.merge(other.bins);
    this.rest.merge(other.rest);
    this.graphql.merge(other.graphql);
  }

  toState(): ApiTimingState {
    return { bins: this.bins.toState(), rest: this.rest.toState(), graphql: this.graphql.toState() };
  }

  static fromState(state: ApiTimingState): ApiTiming {
    const out = new ApiTiming();
    out.bins = StartEndBins.fromState(state.bins);
    out.rest = LatencyHistogram.fromState(state.rest);
    out.graphql = LatencyHistogram.fromState(state.graphql);
    return out;
  }

  static transferables(state: ApiTimingState): ArrayBuffer[] {
    return [
      state.bins.chunks.buffer as ArrayBuffer,
      state.bins.starts.buffer as ArrayBuffer,
      state.bins.ends.buffer as ArrayBuffer,
    ];
  }
}
