import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { matrixManifests } from '../src/distributed/k8s.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir('fleetbench-k8s-');
const CELLS = 'S2-T1-1,S4-T1-1';

interface Container {
  args: string[];
  env: Array<{ name: string; value: string }>;
}
// biome-ignore lint/suspicious/noExplicitAny: manifests are plain JSON read back from YAML
type Doc = any;

/** Validates one object against the Kubernetes OpenAPI schema (kubernetes-models' ajv validators). */
function validate(doc: Doc): void {
  if (doc.kind === 'Job') new Job(doc).validate();
  else if (doc.kind === 'PersistentVolumeClaim') new PersistentVolumeClaim(doc).validate();
  else if (doc.kind === 'Deployment') new Deployment(doc).validate();
  else if (doc.kind === 'Service') new Service(doc).validate();
  else if (doc.kind === 'Secret') new Secret(doc).validate();
  else if (doc.kind === 'ConfigMap') new ConfigMap(doc).validate();
  else throw new Error(`unexpected kind ${doc.kind}`);
}

describe('fleetbench k8s manifest run', () => {
  it('writes the Secret, ConfigMap, PVC, emulator and target Deployments + Services, Indexed Job and suspended merge Job, all schema-valid', async () => {
    const scenario = new URL('./fixtures/live-segments.yaml', import.meta.url).pathname;
    const r = await cli([
      'k8s',
      'manifest',
      'run',
      scenario,
      '--segments',
      '3',
      '--time-scale',
      '30',
      '--image',
      'ghcr.io/acme/fleetbench:0.1.0',
      '--namespace',
      'bench',
      '--access-mode',
      'ReadWriteOnce',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const docs: Doc[] = parseAllDocuments(r.stdout).map((d) => d.toJS());
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      'Secret/fleetbench-run-github-admin',
      'ConfigMap/fleetbench-run-scenario',
      'PersistentVolumeClaim/fleetbench-run-results',
      'Deployment/fleetbench-run-github',
      'Service/fleetbench-run-github',
      'Deployment/fleetbench-run-target',
      'Service/fleetbench-run-target',
      'Job/fleetbench-run',
      'Job/fleetbench-run-merge',
    ]);
    for (const doc of docs) {
      validate(doc);
      expect(doc.metadata.namespace).toBe('bench');
    }
    const byName = (name: string) => docs.find((d) => d.metadata.name === name && d.kind !== 'Service');
    // The scenario file travels as a ConfigMap, byte for byte.
    expect(byName('fleetbench-run-scenario').data['live-segments.yaml']).toBe(readFileSync(scenario, 'utf8'));
    const job = byName('fleetbench-run');
    expect(job.spec).toMatchObject({ completionMode: 'Indexed', completions: 3, parallelism: 3 });
    const pod = job.spec.template.spec.containers[0];
    expect(pod.args.slice(0, 8)).toEqual([
      'run',
      '/scenario/live-segments.yaml',
      '--clock',
      'real',
      '--target',
      'http://fleetbench-run-target:7070',
      '--github',
      'http://fleetbench-run-github:8080',
    ]);
    expect(pod.args).toContain('/results/fleetbench-run');
    expect(pod.env).toContainEqual({ name: 'FLEETBENCH_SEGMENTS', value: '3' });
    expect(pod.env).toContainEqual({
      name: 'FLEETBENCH_GITHUB_ADMIN_TOKEN',
      valueFrom: { secretKeyRef: { name: 'fleetbench-run-github-admin', key: 'token' } },
    });
    // The emulator: the scenario's fixtures and time scale, its trace on the shared volume.
    const emulator = byName('fleetbench-run-github').spec.template.spec.containers[0];
    expect(emulator.args.join(' ')).toContain('--repos 1 --issues-per-repo 18 --seed 11 --time-scale 30');
    expect(emulator.args.join(' ')).toContain('--trace /results/fleetbench-run/github/trace.jsonl');
    const service = docs.find((d) => d.kind === 'Service' && d.metadata.name === 'fleetbench-run-github');
    expect(service.spec.selector).toEqual(byName('fleetbench-run-github').spec.selector.matchLabels);
    expect(byName('fleetbench-run-merge').spec.suspend).toBe(true);
    // Your own shim as the target: no target Deployment, the pods use its URL.
    const own = await cli([
      'k8s',
      'manifest',
      'run',
      'S2-T1-5',
      '--segments',
      '2',
      '--target',
      'http://shim.bench:8080',
    ]);
    expect(own.code, own.stderr).toBe(0);
    const ownDocs: Doc[] = parseAllDocuments(own.stdout).map((d) => d.toJS());
    expect(ownDocs.some((d) => d.metadata.name === 'fleetbench-run-target')).toBe(false);
    for (const doc of ownDocs) validate(doc);
  });

  it("the user's text cannot write YAML of its own: a scenario name with a newline is refused, a target's is escaped in the comment", async () => {
    const file = join(dir, 'injected.yaml');
    writeFileSync(
      file,
      'name: "x\\nimmutable: true\\n#"\nclock: real\nduration: 1m\nsessions:\n  count: 2\n',
    );
    const named = await cli(['k8s', 'manifest', 'run', file, '--segments', '2', '--target', 'reference']);
    expect(named.code).toBe(2);
    expect(named.stderr).toContain(`${file}:1: name: expected no control characters`);
    expect(named.stdout).toBe('');
    const target = await cli([
      'k8s',
      'manifest',
      'run',
      'S2-T1-5',
      '--segments',
      '2',
      '--target',
      'http://shim.bench:8080\nimmutable: true',
    ]);
    const docs: Doc[] = parseAllDocuments(target.stdout).map((d) => d.toJS());
    expect(target.stdout.split('\n')[0]).toContain('against http://shim.bench:8080\\nimmutable: true');
    expect(docs.length).toBeGreaterThan(0);
    for (const doc of docs) expect(doc).not.toHaveProperty('immutable');
  });
});

describe('fleetbench k8s manifest matrix', { timeout: 240_000 }, () => {
  it('writes a PVC, an Indexed Job and a suspended merge Job that the Kubernetes schema accepts', async () => {
    const r = await cli([
      'k8s',
      'manifest',
      'matrix',
      '--cells',
      CELLS,
      '--segments',
      '2',
      '--image',
      'ghcr.io/acme/fleetbench:0.1.0',
      '--namespace',
      'bench',
      '--jobs',
      '2',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const docs: Doc[] = parseAllDocuments(r.stdout).map((d) => d.toJS());
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      'PersistentVolumeClaim/fleetbench-matrix-results',
      'Job/fleetbench-matrix',
      'Job/fleetbench-matrix-merge',
    ]);
    for (const doc of docs) validate(doc);
    const [pvc, job, merge] = docs;
    expect(pvc.spec.accessModes).toEqual(['ReadWriteMany']);
    expect(job.spec).toMatchObject({ completionMode: 'Indexed', completions: 2, parallelism: 2 });
    expect(job.metadata.namespace).toBe('bench');
    const c = job.spec.template.spec.containers[0];
    expect(c.image).toBe('ghcr.io/acme/fleetbench:0.1.0');
    expect(c.env).toContainEqual({ name: 'FLEETBENCH_SEGMENTS', value: '2' });
    expect(c.resources.requests.cpu).toBe('2');
    expect(merge.spec.suspend).toBe(true);
    expect(merge.spec.template.spec.containers[0].args).toEqual([
      'merge',
      '/results/fleetbench-matrix',
      '--report',
    ]);
    // The validator is real: a Job the API server would refuse fails here too.
    expect(() => validate({ ...job, spec: { ...job.spec, completionMode: 'Striped' } })).toThrow(
      /completionMode/,
    );
    expect(() => validate({ ...job, spec: { ...job.spec, completions: '2' } })).toThrow(
      /completions must be integer/,
    );
    // An existing claim: no PVC written, the pods mount it.
    const own = matrixManifests({
      name: 'm',
      image: 'x',
      segments: 3,
      matrixArgs: [],
      claim: 'shared',
      accessMode: 'ReadWriteOnce',
    });
    expect(own.map((m) => m.kind)).toEqual(['Job', 'Job']);
    for (const m of own) validate(m);
  });

  it('the pods, run here exactly as the Indexed Job runs them, give the single-process baseline', async () => {
    const yamlPath = join(dir, 'matrix.yaml');
    const r = await cli(['k8s', 'manifest', 'matrix', '--cells', CELLS, '--segments', '2', '-o', yamlPath]);
    expect(r.code, r.stderr).toBe(0);
    const docs: Doc[] = parseAllDocuments(readFileSync(yamlPath, 'utf8')).map((d) => d.toJS());
    const segment: Container = docs[1].spec.template.spec.containers[0];
    const merge: Container = docs[2].spec.template.spec.containers[0];
    const results = join(dir, 'volume');
    const onVolume = (args: string[]) => args.map((a) => a.replace(/^\/results/, results));
    const env = (c: Container) => Object.fromEntries(c.env.map((e) => [e.name, e.value]));
    const pods = await Promise.all(
      [0, 1].map((index) =>
        cli(onVolume(segment.args), {
          env: { ...env(segment), JOB_COMPLETION_INDEX: String(index) },
        }),
      ),
    );
    for (const pod of pods) expect(pod.code, pod.stderr).toBe(0);
    const merged = await cli(onVolume(merge.args), { env: env(merge) });
    expect(merged.code, merged.stderr).toBe(0);
    expect(merged.stdout).toContain('fleetbench merge: 2 segments, 2 of 2 runs');
    expect(existsSync(join(results, 'fleetbench-matrix', 'report.html'))).toBe(true);
    const single = join(dir, 'single');
    const one = await cli(['matrix', '--cells', CELLS, '--jobs', '1', '--out', single]);
    expect(one.code, one.stderr).toBe(0);
    expect(readFileSync(join(results, 'fleetbench-matrix', 'baseline.md'), 'utf8')).toBe(
      readFileSync(join(single, 'baseline.md'), 'utf8'),
    );
  });

  it('refuses bad input before a cluster is involved', async () => {
    const bad = await cli(['k8s', 'manifest', 'matrix', '--cells', 'S9-T1-1', '--segments', '2']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--cells: unknown cell or scenario 'S9-T1-1'");
    const many = await cli(['k8s', 'manifest', 'matrix', '--cells', 'S2-T1-1', '--segments', '3']);
    expect(many.code).toBe(2);
    expect(many.stderr).toContain(
      '--segments: 3 segments for 1 run: some pods would have nothing to do; at most 1',
    );
    const name = await cli([
      'k8s',
      'manifest',
      'matrix',
      '--cells',
      'S2-T1-1',
      '--segments',
      '1',
      '--name',
      'Bad_Name',
    ]);
    expect(name.code).toBe(2);
    expect(name.stderr).toContain("--name: 'Bad_Name' is not usable as a Kubernetes name");
    // A live run is refused here when it cannot be split, as its pods would refuse it.
    const virtualOnly = await cli(['k8s', 'manifest', 'run', 'turnover', '--segments', '2']);
    expect(virtualOnly.code).toBe(2);
    expect(virtualOnly.stderr).toContain("executor 'turnover' is not split across segments");
  });
});
