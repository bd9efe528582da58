/**
 * The overlay docs/deploy.md tells a user to write, rendered by `kubectl kustomize` over
 * this repository's k8s/: every container runs the overlay's image, everything lands in
 * the overlay's namespace, the Secret is the user's (no placeholder left), and each
 * documented component renders as documented: the network policy with the overlay's
 * values and no placeholder (and no build without them), the migrate Job for Argo CD
 * and Flux after the configuration it reads, the ServiceMonitor. Skipped, with the
 * reason printed, where kubectl is not installed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { parseAlertRules } from '../../src/alerts/rules.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const KUBECTL = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((path) => existsSync(path));
if (!KUBECTL) {
  process.stdout.write('test/deploy/k8s-overlay.test.ts: skipped, kubectl is not installed\n');
}

/** The fenced yaml block of a document that starts with `first`. */
function documentedBlock(file: string, first: string): string {
  const doc = readFileSync(join(ROOT, file), 'utf8');
  const blocks = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  const block = blocks.find((b) => b.startsWith(first));
  if (!block) throw new Error(`${file} has no yaml block starting with ${first}`);
  return block;
}

/** The fenced block of docs/deploy.md that starts with `# overlays/prod/kustomization.yaml`. */
function documentedOverlay(): string {
  return documentedBlock('docs/deploy.md', '# overlays/prod/kustomization.yaml\n');
}

/** The lines of docs/deploy.md's `# overlays/prod/secrets.env` block, comment dropped. */
function documentedSecretsEnv(): string {
  const doc = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
  const block = /```sh\n# overlays\/prod\/secrets\.env\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!block) throw new Error('docs/deploy.md has no `# overlays/prod/secrets.env` block');
  return block;
}

interface K8sObject {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  spec?: unknown;
}

function containersOf(object: K8sObject): { image: string }[] {
  const found: { image: string }[] = [];
  const walk = (value: unknown) => {
    if (!value || typeof value !== 'object') return;
    for (const [key, inner] of Object.entries(value)) {
      if ((key === 'containers' || key === 'initContainers') && Array.isArray(inner)) {
        found.push(...(inner as { image: string }[]));
      } else walk(inner);
    }
  };
  walk(object.spec);
  return found;
}

describe.skipIf(!KUBECTL)('the overlay of docs/deploy.md', () => {
  const dir = mkdtempSync(join(tmpdir(), 'overlay-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function render(
    extra: { kustomization?: string; files?: Record<string, string>; overlay?: string } = {},
  ) {
    cpSync(join(ROOT, 'k8s'), join(dir, 'k8s'), { recursive: true });
    const overlayDir = join(dir, 'overlays/prod');
    mkdirSync(overlayDir, { recursive: true });
    writeFileSync(
      join(overlayDir, 'kustomization.yaml'),
      (extra.overlay ?? documentedOverlay()) + (extra.kustomization ?? ''),
    );
    for (const [name, text] of Object.entries(extra.files ?? {})) {
      writeFileSync(join(overlayDir, name), text);
    }
    writeFileSync(
      join(overlayDir, 'credentials.json'),
      JSON.stringify([
        {
          name: 'east',
          baseUrl: 'https://listings.example.com',
          authToken: 'tok-overlay',
          userEmail: 'ops@example.com',
        },
      ]),
    );
    // The documented secrets.env, with the overlay's own values for its placeholders.
    writeFileSync(
      join(overlayDir, 'secrets.env'),
      documentedSecretsEnv()
        .replace(
          'postgres://USER:PASSWORD@HOST:5432/listings',
          'postgres://sync:pw-overlay@db:5432/warehouse',
        )
        .replace('WEBHOOK_SECRET=REPLACE_ME', 'WEBHOOK_SECRET=wh-overlay')
        .replace('ALERT_WEBHOOK_SECRET=REPLACE_ME', 'ALERT_WEBHOOK_SECRET=al-overlay')
        .replace('services/REPLACE_ME', 'services/T0/B0/slack-overlay'),
    );
    const text = execFileSync(KUBECTL as string, ['kustomize', overlayDir], { encoding: 'utf8' });
    return parseAllDocuments(text).map((d) => d.toJSON() as K8sObject);
  }

  interface PodSpec {
    containers?: Container[];
    initContainers?: Container[];
    volumes?: {
      name: string;
      projected?: { sources: { configMap?: { name: string; optional?: boolean } }[] };
    }[];
  }
  interface Container {
    name: string;
    env?: { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
    envFrom?: { configMapRef?: { name: string } }[];
    volumeMounts?: { name: string; mountPath: string }[];
  }

  function podOf(object: K8sObject): PodSpec | undefined {
    const spec = object.spec as {
      template?: { spec?: PodSpec };
      jobTemplate?: { spec?: { template?: { spec?: PodSpec } } };
    };
    return spec?.template?.spec ?? spec?.jobTemplate?.spec?.template?.spec;
  }

  it('with the alert-rules block, every container that reads the ConfigMap can read the rules file', () => {
    const rules = documentedBlock('docs/alerts.md', 'rules:\n');
    const rendered = render({
      kustomization: documentedBlock(
        'docs/deploy.md',
        '# overlays/prod/kustomization.yaml, continued: alert rules',
      ),
      files: { 'alert-rules.yaml': rules },
    });
    const config = rendered.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name === 'listings-sync',
    );
    const path = config?.data?.['ALERT_RULES_FILE'];
    expect(path).toBe('/etc/listings-sync/alert-rules.yaml');
    const generated = rendered.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('listings-sync-alert-rules-'),
    );
    expect(generated?.data?.['alert-rules.yaml']).toBe(rules);
    // The documented example is itself a valid rules file.
    expect(parseAlertRules(parseYaml(rules), 'alert-rules.yaml').syncStale.enabled).toBe(true);

    const readers = rendered.flatMap((object) => {
      const pod = podOf(object);
      if (!pod) return [];
      return [...(pod.initContainers ?? []), ...(pod.containers ?? [])]
        .filter((c) => c.envFrom?.some((from) => from.configMapRef?.name === 'listings-sync'))
        .map((container) => ({
          where: `${object.metadata.name}/${container.name}`,
          pod,
          container,
        }));
    });
    expect(readers.length).toBeGreaterThanOrEqual(4);
    for (const { where, pod, container } of readers) {
      const mount = container.volumeMounts?.find((m) => path?.startsWith(`${m.mountPath}/`));
      expect(mount, `${where} mounts nothing at ${path}`).toBeDefined();
      const volume = pod.volumes?.find((v) => v.name === mount?.name);
      const sources = volume?.projected?.sources ?? [];
      expect(
        sources.map((source) => source.configMap?.name),
        where,
      ).toContain(generated?.metadata.name);
    }
  });

  const objects = render();
  const overlay = parseYaml(documentedOverlay()) as {
    namespace: string;
    images: { name: string; newName: string; newTag: string }[];
  };

  it('every container runs the image the overlay names (the documented upgrade changes it)', () => {
    const image = overlay.images[0];
    expect(image?.name).toBe('listings-sync');
    const images = new Set(objects.flatMap(containersOf).map((c) => c.image));
    expect([...images]).toEqual([`${image?.newName}:${image?.newTag}`]);
  });

  it('every object lands in the overlay namespace', () => {
    expect(objects.length).toBeGreaterThan(5);
    for (const object of objects) expect(object.metadata.namespace).toBe(overlay.namespace);
  });

  it("the Secret holds the overlay's files, and no placeholder", () => {
    const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === 'listings-sync');
    const data = Object.fromEntries(
      Object.entries(secret?.data ?? {}).map(([k, v]) => [
        k,
        Buffer.from(v, 'base64').toString('utf8'),
      ]),
    );
    expect(data['credentials.json']).toContain('tok-overlay');
    expect(data['DATABASE_URL']).toBe('postgres://sync:pw-overlay@db:5432/warehouse');
    expect(JSON.stringify(data)).not.toContain('REPLACE_ME');
  });

  it('every secretKeyRef of every container resolves to a key of the generated Secret', () => {
    const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === 'listings-sync');
    const keys = Object.keys(secret?.data ?? {});
    expect(keys).toEqual(expect.arrayContaining(['ALERT_SLACK_WEBHOOK_URL', 'ALERT_WEBHOOK_URL']));
    const refs = objects.flatMap((object) => {
      const pod = podOf(object);
      return [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].flatMap((c) =>
        (c.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : [])),
      );
    });
    expect(refs.length).toBeGreaterThan(5);
    for (const ref of refs) {
      expect(ref.name).toBe('listings-sync');
      expect(keys).toContain(ref.key);
    }
    // The ConfigMap carries no credential.
    const config = objects.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name === 'listings-sync',
    );
    expect(Object.keys(config?.data ?? {}).filter((k) => keys.includes(k))).toEqual([]);
  });

  /** The overlay with a documented block's keys added (its lists replace the overlay's). */
  const withBlock = (first: string) =>
    stringifyYaml({
      ...overlay,
      ...(parseYaml(documentedBlock('docs/deploy.md', first)) as Record<string, unknown>),
    });
  const annotations = (o: K8sObject) =>
    (o.metadata as { annotations?: Record<string, string> }).annotations ?? {};

  it('renders the PodDisruptionBudget; no NetworkPolicy, ServiceMonitor or Job unless a component adds it', () => {
    const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget');
    expect(pdb?.metadata).toMatchObject({
      name: 'listings-sync-serve',
      namespace: overlay.namespace,
    });
    for (const kind of ['NetworkPolicy', 'ServiceMonitor', 'Job']) {
      expect(objects.filter((o) => o.kind === kind)).toEqual([]);
    }
  });

  it("the network policy component takes the overlay's three values, and leaves no placeholder", () => {
    const rendered = render({
      overlay: withBlock(
        '# overlays/prod/kustomization.yaml: its components, with the network policy',
      ),
    });
    const policies = rendered.filter((o) => o.kind === 'NetworkPolicy');
    expect(policies).toHaveLength(1);
    const policy = policies[0]!;
    expect(policy.metadata).toMatchObject({ name: 'listings-sync', namespace: overlay.namespace });
    expect(JSON.stringify(policy)).not.toContain('REPLACE_ME');
    const spec = policy.spec as {
      ingress: { from: { namespaceSelector: { matchExpressions: { values: string[] }[] } }[] }[];
      egress: { to?: { ipBlock?: { cidr: string } }[]; ports: { port: number }[] }[];
    };
    const namespaces = spec.ingress.map(
      (rule) => rule.from[0]?.namespaceSelector.matchExpressions[0]?.values,
    );
    expect(namespaces).toEqual([['ingress-nginx'], ['monitoring']]);
    const database = spec.egress.find((rule) => rule.ports.some((p) => p.port === 5432));
    expect(database?.to).toEqual([{ ipBlock: { cidr: '10.0.12.7/32' } }]);
    // The values' ConfigMap is read at build time and never applied.
    expect(rendered.some((o) => o.metadata.name.startsWith('listings-sync-network'))).toBe(false);
    expect(rendered.length).toBe(objects.length + 1);
  });

  it('the network policy component without its values fails the build, naming the ConfigMap', () => {
    render();
    const overlayDir = join(dir, 'overlays/prod');
    writeFileSync(
      join(overlayDir, 'kustomization.yaml'),
      stringifyYaml({
        ...overlay,
        components: ['../../k8s', '../../k8s/components/network-policy'],
      }),
    );
    const result = spawnSync(KUBECTL as string, ['kustomize', overlayDir], { encoding: 'utf8' });
    expect(result.status).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('listings-sync-network');
  });

  it('the migrate Job component: a Sync hook in wave -1, after every ConfigMap and Secret (wave -2)', () => {
    const rendered = render({
      overlay: withBlock(
        '# overlays/prod/kustomization.yaml: its components, for Argo CD and Flux',
      ),
      kustomization: documentedBlock(
        'docs/deploy.md',
        '# overlays/prod/kustomization.yaml, continued: alert rules',
      ),
      files: { 'alert-rules.yaml': 'rules: {}\n' },
    });
    const jobs = rendered.filter((o) => o.kind === 'Job');
    expect(jobs.map((j) => j.metadata.name)).toEqual(['listings-sync-migrate']);
    expect(annotations(jobs[0]!)).toMatchObject({
      'argocd.argoproj.io/hook': 'Sync',
      'argocd.argoproj.io/sync-wave': '-1',
      'kustomize.toolkit.fluxcd.io/force': 'enabled',
    });
    expect(containersOf(jobs[0]!).map((c) => c.image)).toEqual([
      `${overlay.images[0]?.newName}:${overlay.images[0]?.newTag}`,
    ]);
    const config = rendered.filter((o) => o.kind === 'ConfigMap' || o.kind === 'Secret');
    // The ConfigMap, the generated alert rules and the Secret.
    expect(config).toHaveLength(3);
    for (const object of config) {
      expect(annotations(object)['argocd.argoproj.io/sync-wave'], object.metadata.name).toBe('-2');
    }
    // Everything else stays in wave 0, after the Job.
    for (const object of rendered.filter((o) => !config.includes(o) && o.kind !== 'Job')) {
      expect(annotations(object)['argocd.argoproj.io/sync-wave'], object.metadata.name).toBe(
        undefined,
      );
    }
  });

  it('the ServiceMonitor component selects the rendered metrics Service', () => {
    const rendered = render({
      overlay: withBlock(
        '# overlays/prod/kustomization.yaml: its components, with the ServiceMonitor',
      ),
    });
    const monitors = rendered.filter((o) => o.kind === 'ServiceMonitor');
    expect(monitors).toHaveLength(1);
    expect(monitors[0]!.metadata.namespace).toBe(overlay.namespace);
    const selector = (monitors[0]!.spec as { selector: { matchLabels: Record<string, string> } })
      .selector.matchLabels;
    const selected = rendered.filter(
      (o) =>
        o.kind === 'Service' &&
        Object.entries(selector).every(([k, v]) => o.metadata.labels?.[k] === v),
    );
    expect(selected.map((o) => o.metadata.name)).toEqual(['listings-sync-metrics']);
  });

  it('the base alone renders nothing and names the missing Secret', () => {
    const result = spawnSync(KUBECTL as string, ['kustomize', join(ROOT, 'k8s')], {
      encoding: 'utf8',
    });
    expect(result.status).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('nothing selected by Secret');
    expect(result.stderr).toContain('/listings-sync.');
  });
});
