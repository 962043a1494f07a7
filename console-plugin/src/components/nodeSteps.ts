// The steps a node went through, for the node table: from its entry in the status (as src/estimate/measured.rs
// measures them) or its record (the finished nodes in the rollout record, src/rollout_record.rs). The upgrade is one
// step here; the timeline, which draws its parts, comes from numo laid out.
import type { NodeProgress, Step } from '../types';
import { ms } from '../time';
import type { RecordedNode } from '../record';

export type Measured = { step: Step; start: number; end: number };

/** The steps of `entry` that numo saw start, each with its start and end; a step under way ends at `until`. The
 * upgrade is one step here, also where numo saw its drain end. */
export const measured = (entry: NodeProgress, until: number): Measured[] => {
  const soaking = entry.phase === 'Soaking';
  const finished = ms(entry.finishedAt);
  const cleaned = soaking ? finished : undefined;
  const marks: [Step, number | undefined][] = [
    ['Gate', ms(entry.startedAt)],
    // Without the MCO's start seen, the time from the release to the upgrade's end counts as the upgrade.
    [!entry.upgradingAt && entry.upgradedAt ? 'Upgrade' : 'WaitForMco', ms(entry.releasedAt)],
    ['Upgrade', ms(entry.upgradingAt)],
    ['Cleanup', ms(entry.upgradedAt)],
    ['Soak', soaking ? (ms(entry.soakStartedAt) ?? cleaned) : undefined],
  ];
  const steps: Measured[] = [];
  marks.forEach(([step, start], i) => {
    if (start === undefined) return;
    const next = marks.slice(i + 1).find(([, t]) => t !== undefined)?.[1];
    let end = Math.max(next ?? (step === 'Cleanup' ? cleaned : undefined) ?? until, start);
    // A node that failed or was held ends its last step when it finished.
    if ((entry.phase === 'Failed' || entry.phase === 'Ungated') && finished !== undefined && end > finished) {
      end = Math.max(finished, start);
    }
    steps.push({ step, start, end });
  });
  return steps;
};

/** The steps of a node the rollout record keeps (the upgrade whole). */
export const recordedSteps = (node: RecordedNode): Measured[] => {
  const [started, released, upgrading, upgraded, soak, finished] = node.times;
  const wait: Step = upgrading === undefined && upgraded !== undefined ? 'Upgrade' : 'WaitForMco';
  const between = (marks: [Step, number | undefined][], end: number): Measured[] => {
    const seen = marks.filter((m): m is [Step, number] => m[1] !== undefined);
    return seen.map(([step, start], i) => ({ step, start, end: Math.max(seen[i + 1]?.[1] ?? end, start) }));
  };
  const steps = between(
    [
      ['Gate', started],
      [wait, released],
      ['Upgrade', upgrading],
      ['Cleanup', upgraded],
    ],
    soak ?? finished ?? node.done,
  );
  if (soak !== undefined) steps.push(...between([['Soak', soak]], node.done));
  return steps;
};
