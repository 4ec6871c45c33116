/**
 * The embedded default target: the reference control plane, in-process, on the run's clock.
 */
import type {
  ActorCounts,
  ActorFootprint,
  ActorPhase,
  ActorReply,
  ActorStepRequest,
  ProviderFault,
  RestartKind,
  RunNotice,
  RunStartSpec,
  SessionSpec,
  SessionState,
  SessionStateListener,
  Target,
} from '../contract/types.ts';
import { describeStrategy } from '../reference/config.ts';
import {
  ReferenceControlPlane as Plane,
  type ReferenceControlPlane,
  type ReferenceDeps,
} from '../reference/control-plane.ts';

export class ReferenceTarget implements Target {
  readonly name = 'reference';
  readonly plane: ReferenceControlPlane;

  private readonly describeLines: string[];

  constructor(deps: ReferenceDeps) {
    this.plane = new Plane(deps);
    this.describeLines = describeStrategy(deps.config.polling);
  }

  /** What the run header says of a modelled strategy (which gh, which traces). */
  describe(): string[] {
    return this.describeLines;
  }

  start(): Promise<void> {
    return this.plane.start();
  }

  stop(): Promise<void> {
    return this.plane.stop();
  }

  onFailure(listener: (error: Error) => void): void {
    this.plane.onFailure(listener);
  }

  atEnd(): Promise<void> {
    return this.plane.atEnd();
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

  // Actors (park/wake): the control plane's ActorHost.
  createActor(id: string, base: ActorFootprint, phase: ActorPhase): Promise<ActorReply> {
    return this.plane.actors.create(id, base, phase);
  }

  parkActor(id: string, phase: ActorPhase): Promise<ActorReply> {
    return this.plane.actors.park(id, phase);
  }

  wakeActor(id: string, phase: ActorPhase): Promise<ActorReply> {
    return this.plane.actors.wake(id, phase);
  }

  actorStep(id: string, step: ActorStepRequest, phase: ActorPhase): Promise<ActorReply> {
    return this.plane.actors.step(id, step, phase);
  }

  async actorCounts(): Promise<ActorCounts> {
    return this.plane.actors.counts();
  }

  // Native runs (runs.ts).
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
