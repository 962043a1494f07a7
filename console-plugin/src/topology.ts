// A rollout by failure domain (`status.topology`): which domain each node is in (the value of its `key` label), and
// the rollout's rows grouped by domain in the order of the waves, each group saying how far its wave is. Pure, for
// the node table and the timeline alike.
import type { TopologyStatus, Wave } from './types';
import type { Translate } from './i18n';

/** Where a wave is. */
export type WaveState = 'done' | 'in-progress' | 'pending';

/** One domain's rows, with its wave's figures. */
export type DomainGroup<R> = {
  /** The domain ('' for the nodes without the label). */
  domain: string;
  /** The domain as shown: its name, or "(no <key> label)". */
  label: string;
  state: WaveState;
  /** Nodes of the wave done, and in all (from the wave; a domain with no wave counts its rows). */
  done: number;
  nodes: number;
  rows: R[];
};

/** A node's domain: the value of its label `key`, '' without it. */
export const domainOf = (labels: Record<string, string> | undefined, key: string): string => labels?.[key] ?? '';

/** The domain as a person reads it. */
export const domainLabel = (domain: string, key: string, t: Translate): string =>
  domain === '' ? t('(no {{label}} label)', { label: key }) : domain;

/** Where a domain's wave is: over (in `done`, or finished), under way (started, or the current one once another
 * started: between domains `current` names the one that starts next), or to go. */
export const waveState = (topology: TopologyStatus, wave: Wave): WaveState => {
  if ((topology.done ?? []).includes(wave.domain) || wave.finishedAt) return 'done';
  if (wave.startedAt || (topology.current === wave.domain && wave.done > 0)) return 'in-progress';
  return 'pending';
};

/** The words for a wave's state, as its group's label says them. */
export const waveStateWords = (t: Translate): Record<WaveState, string> => ({
  done: t('done'),
  'in-progress': t('in progress'),
  pending: t('pending'),
});

/**
 * `rows` grouped by the domain of the node each names (`nodeOf`; `domains` maps node names to domains), the groups
 * in wave order, then any domain no wave names in the order its rows come; rows keep their order in their group.
 * Every wave has a group, rows or not.
 */
export const groupByDomain = <R>(
  rows: R[],
  nodeOf: (row: R) => string,
  topology: TopologyStatus,
  domains: Record<string, string>,
  t: Translate,
): DomainGroup<R>[] => {
  const groups = new Map<string, DomainGroup<R>>();
  (topology.waves ?? []).forEach((wave) => {
    if (groups.has(wave.domain)) return;
    groups.set(wave.domain, {
      domain: wave.domain,
      label: domainLabel(wave.domain, topology.key, t),
      state: waveState(topology, wave),
      done: wave.done,
      nodes: wave.nodes,
      rows: [],
    });
  });
  rows.forEach((row) => {
    const domain = domains[nodeOf(row)] ?? '';
    let group = groups.get(domain);
    if (!group) {
      group = {
        domain,
        label: domainLabel(domain, topology.key, t),
        state: (topology.done ?? []).includes(domain)
          ? 'done'
          : topology.current === domain
            ? 'in-progress'
            : 'pending',
        done: 0,
        nodes: 0,
        rows: [],
      };
      groups.set(domain, group);
    }
    group.rows.push(row);
  });
  // A domain no wave names counts its own rows.
  groups.forEach((group) => {
    if (!(topology.waves ?? []).some((w) => w.domain === group.domain)) group.nodes = group.rows.length;
  });
  return [...groups.values()];
};

/** A group's `data-test` name: the domain, or `none` for the nodes without the label. */
export const groupTestId = (domain: string): string => (domain === '' ? 'none' : domain);
