/**
 * Kubernetes manifests for a distributed matrix or live run (docs/distributed.md): fleetbench
 * schedules nothing itself; an Indexed Job runs one segment per index (`completionMode: Indexed`,
 * the pod's `JOB_COMPLETION_INDEX`, our `FLEETBENCH_SEGMENTS`), every pod writes into one shared
 * volume, and a merge Job, created suspended, joins the segments once it is resumed after the
 * Indexed Job completes. A live run adds what its segments share: the GitHub emulator (and the
 * reference control plane when it is the target) as a Deployment + Service each, and the
 * emulator's admin token in a Secret. Plain objects, validated in tests against the Kubernetes
 * OpenAPI schema.
 */

import { FleetbenchError } from '../base/errors.ts';
import { MAX_SEGMENTS } from '../base/limits.ts';
import { COUNT_ENV } from '../base/segment.ts';
import type { TargetRef } from '../contract/target-ref.ts';

/** What a matrix and a live run share: the objects' names, the results volume and every pod. */
export interface SegmentedJobOptions {
  /** Prefix of every object's name (a DNS label). */
  name: string;
  namespace?: string;
  image: string;
  segments: number;
  /** Pods at a time (default: every segment at once). */
  parallelism?: number;
  /** An existing PersistentVolumeClaim; otherwise one is written. */
  claim?: string;
  storage?: string;
  storageClass?: string;
  /** ReadWriteMany when pods may land on several nodes; ReadWriteOnce is enough on one (kind). */
  accessMode?: 'ReadWriteMany' | 'ReadWriteOnce';
  /** CPU each pod asks for (a virtual matrix run is one core per --jobs). */
  cpu?: string;
  memory?: string;
  /** Retries of one index before it counts as failed (backoffLimitPerIndex). */
  retries?: number;
}

export interface MatrixManifestOptions extends SegmentedJobOptions {
  /** `fleetbench matrix` arguments (--cells, --set, --repeat, --seed, --jobs), as given. */
  matrixArgs: string[];
}

export type Manifest = Record<string, unknown> & { apiVersion: string; kind: string };

const MOUNT = '/results';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function matrixManifests(o: MatrixManifestOptions): Manifest[] {
  const jobs = segmentedJobs(o, { volumes: [], volumeMounts: [] });
  const parallelism = o.parallelism ?? o.segments;
  if (!Number.isInteger(parallelism) || parallelism < 1)
    throw new FleetbenchError('E_USAGE', `--parallelism: expected a positive integer, got ${parallelism}`);
  return [
    ...jobs.claim(),
    // One index failing is retried on its own; the others go on (re-running an index
    // replaces its output).
    jobs.segments(Math.min(parallelism, o.segments), ['matrix', ...o.matrixArgs, '--out', jobs.out], []),
    // Created suspended: resumed (kubectl patch) once the Indexed Job is complete, so it never
    // merges half a matrix. A partial merge exits 2 and names the missing segments.
    jobs.merge(),
  ];
}

/**
 * The objects a matrix and a live run build alike: names and labels, the results volume (and its
 * claim unless one is given), the Indexed Job of segments and the merge Job, created suspended and
 * resumed once the Indexed Job is complete, so it never merges half a matrix or run. `extra` adds
 * volumes (and their mounts) to the segment and merge pods.
 */
function segmentedJobs(o: SegmentedJobOptions, extra: { volumes: unknown[]; volumeMounts: unknown[] }) {
  checkName(o.name);
  if (!Number.isInteger(o.segments) || o.segments < 1 || o.segments > MAX_SEGMENTS)
    throw new FleetbenchError('E_USAGE', `--segments: expected 1 to ${MAX_SEGMENTS}, got ${o.segments}`);
  const claimName = o.claim ?? `${o.name}-results`;
  const out = `${MOUNT}/${o.name}`;
  const labels = { 'app.kubernetes.io/name': 'fleetbench', 'app.kubernetes.io/instance': o.name };
  const selector = (component: string) => ({ ...labels, 'app.kubernetes.io/component': component });
  const meta = (name: string, component: string) => ({
    name,
    ...(o.namespace ? { namespace: o.namespace } : {}),
    labels: selector(component),
  });
  const volume = { name: 'results', persistentVolumeClaim: { claimName } };
  const mount = { name: 'results', mountPath: MOUNT };
  const resources = {
    requests: { cpu: o.cpu ?? '1', memory: o.memory ?? '1Gi' },
    limits: { memory: o.memory ?? '1Gi' },
  };
  const container = (name: string, args: string[], env: unknown[]) => ({
    name,
    image: o.image,
    args,
    env: [{ name: 'NO_COLOR', value: '1' }, ...env],
    volumeMounts: [mount, ...extra.volumeMounts],
    resources,
  });
  const job = (
    name: string,
    component: string,
    spec: Record<string, unknown>,
    pod: ReturnType<typeof container>,
  ) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: meta(name, component),
    spec: {
      ...spec,
      template: {
        metadata: { labels: selector(component) },
        spec: { restartPolicy: 'Never', containers: [pod], volumes: [volume, ...extra.volumes] },
      },
    },
  });
  return {
    out,
    meta,
    selector,
    volume,
    mount,
    resources,
    /** The results volume's claim, unless an existing one is named. */
    claim: (): Manifest[] =>
      o.claim
        ? []
        : [
            {
              apiVersion: 'v1',
              kind: 'PersistentVolumeClaim',
              metadata: meta(claimName, 'results'),
              spec: {
                accessModes: [o.accessMode ?? 'ReadWriteMany'],
                resources: { requests: { storage: o.storage ?? '5Gi' } },
                ...(o.storageClass ? { storageClassName: o.storageClass } : {}),
              },
            },
          ],
    /** The Indexed Job: JOB_COMPLETION_INDEX is set by Kubernetes in every pod of it. */
    segments: (parallelism: number, args: string[], env: unknown[]): Manifest =>
      job(
        o.name,
        'segments',
        {
          completionMode: 'Indexed',
          completions: o.segments,
          parallelism,
          backoffLimitPerIndex: o.retries ?? 1,
        },
        container('segment', args, [{ name: COUNT_ENV, value: String(o.segments) }, ...env]),
      ),
    merge: (): Manifest =>
      job(
        `${o.name}-merge`,
        'merge',
        { suspend: true, completions: 1, backoffLimit: 0 },
        container('merge', ['merge', out, '--report'], []),
      ),
  };
}

export interface RunManifestOptions extends SegmentedJobOptions {
  /** `fleetbench run` arguments after the scenario (--set, --seed, --time-scale), as given. */
  runArgs: string[];
  /** The scenario as the pods name it: a built-in name, or the file's name in `scenarioFile`. */
  scenario: string;
  /** A scenario file's text, shipped as a ConfigMap mounted at /scenario. */
  scenarioFile?: { name: string; text: string };
  /** `reference`: serve the reference control plane in the cluster; else a target the pods reach. */
  target: TargetRef;
  /** `fleetbench github serve` arguments from the scenario (fixtures, time scale, latency, limits). */
  emulatorArgs: string[];
  /** The emulator's admin token, put in a Secret (the segments' world acts through it). */
  adminToken: string;
}

const GITHUB_PORT = 8080;
const TARGET_PORT = 7070;
const SCENARIO_MOUNT = '/scenario';
const ADMIN_ENV = 'FLEETBENCH_GITHUB_ADMIN_TOKEN';

/** The objects of a live run in segments; the segments' args name the Services' DNS names. */
export function runManifests(o: RunManifestOptions): Manifest[] {
  const scenarioVolume = o.scenarioFile
    ? [{ name: 'scenario', configMap: { name: `${o.name}-scenario` } }]
    : [];
  const scenarioMount = o.scenarioFile
    ? [{ name: 'scenario', mountPath: SCENARIO_MOUNT, readOnly: true }]
    : [];
  const jobs = segmentedJobs(o, { volumes: scenarioVolume, volumeMounts: scenarioMount });
  const parallelism = o.parallelism ?? o.segments;
  // Every segment must run at once: one that waits for a free slot misses the shared timeline.
  if (parallelism < o.segments)
    throw new FleetbenchError(
      'E_USAGE',
      `--parallelism: a live run's segments run side by side on one timeline: ${parallelism} pods at a time cannot run ${o.segments} segments`,
    );
  const { out, meta, selector, volume, mount, resources } = jobs;
  const secret = `${o.name}-github-admin`;
  const adminEnv = { name: ADMIN_ENV, valueFrom: { secretKeyRef: { name: secret, key: 'token' } } };
  const githubUrl = `http://${o.name}-github:${GITHUB_PORT}`;
  const targetUrl = o.target.kind === 'reference' ? `http://${o.name}-target:${TARGET_PORT}` : o.target.text;
  const scenarioArg = o.scenarioFile ? `${SCENARIO_MOUNT}/${o.scenarioFile.name}` : o.scenario;
  const manifests: Manifest[] = [];
  manifests.push({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: meta(secret, 'github'),
    type: 'Opaque',
    stringData: { token: o.adminToken },
  });
  if (o.scenarioFile)
    manifests.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: meta(`${o.name}-scenario`, 'scenario'),
      data: { [o.scenarioFile.name]: o.scenarioFile.text },
    });
  manifests.push(...jobs.claim());
  // A server the segments share: one replica (its state is the run's), a Service in front.
  const server = (
    component: string,
    port: number,
    args: string[],
    extra: { env?: unknown[]; volumes?: unknown[]; volumeMounts?: unknown[] },
  ): Manifest[] => [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(`${o.name}-${component}`, component),
      spec: {
        replicas: 1,
        // One at a time: two emulators (or control planes) would split the run's state.
        strategy: { type: 'Recreate' },
        selector: { matchLabels: selector(component) },
        template: {
          metadata: { labels: selector(component) },
          spec: {
            containers: [
              {
                name: component,
                image: o.image,
                args,
                env: [{ name: 'NO_COLOR', value: '1' }, ...(extra.env ?? [])],
                ports: [{ name: 'http', containerPort: port }],
                readinessProbe: { tcpSocket: { port }, periodSeconds: 2 },
                volumeMounts: extra.volumeMounts ?? [],
                resources,
              },
            ],
            volumes: extra.volumes ?? [],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(`${o.name}-${component}`, component),
      spec: { selector: selector(component), ports: [{ name: 'http', port, targetPort: port }] },
    },
  ];
  manifests.push(
    ...server(
      'github',
      GITHUB_PORT,
      [
        'github',
        'serve',
        '--host',
        '0.0.0.0',
        '--port',
        String(GITHUB_PORT),
        ...o.emulatorArgs,
        '--admin-token',
        `$(${ADMIN_ENV})`,
        // Its API calls, for the merge: on the shared volume beside the segments.
        '--trace',
        `${out}/github/trace.jsonl`,
      ],
      { env: [adminEnv], volumes: [volume], volumeMounts: [mount] },
    ),
  );
  if (o.target.kind === 'reference')
    manifests.push(
      ...server(
        'target',
        TARGET_PORT,
        ['reference', 'serve', '--host', '0.0.0.0', '--port', String(TARGET_PORT), '--state', '/state'],
        {
          volumes: [{ name: 'state', emptyDir: {} }],
          volumeMounts: [{ name: 'state', mountPath: '/state' }],
        },
      ),
    );
  manifests.push(
    // A retried index rejoins the run while it lasts (its start is agreed on the volume).
    jobs.segments(
      o.segments,
      [
        'run',
        scenarioArg,
        '--clock',
        'real',
        '--target',
        targetUrl,
        '--github',
        githubUrl,
        ...o.runArgs,
        '--out',
        out,
        '--no-progress',
        '--metrics-linger',
        '0',
      ],
      [adminEnv],
    ),
    jobs.merge(),
  );
  return manifests;
}

function checkName(name: string): void {
  if (!DNS_LABEL.test(name) || name.length > 40)
    throw new FleetbenchError(
      'E_USAGE',
      `--name: '${name}' is not usable as a Kubernetes name (lower-case letters, digits and '-', at most 40 characters)`,
    );
}
