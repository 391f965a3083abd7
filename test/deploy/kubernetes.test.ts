/**
 * deploy/kubernetes/observer.yaml: every object is valid against the Kubernetes API's schemas
 * (kubernetes-models validates each one as the API server would; no cluster is needed), and the
 * objects agree with each other and with the image: the probes ask the image's port and health
 * path, the selectors find the pods, every variable is one Observer reads, and a pod has time
 * for its preStop pause and the service's own graceful stop.
 */
import { readFileSync } from 'node:fs';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Service } from 'kubernetes-models/v1/Service';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

const FILE = 'deploy/kubernetes/observer.yaml';
/** The longest the service takes to stop after SIGTERM before it exits anyway (src/main.ts). */
const SHUTDOWN_LIMIT_SECONDS = 15;

const VALIDATORS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1 Deployment': Deployment,
  'v1 Service': Service,
  'policy/v1 PodDisruptionBudget': PodDisruptionBudget,
};

const objects = parseAllDocuments(readFileSync(FILE, 'utf8')).map((doc) => doc.toJS() as { apiVersion: string; kind: string } & Record<string, unknown>);
const find = <T>(kind: string) => objects.find((o) => o.kind === kind) as unknown as T;

interface Container {
  ports: Array<{ name: string; containerPort: number }>;
  env: Array<{ name: string }>;
  readinessProbe: { httpGet: { path: string; port: string } };
  livenessProbe: { httpGet: { path: string; port: string } };
  lifecycle: { preStop: { exec: { command: string[] } } };
}
interface DeploymentObject {
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: { terminationGracePeriodSeconds: number; containers: Container[] } };
  };
}

describe('the Kubernetes example', () => {
  it('holds only objects the Kubernetes API accepts', () => {
    expect(objects.map((o) => `${o.apiVersion} ${o.kind}`)).toEqual(Object.keys(VALIDATORS));
    for (const object of objects) {
      const Model = VALIDATORS[`${object.apiVersion} ${object.kind}`]!;
      expect(() => new Model(object as never).validate()).not.toThrow();
    }
  });

  it('rejects what the API server would reject (the validation is real)', () => {
    const deployment = structuredClone(find<DeploymentObject>('Deployment'));
    (deployment.spec.template.spec as Record<string, unknown>).terminationGracePeriodSeconds = 'thirty';
    expect(() => new Deployment(deployment as never).validate()).toThrow();
  });

  it("probes the image's port and health path, and its selectors find the pods", () => {
    const deployment = find<DeploymentObject>('Deployment');
    const labels = deployment.spec.template.metadata.labels;
    const [container] = deployment.spec.template.spec.containers;
    const image = readFileSync('Dockerfile', 'utf8');
    expect(image).toMatch(new RegExp(`^EXPOSE ${container!.ports[0]!.containerPort}$`, 'm'));
    for (const probe of [container!.readinessProbe, container!.livenessProbe]) {
      expect(probe.httpGet).toEqual({ path: '/api/v1/status', port: container!.ports[0]!.name });
    }
    expect(deployment.spec.selector.matchLabels).toEqual(labels);
    expect(find<{ spec: { selector: Record<string, string>; ports: Array<{ targetPort: string }> } }>('Service').spec).toMatchObject({
      selector: labels,
      ports: [{ targetPort: container!.ports[0]!.name }],
    });
    expect(find<{ spec: { selector: { matchLabels: Record<string, string> } } }>('PodDisruptionBudget').spec.selector.matchLabels).toEqual(labels);
  });

  it('sets only variables Observer reads, and leaves a pod time to pause and stop', () => {
    const deployment = find<DeploymentObject>('Deployment');
    const [container] = deployment.spec.template.spec.containers;
    const config = readFileSync('src/config/index.ts', 'utf8');
    for (const { name } of container!.env) expect(config).toContain(name);
    const [command, seconds] = container!.lifecycle.preStop.exec.command;
    expect(command).toBe('sleep');
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(Number(seconds) + SHUTDOWN_LIMIT_SECONDS);
  });
});
