/**
 * `fleetbench k8s manifest matrix …`: the Kubernetes objects that run a matrix as an Indexed Job,
 * one segment per index, and merge it (docs/distributed.md). fleetbench only writes YAML;
 * kubectl applies it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { FleetbenchError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { MAX_CONFIG_FILE_BYTES } from '../base/limits.ts';
import { writeOutputFile } from '../base/safe-write.ts';
import { parseTarget, targetInfo } from '../contract/target-ref.ts';
import { matrixManifests, runManifests } from '../distributed/k8s.ts';
import { planMatrix } from '../matrix/run.ts';
import { SELECTOR_HELP } from '../matrix/select.ts';
import { requestedScenario } from '../run/request.ts';
import { checkRunSplittable } from '../run/segment.ts';
import { emulatorArgsFor } from '../run/shared-github.ts';
import { collect, parseCount, parseSeed, withTarget } from './options.ts';
import type { CommandIo } from './output.ts';

/** The flags both manifests take (resultsVolumeOptions and the pods' image, name and size). */
interface SharedFlags {
  segments?: string;
  set: string[];
  seed?: string;
  image: string;
  name: string;
  namespace?: string;
  claim?: string;
  storage: string;
  storageClass?: string;
  accessMode: string;
  cpu?: string;
  memory: string;
  output?: string;
}

interface ManifestFlags extends SharedFlags {
  cells: string;
  repeat: string;
  target?: string;
  jobs: string;
  parallelism?: string;
}

interface RunManifestFlags extends SharedFlags {
  segments: string;
  timeScale?: string;
  target: string;
  cpu: string;
}

export function register(program: Command, io: CommandIo): void {
  const k8s = program
    .command('k8s')
    .description('Kubernetes manifests for distributed matrices and live runs (docs/distributed.md)');
  const manifest = k8s.command('manifest').description('write Kubernetes manifests (YAML) for kubectl apply');
  const matrix = manifest
    .command('matrix')
    .description('an Indexed Job running a matrix in segments, a shared volume and a (suspended) merge Job')
    .requiredOption('--segments <n>', 'segments: the Indexed Job’s completions, one pod per index')
    .option('--cells <selector>', SELECTOR_HELP, 'all')
    .option('--set <key=value>', 'override a scenario field in every cell (repeatable)', collect, [])
    .option('--repeat <n>', 'runs per cell with consecutive seeds', '1')
    .option('--seed <n>', 'seed of every cell (default: each scenario’s own)')
    .option('--target <target>', 'shorthand for --set target=...')
    .option('--jobs <n>', 'child processes per pod (and the CPU each pod asks for)', '1')
    .option('--parallelism <n>', 'pods at a time (default: every segment)')
    .option(
      '--image <image>',
      'the fleetbench container image (built from the Dockerfile in the repository)',
      'fleetbench:local',
    )
    .option(
      '--name <name>',
      'prefix of the objects’ names; the results go to /results/<name>',
      'fleetbench-matrix',
    );
  resultsVolumeOptions(matrix)
    .option('--cpu <cpu>', 'CPU each pod asks for (default: --jobs)')
    .option('--memory <size>', 'memory each pod asks for and is limited to', '1Gi')
    .option('-o, --output <file>', 'write the YAML here (default: stdout)')
    .addHelpText(
      'after',
      `
Examples:
  fleetbench k8s manifest matrix --cells all --segments 6 --image ghcr.io/me/fleetbench:0.1.0 > matrix.yaml
  kubectl apply -f matrix.yaml && kubectl wait --for=condition=complete --timeout=1h job/fleetbench-matrix
  kubectl patch job fleetbench-matrix-merge -p '{"spec":{"suspend":false}}'   # the merge Job runs fleetbench merge

Every cell is checked here first (a bad --set fails now, not in a pod). See docs/distributed.md.`,
    )
    .action((flags: ManifestFlags) => writeMatrixManifest(io, flags));
  const run = manifest
    .command('run')
    .description(
      'a live run in segments: an Indexed Job, the shared GitHub emulator (and reference control plane) as Deployment + Service, a shared volume and a (suspended) merge Job',
    )
    .argument(
      '<scenario>',
      'cell id, built-in scenario name, or a scenario YAML file (shipped as a ConfigMap)',
    )
    .requiredOption(
      '--segments <n>',
      'segments: the Indexed Job’s completions, one pod per index, all at once',
    )
    .option('--set <key=value>', 'override a scenario field (repeatable)', collect, [])
    .option('--seed <n>', 'shorthand for --set seed=N')
    .option('--time-scale <x>', 'shorthand for --set time-scale=X (run ms per real ms)')
    .option(
      '--target <target>',
      'reference (serve the reference control plane in the cluster) or the http://… URL of your own shim',
      'reference',
    )
    .option(
      '--image <image>',
      'the fleetbench container image (built from the Dockerfile)',
      'fleetbench:local',
    )
    .option(
      '--name <name>',
      'prefix of the objects’ names; the results go to /results/<name>',
      'fleetbench-run',
    );
  resultsVolumeOptions(run)
    .option('--cpu <cpu>', 'CPU each pod asks for', '1')
    .option('--memory <size>', 'memory each pod asks for and is limited to', '1Gi')
    .option('-o, --output <file>', 'write the YAML here (default: stdout)')
    .addHelpText(
      'after',
      `
Examples:
  fleetbench k8s manifest run S2-T1-50 --segments 4 --time-scale 10 --image ghcr.io/me/fleetbench:0.1.0 > run.yaml
  kubectl apply -f run.yaml && kubectl wait --for=condition=complete --timeout=1h job/fleetbench-run
  kubectl patch job fleetbench-run-merge -p '{"spec":{"suspend":false}}'   # the merge Job runs fleetbench merge

The run is checked here first, as the pods will (the real clock, what can be split). The segments
agree on a start 10 s after the first is up (segments/run-start.json on the volume). See docs/distributed.md.`,
    )
    .action((ref: string, flags: RunManifestFlags) => writeRunManifest(io, ref, flags));
}

/** `k8s manifest matrix`: every cell checked here, then the Indexed Job and its merge Job. */
function writeMatrixManifest(io: CommandIo, flags: ManifestFlags): void {
  const segments = parseCount('--segments', flags.segments, 1);
  const jobs = parseCount('--jobs', flags.jobs, 1);
  const repeats = parseCount('--repeat', flags.repeat, 1);
  const seed = parseSeed(flags.seed);
  const overrides = withTarget(flags.set, flags.target);
  checkAccessMode(flags.accessMode);
  // Resolve every scenario now, as the pods will: bad input fails here, before a cluster is involved.
  const runs = planMatrix({ selection: flags.cells, overrides, seed, repeats, outDir: '.' }).reduce(
    (n, p) => n + p.jobs.length,
    0,
  );
  if (segments > runs)
    throw new FleetbenchError(
      'E_USAGE',
      `--segments: ${segments} segments for ${runs} run${runs === 1 ? '' : 's'}: some pods would have nothing to do; at most ${runs}`,
    );
  const matrixArgs = [
    '--cells',
    flags.cells,
    ...overrides.flatMap((s) => ['--set', s]),
    '--repeat',
    String(repeats),
    ...(seed === undefined ? [] : ['--seed', String(seed)]),
    '--jobs',
    String(jobs),
  ];
  const manifests = matrixManifests({
    name: flags.name,
    namespace: flags.namespace,
    image: flags.image,
    segments,
    parallelism:
      flags.parallelism === undefined ? undefined : parseCount('--parallelism', flags.parallelism, 1),
    matrixArgs,
    claim: flags.claim,
    storage: flags.storage,
    storageClass: flags.storageClass,
    accessMode: flags.accessMode,
    cpu: flags.cpu ?? String(jobs),
    memory: flags.memory,
  });
  const yaml = `# fleetbench k8s manifest matrix: ${runs} runs in ${segments} segments (docs/distributed.md)\n${manifests.map((m) => stringify(m)).join('---\n')}`;
  writeManifests(io, flags.output, yaml, manifests.length);
}

/** `k8s manifest run`: the scenario checked here as the pods will, then the Job, the shared target and the merge Job. */
function writeRunManifest(io: CommandIo, ref: string, flags: RunManifestFlags): void {
  const segments = parseCount('--segments', flags.segments, 1);
  checkAccessMode(flags.accessMode);
  // The pods share one target: the reference served in the cluster, or a server they reach.
  const target = parseTarget(flags.target);
  if (target.kind !== 'reference' && !targetInfo(target).shareable)
    throw new FleetbenchError(
      'E_USAGE',
      `--target: reference (served in the cluster) or an http(s) URL the pods can reach, got '${flags.target}'`,
    );
  const runArgs = [
    ...flags.set.flatMap((s) => ['--set', s]),
    ...(flags.seed !== undefined ? ['--seed', String(parseSeed(flags.seed))] : []),
    ...(flags.timeScale !== undefined ? ['--time-scale', flags.timeScale] : []),
  ];
  // Resolve the scenario now, as the pods' `fleetbench run` will: bad input fails here, not in a pod.
  const { scenario } = requestedScenario({
    ref,
    set: flags.set,
    seed: flags.seed,
    timeScale: flags.timeScale,
    clock: 'real',
    target: target.kind === 'reference' ? 'http://target.invalid:7070' : flags.target,
  });
  checkRunSplittable(scenario, 'k8s manifest run', 'shared');
  const isFile = existsSync(ref) && statSync(ref).isFile();
  const manifests = runManifests({
    name: flags.name,
    namespace: flags.namespace,
    image: flags.image,
    segments,
    runArgs,
    scenario: ref,
    ...(isFile
      ? {
          scenarioFile: {
            name: basename(ref),
            text: readInputText(ref, {
              maxBytes: MAX_CONFIG_FILE_BYTES,
              code: 'E_SCENARIO',
              what: 'a scenario',
            }),
          },
        }
      : {}),
    target,
    emulatorArgs: emulatorArgsFor(scenario),
    adminToken: `fba_${randomBytes(18).toString('base64url')}`,
    claim: flags.claim,
    storage: flags.storage,
    storageClass: flags.storageClass,
    accessMode: flags.accessMode,
    cpu: flags.cpu,
    memory: flags.memory,
  });
  const yaml = `# fleetbench k8s manifest run: ${commentText(scenario.name)} in ${segments} segments against ${target.kind === 'reference' ? 'the reference control plane' : commentText(flags.target)} (docs/distributed.md)\n${manifests.map((m) => stringify(m, { lineWidth: 0, blockQuote: 'literal' })).join('---\n')}`;
  writeManifests(io, flags.output, yaml, manifests.length);
}

/**
 * The user's text in a YAML comment: a control character (a newline above all) would end the
 * comment and let the text write YAML of its own, so each is written as its JSON escape.
 */
function commentText(text: string): string {
  return text.replace(/\p{Cc}/gu, (c) => JSON.stringify(c).slice(1, -1));
}

/** The results volume's options, the same for both manifests (in this order in --help). */
function resultsVolumeOptions(command: Command): Command {
  return command
    .option('--namespace <ns>', 'namespace of every object (default: kubectl’s)')
    .option('--claim <pvc>', 'use this existing PersistentVolumeClaim instead of writing one')
    .option('--storage <size>', 'size of the results volume', '5Gi')
    .option('--storage-class <class>', 'storage class of the results volume')
    .option(
      '--access-mode <mode>',
      'ReadWriteMany (pods on several nodes) or ReadWriteOnce (one node, e.g. kind)',
      'ReadWriteMany',
    );
}

function checkAccessMode(mode: string): asserts mode is 'ReadWriteMany' | 'ReadWriteOnce' {
  if (mode !== 'ReadWriteMany' && mode !== 'ReadWriteOnce')
    throw new FleetbenchError('E_USAGE', `--access-mode: ReadWriteMany or ReadWriteOnce, got '${mode}'`);
}

function writeManifests(io: CommandIo, output: string | undefined, yaml: string, objects: number): void {
  if (output) {
    writeOutputFile(output, yaml);
    io.stderr.write(`fleetbench k8s: wrote ${objects} objects to ${output}\n`);
  } else io.stdout.write(yaml);
}
