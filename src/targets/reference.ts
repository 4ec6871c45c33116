/**
 * The embedded default target: the reference control plane, in-process, on the run's clock.
 */
import {
  ReferenceControlPlane as Plane,
  type ReferenceControlPlane,
  type ReferenceDeps,
} from '../reference/control-plane.ts';
import type {
  ProviderFault,
  RestartKind,
  RunNotice,
  RunStartSpec,
  SessionSpec,
  SessionState,
  SessionStateListener,
  Target,
} from './types.ts';

export class ReferenceTarget implements Target {
  readonly name = 'reference';
  readonly plane: ReferenceControlPlane;

  constructor(deps: ReferenceDeps) {
    this.plane = new Plane(deps);
  }

  start(): Promise<void> {
    return this.plane.start();
  }

  stop(): Promise<void> {
    return this.plane.stop();
  }

  async createSession(spec: SessionSpec): Promise<void> {
    this.plane.createSession(spec);
  }

  async sessionCounts(): Promise<Partial<Record<SessionState, number>>> {
    return this.plane.counts();
  }

  onSessionState(listener: SessionStateListener): void {
    this.plane.sessions.onChange((record, from, to) => listener(record.id, from, to));
  }

  restart(kind: RestartKind): Promise<{ outageMs: number }> {
    return this.plane.restart(kind);
  }

  async flushCaches(): Promise<void> {
    this.plane.flushCaches();
  }

  async setDashboard(open: boolean): Promise<void> {
    this.plane.setDashboard(open);
  }

  startRun(spec: RunStartSpec): Promise<{ run: string; start: 'cold' | 'warm' }> {
    return this.plane.runs.startRun(spec.session, spec.adapter, spec.input);
  }

  sendInput(session: string, input: string): Promise<void> {
    return this.plane.runs.sendInput(session, input);
  }

  endRun(session: string): Promise<void> {
    return this.plane.runs.endRun(session);
  }

  onRunNotice(listener: (notice: RunNotice) => void): void {
    this.plane.runs.onNotice(listener);
  }

  async providerFault(fault: ProviderFault): Promise<void> {
    this.plane.runs.providerFault(fault);
  }
}
