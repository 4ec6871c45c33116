/**
 * `fleetbench k8s manifest matrix …`: the Kubernetes objects that run a matrix as an Indexed Job,
 * one segment per index, and merge it (docs/distributed.md). fleetbench only writes YAML;
 * kubectl applies it.
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { matrixManifests } from '../distributed/k8s.ts';
import { FleetbenchError } from '../errors.ts';
import { planMatrix } from '../matrix/run.ts';
import { SELECTOR_HELP } from '../matrix/select.ts';
import { collect, parseCount, parseSeed, withTarget } from './matrix.ts';
import type { CommandIo } from './output.ts';

interface ManifestFlags {
  cells: string;
  set: string[];
  repeat: string;
  seed?: string;
  target?: string;
  jobs: string;
  segments?: string;
  parallelism?: string;
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

export function register(program: Command, io: CommandIo): void {
  const k8s = program
    .command('k8s')
    .description('Kubernetes manifests for distributed matrices (docs/distributed.md)');
  const manifest = k8s.command('manifest').description('write Kubernetes manifests (YAML) for kubectl apply');
  manifest
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
    )
    .option('--namespace <ns>', 'namespace of every object (default: kubectl’s)')
    .option('--claim <pvc>', 'use this existing PersistentVolumeClaim instead of writing one')
    .option('--storage <size>', 'size of the results volume', '5Gi')
    .option('--storage-class <class>', 'storage class of the results volume')
    .option(
      '--access-mode <mode>',
      'ReadWriteMany (pods on several nodes) or ReadWriteOnce (one node, e.g. kind)',
      'ReadWriteMany',
    )
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
    .action((flags: ManifestFlags) => {
      const segments = parseCount('--segments', flags.segments, 1);
      const jobs = parseCount('--jobs', flags.jobs, 1);
      const repeats = parseCount('--repeat', flags.repeat, 1);
      const seed = parseSeed(flags.seed);
      const overrides = withTarget(flags.set, flags.target);
      if (flags.accessMode !== 'ReadWriteMany' && flags.accessMode !== 'ReadWriteOnce')
        throw new FleetbenchError(
          'E_USAGE',
          `--access-mode: ReadWriteMany or ReadWriteOnce, got '${flags.accessMode}'`,
        );
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
      if (flags.output) {
        writeFileSync(flags.output, yaml);
        io.stderr.write(`fleetbench k8s: wrote ${manifests.length} objects to ${flags.output}\n`);
      } else io.stdout.write(yaml);
    });
  manifest
    .command('run')
    .description('live-run segments: not available yet (docs/distributed.md)')
    .allowUnknownOption()
    .argument('[args...]')
    .action(() => {
      throw new FleetbenchError(
        'E_USAGE',
        'k8s manifest run: live-run segments are not available yet; matrices are split today (fleetbench k8s manifest matrix, docs/distributed.md)',
      );
    });
}
