/**
 * Kubernetes manifests for a distributed matrix (docs/distributed.md): fleetbench schedules
 * nothing itself; an Indexed Job runs one segment per index (`completionMode: Indexed`, the pod's
 * `JOB_COMPLETION_INDEX`, our `FLEETBENCH_SEGMENTS`), every pod writes into one shared volume,
 * and a merge Job, created suspended, joins the segments once it is resumed after the Indexed Job
 * completes. Plain objects, validated in tests against the Kubernetes OpenAPI schema.
 */
import { FleetbenchError } from '../errors.ts';
import { COUNT_ENV, MAX_SEGMENTS } from './segment.ts';

export interface MatrixManifestOptions {
  /** Prefix of every object's name (a DNS label). */
  name: string;
  namespace?: string;
  image: string;
  segments: number;
  /** Pods at a time (default: every segment at once). */
  parallelism?: number;
  /** `fleetbench matrix` arguments (--cells, --set, --repeat, --seed, --jobs), as given. */
  matrixArgs: string[];
  /** An existing PersistentVolumeClaim; otherwise one is written. */
  claim?: string;
  storage?: string;
  storageClass?: string;
  /** ReadWriteMany when pods may land on several nodes; ReadWriteOnce is enough on one (kind). */
  accessMode?: 'ReadWriteMany' | 'ReadWriteOnce';
  /** CPU each pod asks for (a virtual run is one core per --jobs). */
  cpu?: string;
  memory?: string;
  /** Retries of one index before it counts as failed (backoffLimitPerIndex). */
  retries?: number;
}

export type Manifest = Record<string, unknown> & { apiVersion: string; kind: string };

const MOUNT = '/results';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function matrixManifests(o: MatrixManifestOptions): Manifest[] {
  if (!DNS_LABEL.test(o.name) || o.name.length > 40)
    throw new FleetbenchError(
      'E_USAGE',
      `--name: '${o.name}' is not usable as a Kubernetes name (lower-case letters, digits and '-', at most 40 characters)`,
    );
  if (!Number.isInteger(o.segments) || o.segments < 1 || o.segments > MAX_SEGMENTS)
    throw new FleetbenchError('E_USAGE', `--segments: expected 1 to ${MAX_SEGMENTS}, got ${o.segments}`);
  const parallelism = o.parallelism ?? o.segments;
  if (!Number.isInteger(parallelism) || parallelism < 1)
    throw new FleetbenchError('E_USAGE', `--parallelism: expected a positive integer, got ${parallelism}`);
  const claim = o.claim ?? `${o.name}-results`;
  const out = `${MOUNT}/${o.name}`;
  const labels = { 'app.kubernetes.io/name': 'fleetbench', 'app.kubernetes.io/instance': o.name };
  const meta = (name: string, component: string) => ({
    name,
    ...(o.namespace ? { namespace: o.namespace } : {}),
    labels: { ...labels, 'app.kubernetes.io/component': component },
  });
  const volume = { name: 'results', persistentVolumeClaim: { claimName: claim } };
  const mount = { name: 'results', mountPath: MOUNT };
  const resources = {
    requests: { cpu: o.cpu ?? '1', memory: o.memory ?? '1Gi' },
    limits: { memory: o.memory ?? '1Gi' },
  };
  const container = (name: string, args: string[], env: Array<{ name: string; value: string }> = []) => ({
    name,
    image: o.image,
    args,
    env: [{ name: 'NO_COLOR', value: '1' }, ...env],
    volumeMounts: [mount],
    resources,
  });
  const manifests: Manifest[] = [];
  if (!o.claim)
    manifests.push({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: meta(claim, 'results'),
      spec: {
        accessModes: [o.accessMode ?? 'ReadWriteMany'],
        resources: { requests: { storage: o.storage ?? '5Gi' } },
        ...(o.storageClass ? { storageClassName: o.storageClass } : {}),
      },
    });
  manifests.push({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: meta(o.name, 'segments'),
    spec: {
      completionMode: 'Indexed',
      completions: o.segments,
      parallelism: Math.min(parallelism, o.segments),
      // One index failing is retried on its own; the others go on (re-running an index
      // replaces its output).
      backoffLimitPerIndex: o.retries ?? 1,
      template: {
        metadata: { labels: { ...labels, 'app.kubernetes.io/component': 'segments' } },
        spec: {
          restartPolicy: 'Never',
          containers: [
            // JOB_COMPLETION_INDEX is set by Kubernetes in every pod of an Indexed Job.
            container(
              'segment',
              ['matrix', ...o.matrixArgs, '--out', out],
              [{ name: COUNT_ENV, value: String(o.segments) }],
            ),
          ],
          volumes: [volume],
        },
      },
    },
  });
  manifests.push({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: meta(`${o.name}-merge`, 'merge'),
    spec: {
      // Created suspended: resumed (kubectl patch) once the Indexed Job is complete, so it never
      // merges half a matrix. A partial merge exits 2 and names the missing segments.
      suspend: true,
      completions: 1,
      backoffLimit: 0,
      template: {
        metadata: { labels: { ...labels, 'app.kubernetes.io/component': 'merge' } },
        spec: {
          restartPolicy: 'Never',
          containers: [container('merge', ['merge', out, '--report'])],
          volumes: [volume],
        },
      },
    },
  });
  return manifests;
}
