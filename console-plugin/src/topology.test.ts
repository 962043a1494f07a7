import { domainLabel, domainOf, groupByDomain, waveState } from './topology';
import { t } from './__fixtures__/i18n';
import { topologyRunConfig, ZONE, zoneOf } from './__fixtures__/topology';
import type { TopologyStatus } from './types';

const topology = (): TopologyStatus => topologyRunConfig().status?.topology as TopologyStatus;

describe('a rollout by failure domain', () => {
  it("reads a node's domain from its label, '' without it, shown as the missing label", () => {
    expect(domainOf({ [ZONE]: 'zone-a' }, ZONE)).toBe('zone-a');
    expect(domainOf({ other: 'x' }, ZONE)).toBe('');
    expect(domainOf(undefined, ZONE)).toBe('');
    expect(domainLabel('', ZONE, t)).toBe('(no topology.kubernetes.io/zone label)');
    expect(domainLabel('zone-a', ZONE, t)).toBe('zone-a');
  });

  it('says where each wave is: done, under way or to go', () => {
    const topo = topology();
    expect((topo.waves ?? []).map((w) => [w.domain, waveState(topo, w)])).toEqual([
      ['zone-a', 'done'],
      ['zone-b', 'in-progress'],
      ['zone-c', 'pending'],
      ['', 'pending'],
    ]);
  });

  it('groups rows by domain in wave order, keeping their order, every wave with a group', () => {
    const rows = ['worker-5', 'worker-2', 'worker-0', 'worker-3', 'worker-1'];
    const groups = groupByDomain(rows, (r) => r, topology(), zoneOf, t);
    expect(groups.map((g) => [g.label, g.state, `${g.done}/${g.nodes}`, g.rows])).toEqual([
      ['zone-a', 'done', '2/2', ['worker-0', 'worker-1']],
      ['zone-b', 'in-progress', '0/2', ['worker-2', 'worker-3']],
      ['zone-c', 'pending', '0/1', []],
      ['(no topology.kubernetes.io/zone label)', 'pending', '0/1', ['worker-5']],
    ]);
  });

  it('puts a domain no wave names after the waves, counting its own rows', () => {
    const groups = groupByDomain(
      ['worker-9', 'worker-0'],
      (r) => r,
      topology(),
      { ...zoneOf, 'worker-9': 'zone-z' },
      t,
    );
    expect(groups.map((g) => [g.domain, g.state, g.nodes, g.rows])).toEqual([
      ['zone-a', 'done', 2, ['worker-0']],
      ['zone-b', 'in-progress', 2, []],
      ['zone-c', 'pending', 1, []],
      ['', 'pending', 1, []],
      ['zone-z', 'pending', 1, ['worker-9']],
    ]);
  });
});
