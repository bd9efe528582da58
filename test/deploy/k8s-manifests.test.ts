/**
 * The deployment files, checked offline: every manifest in k8s/ against the Kubernetes
 * API schemas (kubernetes-models; the ServiceMonitor against prometheus-operator's where
 * @kubernetes-models/prometheus-operator is installed, else by its shape), then against
 * what this program needs from them (exit-code handling, probes, hardening, real CLI
 * commands and config variables, metrics apart from webhooks, a network policy open to
 * nothing by default, migrations a GitOps tool can apply again), and the Dockerfile and
 * .dockerignore as text.
 *
 * kubernetes-models' `validate()` checks types, enums and required fields but not
 * unknown keys, so a misspelt field (`backofLimit`) would pass it; the vocabulary test
 * below closes that gap.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1';
import { CronJob, type ICronJob, type IJob, type IJobSpec, Job } from 'kubernetes-models/batch/v1';
import { type INetworkPolicy, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { type IPodDisruptionBudget, PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import {
  ConfigMap,
  type IConfigMap,
  type IContainer,
  type IPodSpec,
  type IService,
  Service,
} from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { productionNodeFlags } from '../../bench/node-flags.ts';
import {
  loadConfig,
  requireCredentials,
  requireWebhookSecrets,
  SETTINGS,
} from '../../src/config/index.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const K8S = join(ROOT, 'k8s');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The commands a workload may run; each must be a command of src/cli (one file each in src/cli/commands). */
const DEPLOYABLE_COMMANDS = ['migrate', 'sync', 'serve'];
const PLACEHOLDER = 'REPLACE_ME';
const CREDENTIALS_KEY = 'credentials.json';

type ModelClass = new (data: never) => { validate(): void };

/**
 * prometheus-operator's models, when the package is installed (a devDependency to add);
 * null otherwise, and the ServiceMonitor is checked by its shape alone.
 */
const PROMETHEUS_OPERATOR = await (async () => {
  // A variable specifier: the package is optional, and ESM-only.
  const specifier = '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
  try {
    const module = (await import(specifier)) as { ServiceMonitor: ModelClass };
    return {
      ServiceMonitor: module.ServiceMonitor,
      dir: join(ROOT, 'node_modules', specifier),
    };
  } catch {
    process.stdout.write(
      'test/deploy/k8s-manifests.test.ts: the ServiceMonitor is checked by shape only: @kubernetes-models/prometheus-operator is not installed\n',
    );
    return null;
  }
})();

// One model class per kind we ship; a kind not listed here fails the suite (a Secret
// among them: the overlay generates it, the repository ships none).
const MODELS: Record<string, ModelClass | null> = {
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'batch/v1/Job': Job,
  'batch/v1/CronJob': CronJob,
  'apps/v1/Deployment': Deployment,
  'monitoring.coreos.com/v1/ServiceMonitor': PROMETHEUS_OPERATOR?.ServiceMonitor ?? null,
};

interface Manifest {
  file: string;
  doc: { apiVersion: string; kind: string; metadata?: { name?: string } } & Record<string, unknown>;
}

interface Workload {
  file: string;
  kind: string;
  pod: IPodSpec;
  /** The Job spec for Jobs and CronJobs. */
  job?: IJobSpec;
}

function parseYaml(text: string, version: '1.1' | '1.2'): unknown[] {
  return parseAllDocuments(text, { version }).map((document) => {
    if (document.errors.length) throw new Error(document.errors.map(String).join('\n'));
    return document.toJS();
  });
}

const yamlFiles = readdirSync(K8S, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
  .sort();
const isKustomization = (f: string) =>
  f === 'kustomization.yaml' || f.endsWith('/kustomization.yaml');
const manifestFiles = yamlFiles.filter((f) => !isKustomization(f));

const manifests: Manifest[] = manifestFiles.flatMap((file) =>
  parseYaml(readFileSync(join(K8S, file), 'utf8'), '1.2').map((doc) => ({
    file,
    doc: doc as Manifest['doc'],
  })),
);

const ofKind = <T>(kind: string) =>
  manifests.filter((m) => m.doc.kind === kind).map((m) => ({ file: m.file, ...(m.doc as T) }));

const secrets = manifests.filter((m) => m.doc.kind === 'Secret');
const pdbs = ofKind<IPodDisruptionBudget>('PodDisruptionBudget');
const networkPolicies = ofKind<INetworkPolicy>('NetworkPolicy');

/**
 * The Secret's keys and example values, as docs/deploy.md tells the overlay to generate
 * it: `credentials.json` and the `secrets.env` block.
 */
function documentedSecret(): Record<string, string> {
  const deploy = read('docs/deploy.md');
  const block = [
    ...deploy.matchAll(/```sh\n# overlays\/prod\/secrets\.env\n([\s\S]*?)```/g),
  ][0]?.[1];
  if (!block) throw new Error('docs/deploy.md has no `# overlays/prod/secrets.env` block');
  const entries = block
    .split('\n')
    .filter((line) => line.includes('='))
    .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]);
  const credentials = [
    {
      name: PLACEHOLDER,
      baseUrl: `https://${PLACEHOLDER}.example.com`,
      authToken: PLACEHOLDER,
      userEmail: `${PLACEHOLDER}@example.com`,
    },
  ];
  return { [CREDENTIALS_KEY]: JSON.stringify(credentials), ...Object.fromEntries(entries) };
}
const SECRET = documentedSecret();
const configMaps = ofKind<IConfigMap>('ConfigMap');
const services = ofKind<IService>('Service');
const deployments = ofKind<IDeployment>('Deployment');
const jobs = ofKind<IJob>('Job');
const cronJobs = ofKind<ICronJob>('CronJob');

const workloads: Workload[] = [
  ...jobs.map((j) => ({ file: j.file, kind: 'Job', pod: j.spec!.template.spec!, job: j.spec! })),
  ...cronJobs.map((c) => ({
    file: c.file,
    kind: 'CronJob',
    pod: c.spec!.jobTemplate.spec!.template.spec!,
    job: c.spec!.jobTemplate.spec!,
  })),
  ...deployments.map((d) => ({ file: d.file, kind: 'Deployment', pod: d.spec!.template.spec! })),
];

const containersOf = (pod: IPodSpec): IContainer[] => [
  ...(pod.initContainers ?? []),
  ...pod.containers,
];
const allContainers = workloads.flatMap((w) =>
  containersOf(w.pod).map((container) => ({ ...w, container })),
);

describe('k8s manifests: Kubernetes API schemas', () => {
  it('has the expected files', () => {
    expect(manifestFiles).toEqual([
      'components/migrate-job/migrate-job.yaml',
      'components/network-policy/network-policy.yaml',
      'components/service-monitor/service-monitor.yaml',
      'configmap.yaml',
      'serve-deployment.yaml',
      'serve-metrics-service.yaml',
      'serve-pdb.yaml',
      'serve-service.yaml',
      'sync-cronjob.yaml',
      'sync-sharded-cronjob.yaml',
    ]);
  });

  it.each(manifestFiles)('%s holds one resource, valid against its API schema', (file) => {
    const docs = manifests.filter((m) => m.file === file);
    expect(docs).toHaveLength(1);
    const { doc } = docs[0]!;
    const key = `${doc.apiVersion}/${doc.kind}`;
    expect(Object.keys(MODELS), `${file}: no model for ${doc.apiVersion} ${doc.kind}`).toContain(
      key,
    );
    const Model = MODELS[key];
    if (Model) expect(() => new Model(doc as never).validate()).not.toThrow();
    expect(doc.metadata?.name).toMatch(/^listings-sync(-[a-z]+)?$/);
    // Namespace-agnostic: the namespace is chosen at apply time.
    expect(doc.metadata).not.toHaveProperty('namespace');
  });

  it.each(yamlFiles)('%s reads the same as YAML 1.1 (kubectl) and 1.2', (file) => {
    // kubectl's parser follows YAML 1.1, where 0440 is octal and `on` is true.
    const text = readFileSync(join(K8S, file), 'utf8');
    expect(parseYaml(text, '1.1')).toEqual(parseYaml(text, '1.2'));
  });

  it('uses only field names the Kubernetes API defines (catches typos validate() lets by)', () => {
    const known = knownFieldNames();
    // Maps whose keys are free-form (label names, config keys, resource names).
    const freeForm = new Set([
      'labels',
      'annotations',
      'data',
      'stringData',
      'matchLabels',
      'nodeSelector',
      'requests',
      'limits',
    ]);
    const unknown: string[] = [];
    const walk = (value: unknown, path: string, parentKey: string) => {
      if (Array.isArray(value)) {
        value.forEach((item, i) => {
          walk(item, `${path}[${i}]`, parentKey);
        });
        return;
      }
      if (value === null || typeof value !== 'object') return;
      const entries = Object.entries(value);
      // Service.spec.selector is a plain label map.
      if (parentKey === 'selector' && entries.every(([, v]) => typeof v === 'string')) return;
      for (const [key, child] of entries) {
        if (!known.has(key)) unknown.push(`${path}.${key}`);
        if (!freeForm.has(key)) walk(child, `${path}.${key}`, key);
      }
    };
    for (const { file, doc } of manifests) {
      // Without prometheus-operator's declarations its vocabulary is unknown here; the
      // ServiceMonitor's shape is checked field by field below.
      if (doc.kind === 'ServiceMonitor' && !PROMETHEUS_OPERATOR) continue;
      walk(doc, file, '');
    }
    expect(unknown).toEqual([]);
  });

  it('the vocabulary test can fail: a misspelt field is caught', () => {
    const known = knownFieldNames();
    expect(known.has('backoffLimit')).toBe(true);
    expect(known.has('backofLimit')).toBe(false);
  });
});

describe('k8s manifests: kustomization', () => {
  const kustomization = parseYaml(read('k8s/kustomization.yaml'), '1.2')[0] as {
    kind: string;
    resources: string[];
    labels: { pairs: Record<string, string> }[];
    images?: { name: string }[];
    secretGenerator?: unknown;
    replacements?: { source: { kind: string; name: string } }[];
  };

  it('lists files that exist, and every manifest but the sharded alternative and the components', () => {
    for (const resource of kustomization.resources) expect(manifestFiles).toContain(resource);
    const unlisted = manifestFiles.filter((f) => !kustomization.resources.includes(f));
    // The sharded CronJob replaces sync-cronjob.yaml; both at once would contend for
    // the warehouse's sync lock every night. The optional parts are components of their own.
    expect(unlisted).toEqual([
      'components/migrate-job/migrate-job.yaml',
      'components/network-policy/network-policy.yaml',
      'components/service-monitor/service-monitor.yaml',
      'sync-sharded-cronjob.yaml',
    ]);
    expect(read('k8s/kustomization.yaml')).toContain('sync-sharded-cronjob.yaml');
    for (const name of ['migrate-job', 'network-policy', 'service-monitor']) {
      const component = parseYaml(read(`k8s/components/${name}/kustomization.yaml`), '1.2')[0] as {
        kind: string;
        resources: string[];
      };
      expect(component).toMatchObject({ kind: 'Component', resources: [`${name}.yaml`] });
    }
  });

  it('the base has no Job: a GitOps tool can apply it again and again (migrations run as init containers)', () => {
    const inBase = (file: string) => kustomization.resources.includes(file);
    expect(jobs.filter((j) => inBase(j.file))).toEqual([]);
    // Every workload of the base that opens the warehouse migrates first.
    for (const { file, pod } of workloads.filter((w) => inBase(w.file))) {
      expect(
        pod.initContainers?.map((c) => c.args),
        file,
      ).toEqual([['migrate']]);
    }
  });

  it('ships no Secret, and requires the one the overlay generates', () => {
    expect(secrets.map((s) => s.file)).toEqual([]);
    expect(kustomization.secretGenerator).toBeUndefined();
    // A Component, built in the overlay's context, where the guard finds the Secret
    // (test/deploy/k8s-overlay.test.ts renders both cases).
    expect(kustomization.kind).toBe('Component');
    expect(kustomization.replacements?.map((r) => r.source)).toContainEqual(
      expect.objectContaining({ kind: 'Secret', name: 'listings-sync' }),
    );
  });

  it('labels everything with the app name and sets the image by name', () => {
    expect(kustomization.labels[0]?.pairs).toEqual({ 'app.kubernetes.io/name': 'listings-sync' });
    const images = new Set(allContainers.map((c) => c.container.image));
    expect([...images]).toEqual(['listings-sync']);
    // The base renames nothing: an overlay's `images: - name: listings-sync` must match
    // (test/deploy/k8s-overlay.test.ts renders the documented overlay).
    expect(kustomization.images).toBeUndefined();
  });
});

describe('k8s manifests: what the program needs', () => {
  const cli = readdirSync(join(ROOT, 'src/cli/commands'))
    .filter((name) => name.endsWith('.ts'))
    .map((name) => read(`src/cli/commands/${name}`))
    .join('\n');
  const cliCommands = [...cli.matchAll(/\.command\('([a-z-]+)/g)].map((m) => m[1]);

  it('every deployable command is a command of the CLI', () => {
    for (const command of DEPLOYABLE_COMMANDS) expect(cliCommands).toContain(command);
  });

  it('every container runs a real CLI command with real options', () => {
    expect(allContainers.length).toBeGreaterThan(0);
    for (const { file, container } of allContainers) {
      const [command, ...rest] = container.args ?? [];
      expect(container.command, `${file}/${container.name}: keep the image ENTRYPOINT`).toBe(
        undefined,
      );
      expect(DEPLOYABLE_COMMANDS, `${file}/${container.name}`).toContain(command);
      expect(cliCommands, `${file}/${container.name}`).toContain(command);
      for (const flag of rest.filter((a) => a.startsWith('--'))) {
        // `'--shard <I/N>'`, or a switch `'--exit-zero-on-partial'`.
        expect(cli, `${file}/${container.name}: ${flag}`).toMatch(new RegExp(`'${flag}[ ']`));
      }
    }
  });

  it('every container sets CPU and memory requests and limits', () => {
    for (const { file, container } of allContainers) {
      const { requests, limits } = container.resources ?? {};
      for (const resource of ['cpu', 'memory']) {
        expect(requests?.[resource], `${file}/${container.name} requests.${resource}`).toBeTruthy();
        expect(limits?.[resource], `${file}/${container.name} limits.${resource}`).toBeTruthy();
      }
    }
  });

  it('every container runs as non-root, without privilege escalation or capabilities', () => {
    for (const { file, pod, container } of allContainers) {
      const where = `${file}/${container.name}`;
      const ctx = container.securityContext ?? {};
      expect(ctx.runAsNonRoot ?? pod.securityContext?.runAsNonRoot, where).toBe(true);
      expect(ctx.runAsUser ?? pod.securityContext?.runAsUser, where).not.toBe(0);
      expect(ctx.allowPrivilegeEscalation, where).toBe(false);
      expect(ctx.readOnlyRootFilesystem, where).toBe(true);
      expect(ctx.capabilities?.drop, where).toContain('ALL');
      expect(ctx.privileged ?? false, where).toBe(false);
    }
    for (const { file, pod } of workloads) {
      expect(pod.automountServiceAccountToken, file).toBe(false);
      expect(pod.securityContext?.seccompProfile?.type, file).toBe('RuntimeDefault');
    }
  });

  it('every config variable is one src/config/settings.ts knows, and its values parse', () => {
    const knows = (name: string) => Object.hasOwn(SETTINGS, name);
    const names = [
      ...configMaps.flatMap((c) => Object.keys(c.data ?? {})),
      ...Object.keys(SECRET).filter((k) => k !== CREDENTIALS_KEY),
      ...allContainers.flatMap((c) => (c.container.env ?? []).map((e) => e.name)),
    ];
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((name) => !knows(name))).toEqual([]);

    // And loadConfig accepts what a serve pod would see (placeholders included).
    const configMap = configMaps[0]!.data!;
    const secret = SECRET;
    const dir = mkdtempSync(join(tmpdir(), 'listings-sync-k8s-'));
    try {
      const credentialsFile = join(dir, CREDENTIALS_KEY);
      writeFileSync(credentialsFile, secret[CREDENTIALS_KEY]!);
      const env = { ...configMap, ...secret, LISTINGS_CREDENTIALS_FILE: credentialsFile };
      const config = loadConfig(env);
      expect(requireCredentials(config).length).toBeGreaterThan(0);
      expect(requireWebhookSecrets(config).length).toBeGreaterThan(0);
      expect(config.databaseUrl).toMatch(/^postgres:\/\//);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every reference to the ConfigMap, the Secret and their keys resolves', () => {
    const secretKeys = new Map([['listings-sync', Object.keys(SECRET)]]);
    const configMapNames = configMaps.map((c) => c.metadata!.name!);
    const credentialsPath = configMaps[0]!.data!.LISTINGS_CREDENTIALS_FILE!;
    for (const { file, pod, container } of allContainers) {
      const where = `${file}/${container.name}`;
      for (const from of container.envFrom ?? []) {
        if (from.configMapRef) expect(configMapNames, where).toContain(from.configMapRef.name);
        // The Secret holds credentials.json, which must not become an env var.
        expect(from.secretRef, where).toBeUndefined();
      }
      for (const { valueFrom } of container.env ?? []) {
        const ref = valueFrom?.secretKeyRef;
        if (ref) expect(secretKeys.get(ref.name!), where).toContain(ref.key);
      }
      // LISTINGS_CREDENTIALS_FILE names a file every container can read.
      const mounted = (container.volumeMounts ?? []).flatMap((mount) => {
        const volume = pod.volumes?.find((v) => v.name === mount.name);
        expect(volume, `${where}: volume ${mount.name}`).toBeDefined();
        // A Secret volume, or a projected one whose sources include the Secret.
        const fromSecrets = volume?.secret
          ? [{ name: volume.secret.secretName, items: volume.secret.items }]
          : (volume?.projected?.sources ?? []).flatMap((source) =>
              source.secret ? [{ name: source.secret.name, items: source.secret.items }] : [],
            );
        return fromSecrets.flatMap(({ name, items }) =>
          (items ?? []).map((item) => ({
            path: `${mount.mountPath}/${item.path}`,
            readOnly: mount.readOnly,
            key: item.key,
            secretName: name,
          })),
        );
      });
      const credentials = mounted.find((m) => m.path === credentialsPath);
      expect(credentials, `${where}: ${credentialsPath} is not mounted`).toBeDefined();
      expect(credentials?.readOnly, where).toBe(true);
      expect(secretKeys.get(credentials!.secretName!), where).toContain(credentials!.key);
    }
    for (const { file, pod } of workloads) {
      for (const volume of pod.volumes ?? []) {
        // At most 0440 (288): group-readable for the fsGroup, nothing for others.
        if (volume.secret) expect(volume.secret.defaultMode! & 0o137, file).toBe(0);
        if (volume.projected) expect(volume.projected.defaultMode! & 0o137, file).toBe(0);
      }
    }
  });

  it('the documented secrets.env holds nothing but placeholders', () => {
    for (const [key, value] of Object.entries(SECRET)) {
      const leaves = key.endsWith('.json') ? jsonStrings(JSON.parse(value)) : [value];
      for (const leaf of leaves)
        expect(leaf, key).toMatch(/REPLACE_ME|USER:PASSWORD@HOST|example\.com/);
    }
  });

  it('the ConfigMap holds no credential: database, webhook and alert sink URLs are Secret keys', () => {
    for (const key of [
      'DATABASE_URL',
      'WEBHOOK_SECRET',
      'ALERT_WEBHOOK_URL',
      'ALERT_WEBHOOK_SECRET',
      'ALERT_SLACK_WEBHOOK_URL',
    ]) {
      expect(Object.keys(SECRET)).toContain(key);
    }
    for (const { file, data } of configMaps) {
      const keys = Object.keys(data ?? {});
      expect(
        keys.filter((k) => k in SECRET || /(_URL|SECRET|TOKEN|PASSWORD)$/.test(k)),
        file,
      ).toEqual([]);
    }
    // Every container that reads the ConfigMap gets the alert URLs from the Secret.
    for (const { file, container } of allContainers.filter((c) => c.container.name !== 'migrate')) {
      for (const name of ['ALERT_WEBHOOK_URL', 'ALERT_SLACK_WEBHOOK_URL']) {
        const ref = container.env?.find((e) => e.name === name)?.valueFrom?.secretKeyRef;
        expect(ref, `${file}/${container.name} ${name}`).toMatchObject({
          name: 'listings-sync',
          key: name,
          optional: true,
        });
      }
    }
  });
});

describe('k8s manifests: jobs and exit codes', () => {
  /** The podFailurePolicy action for a container's exit code, or the default `Count`. */
  const actionFor = (job: IJobSpec, containerName: string, exitCode: number) =>
    job.podFailurePolicy?.rules.find(
      (rule) =>
        rule.onExitCodes &&
        (rule.onExitCodes.containerName ?? containerName) === containerName &&
        (rule.onExitCodes.operator === 'In') === rule.onExitCodes.values.includes(exitCode),
    )?.action ?? 'Count';

  it('every Job retries a bounded number of times, with pods kept for their logs', () => {
    for (const { file, job, pod } of workloads.filter((w) => w.job)) {
      expect(job!.backoffLimit ?? job!.backoffLimitPerIndex, file).toBeGreaterThan(0);
      expect(job!.activeDeadlineSeconds, file).toBeGreaterThan(0);
      // podFailurePolicy requires it.
      expect(pod.restartPolicy, file).toBe('Never');
      // A drained node is not the program's fault, and a drained sync exits 3
      // (interrupted): the Ignore rule must come before the exit-code rules.
      expect(job!.podFailurePolicy?.rules[0]?.onPodConditions?.[0]?.type, file).toBe(
        'DisruptionTarget',
      );
      expect(job!.podFailurePolicy?.rules[0]?.action, file).toBe('Ignore');
    }
  });

  it('the optional migrate Job is an Argo CD hook and Flux recreates it; nothing collects it', () => {
    const migrate = jobs.find((j) => j.spec?.template.spec?.containers[0]?.args?.[0] === 'migrate');
    expect(migrate?.file).toBe('components/migrate-job/migrate-job.yaml');
    expect(migrate?.metadata?.annotations).toEqual({
      'argocd.argoproj.io/hook': 'Sync',
      'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation',
      'argocd.argoproj.io/sync-wave': '-1',
      'kustomize.toolkit.fluxcd.io/force': 'enabled',
    });
    // A Job collected by its TTL is drift that a GitOps tool would put back.
    expect(migrate?.spec?.ttlSecondsAfterFinished).toBeUndefined();
    // The configuration it reads goes in an earlier wave (a patch on every ConfigMap and
    // Secret; test/deploy/k8s-overlay.test.ts renders it).
    const component = read('k8s/components/migrate-job/kustomization.yaml');
    expect(component).toMatch(/kind: ConfigMap\n[\s\S]*argocd\.argoproj\.io\/sync-wave: "-2"/);
    expect(component).toMatch(/kind: Secret\n[\s\S]*argocd\.argoproj\.io\/sync-wave: "-2"/);
  });

  it('the nightly CronJobs run once at a time, at 03:00 UTC', () => {
    expect(cronJobs.length).toBe(2);
    for (const cron of cronJobs) {
      const spec = cron.spec!;
      expect(spec.schedule, cron.file).toBe('0 3 * * *');
      expect(spec.timeZone, cron.file).toBe('UTC');
      expect(spec.concurrencyPolicy, cron.file).toBe('Forbid');
      expect(spec.startingDeadlineSeconds, cron.file).toBeGreaterThan(0);
      expect(spec.successfulJobsHistoryLimit, cron.file).toBeGreaterThan(0);
      expect(spec.failedJobsHistoryLimit, cron.file).toBeGreaterThan(0);
      const pod = spec.jobTemplate.spec!.template.spec!;
      expect(pod.terminationGracePeriodSeconds, cron.file).toBeGreaterThanOrEqual(60);
      // The schema is brought up to date before the load.
      expect(
        pod.initContainers?.map((c) => c.args?.[0]),
        cron.file,
      ).toEqual(['migrate']);
      expect(
        pod.containers.map((c) => c.args?.[0]),
        cron.file,
      ).toEqual(['sync']);
    }
  });

  it('a partial night exits 0 (the sync reports it, not the Job): every CronJob runs sync --exit-zero-on-partial', () => {
    for (const { file, pod } of workloads.filter((w) => w.kind === 'CronJob')) {
      const sync = pod.containers.find((c) => c.args?.[0] === 'sync');
      expect(sync?.args, file).toContain('--exit-zero-on-partial');
    }
  });

  it('exit 3 (interrupted) is not retried, exit 2 fails the Job, exit 1 counts', () => {
    for (const { file, job } of workloads.filter((w) => w.kind === 'CronJob')) {
      const indexed = job!.completionMode === 'Indexed';
      expect(actionFor(job!, 'sync', 3), file).toBe(indexed ? 'FailIndex' : 'FailJob');
      expect(actionFor(job!, 'sync', 2), file).toBe('FailJob');
      expect(actionFor(job!, 'migrate', 2), file).toBe('FailJob');
      expect(actionFor(job!, 'sync', 1), file).toBe('Count');
      expect(actionFor(job!, 'migrate', 1), file).toBe('Count');
      expect(actionFor(job!, 'sync', 0), file).toBe('Count');
    }
  });

  it('the sharded CronJob runs `sync --shard $(JOB_COMPLETION_INDEX)/N` with N = completions', () => {
    const sharded = cronJobs.filter((c) => c.spec?.jobTemplate.spec?.completionMode === 'Indexed');
    expect(sharded).toHaveLength(1);
    const job = sharded[0]!.spec!.jobTemplate.spec!;
    expect(job.completions).toBe(4);
    expect(job.parallelism).toBe(4);
    // FailIndex needs per-index back-off; and one shard must not spend the others' retries.
    expect(job.backoffLimitPerIndex).toBeGreaterThan(0);
    const args = job.template.spec!.containers[0]!.args!;
    expect(args.slice(0, 2)).toEqual(['sync', '--shard']);
    const shard = /^\$\(JOB_COMPLETION_INDEX\)\/(\d+)$/.exec(args[2] ?? '');
    expect(shard, `--shard ${args[2]}`).not.toBeNull();
    expect(Number(shard![1])).toBe(job.completions);
  });
});

describe('k8s manifests: serve', () => {
  const serveDeployment = () =>
    deployments.find((d) => d.metadata?.name === 'listings-sync-serve')!;
  const serveContainer = () =>
    serveDeployment().spec!.template.spec!.containers.find((c) => c.args?.[0] === 'serve')!;

  it('the Deployment runs two probed replicas with time to finish a business', () => {
    expect(deployments).toHaveLength(1);
    const deployment = serveDeployment();
    const pod = deployment.spec!.template.spec!;
    const serve = serveContainer();
    expect(deployment.spec!.replicas).toBe(2);
    expect(deployment.spec!.strategy?.rollingUpdate?.maxUnavailable).toBe(0);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(60);
    expect(serve.env?.map((e) => e.name)).toContain('WEBHOOK_SECRET');
  });

  it('webhooks on `http` (PORT), metrics and probes on `metrics` (METRICS_PORT)', () => {
    const serve = serveContainer();
    const data = configMaps[0]!.data!;
    expect(serve.ports).toEqual([
      { name: 'http', containerPort: Number(data.PORT), protocol: 'TCP' },
      { name: 'metrics', containerPort: Number(data.METRICS_PORT), protocol: 'TCP' },
    ]);
    expect(data.PORT).toBe('8080');
    expect(data.METRICS_PORT).toBe('9464');
    // The probes on the operator's port: a webhook flood cannot fail liveness.
    expect(serve.startupProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'metrics' });
    expect(serve.livenessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'metrics' });
    expect(serve.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'metrics' });
  });

  it('the webhook Service carries no metrics; the metrics Service carries nothing else', () => {
    expect(services.map((s) => s.metadata!.name).sort()).toEqual([
      'listings-sync',
      'listings-sync-metrics',
    ]);
    const deployment = serveDeployment();
    const podLabels = deployment.spec!.template.metadata!.labels!;
    for (const service of services) {
      expect(service.spec!.type, service.file).toBe('ClusterIP');
      expect(podLabels, service.file).toMatchObject(service.spec!.selector!);
      expect(deployment.spec!.selector.matchLabels).toEqual(service.spec!.selector);
    }
    const webhooks = services.find((s) => s.metadata!.name === 'listings-sync')!;
    expect(webhooks.spec!.ports).toEqual([
      { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' },
    ]);
    expect(webhooks.metadata!.annotations ?? {}).toEqual({});
    const metrics = services.find((s) => s.metadata!.name === 'listings-sync-metrics')!;
    expect(metrics.spec!.ports).toEqual([
      { name: 'metrics', port: 9464, targetPort: 'metrics', protocol: 'TCP' },
    ]);
    expect(metrics.metadata!.annotations).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': configMaps[0]!.data!.METRICS_PORT,
      'prometheus.io/path': '/metrics',
    });
  });

  it('the ServiceMonitor scrapes the metrics Service by its labels and port name', () => {
    const monitors = manifests.filter((m) => m.doc.kind === 'ServiceMonitor');
    expect(monitors.map((m) => m.file)).toEqual([
      'components/service-monitor/service-monitor.yaml',
    ]);
    const monitor = monitors[0]!.doc as unknown as {
      apiVersion: string;
      spec: {
        selector: { matchLabels: Record<string, string> };
        endpoints: { port: string; path: string; interval: string; scrapeTimeout: string }[];
        namespaceSelector?: unknown;
      };
    };
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(Object.keys(monitor.spec).sort()).toEqual(['endpoints', 'selector']);
    const selected = services.filter((service) =>
      Object.entries(monitor.spec.selector.matchLabels).every(
        ([k, v]) => service.metadata!.labels?.[k] === v,
      ),
    );
    expect(selected.map((s) => s.metadata!.name)).toEqual(['listings-sync-metrics']);
    expect(monitor.spec.endpoints).toHaveLength(1);
    const [endpoint] = monitor.spec.endpoints;
    expect(selected[0]!.spec!.ports!.map((p) => p.name)).toContain(endpoint!.port);
    expect(endpoint).toMatchObject({ port: 'metrics', path: '/metrics' });
    // Prometheus durations, the scrape shorter than the interval.
    const seconds = (d: string) => Number(/^(\d+)s$/.exec(d)?.[1]);
    expect(seconds(endpoint!.scrapeTimeout)).toBeLessThan(seconds(endpoint!.interval));
  });
});

describe('k8s manifests: disruption budget and network policy', () => {
  it('the PodDisruptionBudget keeps a serve replica through a drain, and never blocks one', () => {
    expect(pdbs).toHaveLength(1);
    const [pdb] = pdbs;
    const serve = deployments.find((d) => d.metadata?.name === 'listings-sync-serve')!;
    expect(pdb!.spec?.selector?.matchLabels).toEqual(serve.spec?.selector.matchLabels);
    expect(pdb!.spec?.minAvailable).toBe(1);
    expect(serve.spec?.replicas).toBeGreaterThan(1);
    expect(pdb!.spec?.unhealthyPodEvictionPolicy).toBe('AlwaysAllow');
  });

  const policy = () => {
    expect(networkPolicies).toHaveLength(1);
    return networkPolicies[0]!.spec!;
  };

  it("the NetworkPolicy selects every workload's pods and lets out DNS, Postgres and HTTPS only", () => {
    const spec = policy();
    expect(spec.policyTypes).toEqual(['Ingress', 'Egress']);
    const selector = spec.podSelector?.matchLabels ?? {};
    for (const { file, kind, job } of workloads) {
      const labels =
        kind === 'Deployment'
          ? deployments.find((d) => d.file === file)!.spec!.template.metadata!.labels!
          : job!.template.metadata!.labels!;
      for (const [k, v] of Object.entries(selector)) expect(labels[k], file).toBe(v);
    }
    const egressPorts = (spec.egress ?? []).flatMap((rule) =>
      (rule.ports ?? []).map((p) => p.port),
    );
    expect(new Set(egressPorts)).toEqual(new Set([53, 5432, 443]));
    // HTTPS goes to public addresses only: not the cloud metadata endpoint.
    const https = spec.egress!.find((rule) => rule.ports?.some((p) => p.port === 443));
    expect(https?.to?.[0]?.ipBlock?.except).toContain('169.254.0.0/16');
    // DNS: the cluster resolver's pods in kube-system, not every namespace.
    const dns = spec.egress!.find((rule) => rule.ports?.some((p) => p.port === 53));
    expect(dns?.to?.[0]?.namespaceSelector?.matchLabels).toEqual({
      'kubernetes.io/metadata.name': 'kube-system',
    });
  });

  it("no rule lets the database port out to everyone: its address is the operator's placeholder", () => {
    const spec = policy();
    for (const rule of spec.egress ?? []) {
      const ports = (rule.ports ?? []).map((p) => p.port);
      const everywhere =
        !rule.to?.length ||
        rule.to.some((peer) => peer.ipBlock?.cidr === '0.0.0.0/0' || peer.ipBlock?.cidr === '::/0');
      // A rule open to every address may carry HTTPS, never PostgreSQL (or any port).
      if (everywhere) expect(ports, JSON.stringify(rule)).toEqual([443]);
    }
    const database = spec.egress!.filter((rule) => rule.ports?.some((p) => p.port === 5432));
    expect(database).toHaveLength(1);
    expect(database[0]!.to).toEqual([{ ipBlock: { cidr: PLACEHOLDER } }]);
  });

  it('ingress: the webhook port from one namespace, the metrics port from another, nothing from everyone', () => {
    const spec = policy();
    const serve = deployments[0]!.spec!.template.spec!.containers[0]!;
    const named = (serve.ports ?? []).map((p) => p.name);
    const rules = spec.ingress ?? [];
    expect(rules.map((rule) => rule.ports?.map((p) => p.port))).toEqual([['http'], ['metrics']]);
    for (const rule of rules) {
      for (const port of rule.ports ?? []) expect(named).toContain(port.port);
      // `from` missing or empty, or an empty selector, would admit every source.
      expect(rule.from?.length, JSON.stringify(rule)).toBe(1);
      const [peer] = rule.from!;
      expect(peer?.ipBlock).toBeUndefined();
      expect(peer?.podSelector).toBeUndefined();
      expect(peer?.namespaceSelector?.matchExpressions).toEqual([
        { key: 'kubernetes.io/metadata.name', operator: 'In', values: [PLACEHOLDER] },
      ]);
    }
  });

  it("the component fills every placeholder from the overlay's ConfigMap listings-sync-network", () => {
    const component = parseYaml(
      read('k8s/components/network-policy/kustomization.yaml'),
      '1.2',
    )[0] as {
      replacements: {
        source: { kind: string; name: string; fieldPath: string };
        targets: { fieldPaths: string[] }[];
      }[];
    };
    const filled = component.replacements.flatMap((r) => {
      expect(r.source).toMatchObject({ kind: 'ConfigMap', name: 'listings-sync-network' });
      return r.targets.flatMap((t) => t.fieldPaths);
    });
    // Each placeholder's path in the policy, found by walking it.
    const placeholders: string[] = [];
    const walk = (value: unknown, path: string[]) => {
      if (value === PLACEHOLDER) placeholders.push(path.join('.'));
      else if (value && typeof value === 'object') {
        for (const [key, child] of Object.entries(value)) walk(child, [...path, key]);
      }
    };
    walk(networkPolicies[0]!.spec, ['spec']);
    expect(placeholders).toHaveLength(3);
    expect([...filled].sort()).toEqual([...placeholders].sort());
    expect(component.replacements.map((r) => r.source.fieldPath).sort()).toEqual([
      'data.DATABASE_CIDR',
      'data.INGRESS_NAMESPACE',
      'data.MONITORING_NAMESPACE',
    ]);
  });
});

describe('Dockerfile and .dockerignore', () => {
  const dockerfile = read('Dockerfile');
  // Instructions only: comments may mention anything.
  const instructions = dockerfile
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const has = (pattern: RegExp) => instructions.some((line) => pattern.test(line));

  it('builds on node:24-slim in stages, installing production dependencies only', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24-slim$/m);
    expect(instructions.filter((l) => /^FROM \$\{NODE_IMAGE\} AS \w+$/.test(l))).toHaveLength(2);
    expect(has(/^RUN .*npm ci --omit=dev/)).toBe(true);
    expect(has(/^COPY package\.json package-lock\.json \.\/$/)).toBe(true);
    // The lock file is copied before the sources, so the install layer caches.
    const lockCopy = instructions.findIndex((l) => l.includes('package-lock.json'));
    const srcCopy = instructions.findIndex((l) => /^COPY src /.test(l));
    expect(lockCopy).toBeGreaterThan(-1);
    expect(srcCopy).toBeGreaterThan(lockCopy);
    expect(has(/^COPY --from=deps \/app\/node_modules /)).toBe(true);
    expect(has(/^COPY migrations /)).toBe(true);
  });

  it('runs as a non-root user, with a healthcheck and the CLI as entrypoint', () => {
    const users = instructions.filter((l) => l.startsWith('USER '));
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^USER (root|0)(:|$)/);
    expect(has(/^ENV NODE_ENV=production$/)).toBe(true);
    expect(has(/^WORKDIR \/app$/)).toBe(true);
    expect(has(/^HEALTHCHECK .*CMD node .*\/healthz/)).toBe(true);
    expect(has(/^ENTRYPOINT \["node", "bin\/listings-sync\.mjs"\]$/)).toBe(true);
    expect(has(/^CMD \["serve"\]$/)).toBe(true);
    // Airbyte runs a source as "$AIRBYTE_ENTRYPOINT spec|check|discover|read" (docs/airbyte.md).
    expect(has(/^ENV AIRBYTE_ENTRYPOINT="node bin\/listings-sync\.mjs airbyte"$/)).toBe(true);
    // The webhooks and the metrics, as the ConfigMap's PORT and METRICS_PORT.
    expect(has(/^EXPOSE 8080 9464$/)).toBe(true);
    expect(has(/^HEALTHCHECK .*METRICS_PORT\|\|9464\)\+'\/healthz'/)).toBe(true);
    expect(has(/^STOPSIGNAL SIGTERM$/)).toBe(true);
    // The embedded database's directory belongs to the unprivileged user.
    expect(has(/^RUN mkdir -p \/app\/\.data && chown node:node \/app\/\.data$/)).toBe(true);
  });

  it('leaves the V8 flags to the process entry: no copy in the image, npm start, the manifests', () => {
    const flags = productionNodeFlags();
    expect(flags).toContain('--max-old-space-size=256');
    // PGlite's WebAssembly on its baseline compiler: the optimising tier's compilations of
    // PostgreSQL's largest functions take hundreds of MB (docs/sizing.md, "Embedded (PGlite)").
    expect(flags).toContain('--liftoff-only');
    // bin/listings-sync.mjs is the one place they are written (docs/sizing.md, "The V8 flags").
    const copies = [
      'Dockerfile',
      'package.json',
      'deploy/compose.yaml',
      'deploy/listings-sync.env.example',
      'deploy/systemd/listings-sync-serve.service',
      'deploy/systemd/listings-sync-sync.service',
      'airbyte/source-listings-sync/metadata.yaml',
      ...yamlFiles.map((file) => `k8s/${file}`),
    ].filter((file) =>
      read(file)
        .split('\n')
        .filter((line) => !line.trim().startsWith('#'))
        .some((line) =>
          /--(max-old-space-size|max-semi-space-size|heap-growing-percent|liftoff-only)\b/.test(
            line,
          ),
        ),
    );
    expect(copies).toEqual([]);
    expect(instructions.filter((line) => line.includes('NODE_OPTIONS'))).toEqual([]);
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts[
      'start'
    ];
    expect(start).toBe('node bin/listings-sync.mjs demo');
  });

  it('says how to pin the base image by digest, and docs/deploy.md documents it', () => {
    const pin = /--build-arg NODE_IMAGE=node:24-slim@sha256:<digest>/;
    expect(dockerfile).toMatch(pin);
    const deploy = read('docs/deploy.md');
    expect(deploy).toContain('### Pinning the base image');
    expect(deploy).toMatch(pin);
  });

  it('.dockerignore keeps dependencies, git, local data and secrets out of the context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'));
    for (const entry of ['node_modules', '.git', '.data', 'test', 'credentials.json', '*.log']) {
      expect(ignored).toContain(entry);
    }
    // What the image copies must not be ignored.
    for (const needed of ['src', 'migrations', 'package.json', 'package-lock.json']) {
      expect(ignored).not.toContain(needed);
    }
  });
});

/** Every string at any depth of a parsed JSON value. */
function jsonStrings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(jsonStrings);
  if (value && typeof value === 'object') return Object.values(value).flatMap(jsonStrings);
  return [];
}

/**
 * Every property name in the kubernetes-models type declarations we use (core, apps,
 * batch, and apimachinery's ObjectMeta and LabelSelector).
 */
function knownFieldNames(): Set<string> {
  const roots = [
    ...(PROMETHEUS_OPERATOR ? [PROMETHEUS_OPERATOR.dir] : []),
    'node_modules/kubernetes-models/v1',
    'node_modules/kubernetes-models/apps/v1',
    'node_modules/kubernetes-models/batch/v1',
    'node_modules/kubernetes-models/policy/v1',
    'node_modules/kubernetes-models/networking.k8s.io/v1',
    'node_modules/@kubernetes-models/apimachinery',
  ];
  const names = new Set<string>();
  for (const root of roots.map((r) => (r.startsWith('/') ? r : join(ROOT, r)))) {
    if (!existsSync(root)) continue;
    const files = readdirSync(root, { recursive: true, encoding: 'utf8' });
    for (const file of files.filter((f) => f.endsWith('.d.ts'))) {
      const text = readFileSync(join(root, file), 'utf8');
      for (const match of text.matchAll(/^\s+"([A-Za-z0-9_$]+)"\??:/gm)) names.add(match[1]!);
    }
  }
  return names;
}
