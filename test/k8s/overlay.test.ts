/**
 * The overlay docs/deploy.md tells a user to write, rendered by `kubectl kustomize` over
 * this repository's k8s/: every container runs the overlay's image, everything lands in
 * the overlay's namespace, the Secret is the user's (no placeholder left), and the
 * upgrade procedure's label selector picks the migrate Job. Skipped, with the reason
 * printed, where kubectl is not installed.
 */
import { execFileSync } from 'node:child_process';
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
import { parseAllDocuments, parse as parseYaml } from 'yaml';

const ROOT = join(import.meta.dirname, '..', '..');
const KUBECTL = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((path) => existsSync(path));
if (!KUBECTL) {
  process.stdout.write('test/k8s/overlay.test.ts: skipped, kubectl is not installed\n');
}

/** The fenced block of docs/deploy.md that starts with `# overlays/prod/kustomization.yaml`. */
function documentedOverlay(): string {
  const doc = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
  const blocks = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  const overlay = blocks.find((b) => b.startsWith('# overlays/prod/kustomization.yaml'));
  if (!overlay) throw new Error('docs/deploy.md has no overlays/prod/kustomization.yaml block');
  return overlay;
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

  function render(): K8sObject[] {
    cpSync(join(ROOT, 'k8s'), join(dir, 'k8s'), { recursive: true });
    const overlayDir = join(dir, 'overlays/prod');
    mkdirSync(overlayDir, { recursive: true });
    writeFileSync(join(overlayDir, 'kustomization.yaml'), documentedOverlay());
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
    writeFileSync(
      join(overlayDir, 'secrets.env'),
      'DATABASE_URL=postgres://sync:pw-overlay@db:5432/warehouse\nWEBHOOK_SECRET=wh-overlay\nALERT_WEBHOOK_SECRET=al-overlay\n',
    );
    const text = execFileSync(KUBECTL as string, ['kustomize', overlayDir], { encoding: 'utf8' });
    return parseAllDocuments(text).map((d) => d.toJSON() as K8sObject);
  }

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

  it('the upgrade selector app.kubernetes.io/component=migrate picks exactly the migrate Job', () => {
    const migrate = objects.filter(
      (o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'migrate',
    );
    expect(migrate.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'Job/listings-sync-migrate',
    ]);
  });
});
