import { actionPatch, actionText, pointer, retryableNodes, skippableNodes, skipValue } from './patches';
import { runConfig } from '../__fixtures__';
import type { MutexRunConfig } from '../types';
import { t } from '../__fixtures__/i18n';

const bare = (): MutexRunConfig => {
  const rc = runConfig();
  delete rc.metadata?.annotations;
  return rc;
};

describe('the patches', () => {
  it('pause and resume set spec.paused', () => {
    expect(actionPatch('pause', runConfig())).toEqual([{ op: 'add', path: '/spec/paused', value: true }]);
    expect(actionPatch('resume', runConfig())).toEqual([{ op: 'add', path: '/spec/paused', value: false }]);
  });

  it('retry sets the retry annotation to the node, creating the annotations when there are none', () => {
    expect(actionPatch('retry', runConfig(), 'worker-3')).toEqual([
      { op: 'add', path: '/metadata/annotations/openshift-optional.skrzypek.io~1retry', value: 'worker-3' },
    ]);
    expect(actionPatch('retry', bare(), 'worker-3')).toEqual([
      { op: 'add', path: '/metadata/annotations', value: { 'openshift-optional.skrzypek.io/retry': 'worker-3' } },
    ]);
    const again = runConfig();
    if (again.metadata?.annotations) again.metadata.annotations['openshift-optional.skrzypek.io/retry'] = 'worker-1';
    expect(actionPatch('retry', again, 'worker-3')).toEqual([
      { op: 'test', path: '/metadata/annotations/openshift-optional.skrzypek.io~1retry', value: 'worker-1' },
      { op: 'replace', path: '/metadata/annotations/openshift-optional.skrzypek.io~1retry', value: 'worker-3' },
    ]);
  });

  it('skip adds the node to the comma list, testing that the list is still what the user saw', () => {
    expect(actionPatch('skip', runConfig(), 'worker-3')).toEqual([
      { op: 'test', path: '/metadata/annotations/openshift-optional.skrzypek.io~1skip', value: 'worker-9' },
      { op: 'replace', path: '/metadata/annotations/openshift-optional.skrzypek.io~1skip', value: 'worker-9,worker-3' },
    ]);
    expect(actionPatch('skip', bare(), 'worker-3')).toEqual([
      { op: 'add', path: '/metadata/annotations', value: { 'openshift-optional.skrzypek.io/skip': 'worker-3' } },
    ]);
    const other = bare();
    if (other.metadata) other.metadata.annotations = { team: 'storage' };
    expect(actionPatch('skip', other, 'worker-3')).toEqual([
      { op: 'add', path: '/metadata/annotations/openshift-optional.skrzypek.io~1skip', value: 'worker-3' },
    ]);
    const spaced = runConfig();
    if (spaced.metadata?.annotations)
      spaced.metadata.annotations['openshift-optional.skrzypek.io/skip'] = ' worker-9 , ,worker-8';
    expect(skipValue(spaced, 'worker-3')).toBe('worker-9,worker-8,worker-3');
    expect(skipValue(spaced, 'worker-8')).toBe('worker-9,worker-8');
  });

  it('escapes JSON pointers', () => {
    expect(pointer('a/b~c')).toBe('a~1b~0c');
  });

  it('offers failed and ungated nodes to retry, and failed ones first to skip', () => {
    expect(retryableNodes(runConfig()).map((n) => n.name)).toEqual(['worker-3']);
    expect(skippableNodes(runConfig())).toEqual(['worker-3', 'worker-2']);
  });
});

describe('the confirmations say exactly what will happen', () => {
  it('pause and resume', () => {
    expect(actionText('pause', runConfig(), t)).toEqual({
      title: 'Pause the rollout',
      effect:
        'numo will start no further node of upgrade-ops/gated-workers: nodes already in flight finish their gate, upgrade and cleanup, and the target pools stay paused until you resume.',
      change: 'This sets spec.paused to true.',
      confirm: 'Pause',
    });
    expect(actionText('resume', runConfig(), t).effect).toBe(
      'numo will go on with the rollout of upgrade-ops/gated-workers: the next node starts its gate Jobs as soon as nothing else holds it.',
    );
  });

  it('retry of a failed gate Job, a failed cleanup Job, a timed-out node and an ungated node', () => {
    expect(actionText('retry', runConfig(), t, 'worker-3').effect).toBe(
      "numo will run node worker-3's gate Jobs again: the failed Job storage-healthy-8b02e4f7aa runs again as attempt 2 (a new Job; the failed one stays for you to inspect).",
    );
    expect(actionText('retry', runConfig(), t, 'worker-3').change).toBe(
      'This sets the annotation openshift-optional.skrzypek.io/retry=worker-3 on upgrade-ops/gated-workers; numo removes it once it acted on it.',
    );
    const cleanup = runConfig();
    const job = cleanup.status?.nodes?.[1].jobs?.[0];
    if (job) job.phase = 'cleanup';
    expect(actionText('retry', cleanup, t, 'worker-3').effect).toMatch(
      /^numo will run node worker-3's cleanup Jobs again/,
    );
    const timedOut = runConfig();
    const entry = timedOut.status?.nodes?.[1];
    if (entry) entry.jobs = [];
    expect(actionText('retry', timedOut, t, 'worker-3').effect).toBe(
      "numo will run node worker-3's failed step again and give it a fresh nodeTimeout.",
    );
    if (entry) entry.phase = 'Ungated';
    expect(actionText('retry', timedOut, t, 'worker-3').effect).toBe(
      'numo will let the rollout of upgrade-ops/gated-workers go on past node worker-3: it stays Ungated, and its gate Jobs are not run after the fact.',
    );
  });

  it('skip', () => {
    const text = actionText('skip', runConfig(), t, 'worker-3');
    expect(text.title).toBe('Skip node worker-3');
    expect(text.effect).toBe(
      "numo will skip node worker-3: this rollout does not gate it and counts it as finished. numo keeps it held in its own paused pool and goes on with the next node; once the rollout restored the pools, the node's own pool upgrades it without a gate.",
    );
    expect(text.change).toBe(
      'This sets the annotation openshift-optional.skrzypek.io/skip=worker-9,worker-3 on upgrade-ops/gated-workers; it stays in force, for later upgrades too, until you remove it.',
    );
  });
});
