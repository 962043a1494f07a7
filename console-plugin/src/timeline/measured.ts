// The steps a node went through, from its entry in the status (src/estimate/measured.rs) or its record (the
// finished nodes in the rollout record, src/controllers/run_config/preview/timeline.rs, recorded_row).
import type { NodeProgress, Step } from '../types';
import { ms } from '../time';
import type { RecordedNode } from '../record';

export type Measured = { step: Step; start: number; end: number };

/** The steps of `entry` that numo saw start, each with its start and end; a step under way ends at `until`. The
 * upgrade is one step here, also where numo saw its drain end (`split` draws its parts). */
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

/** `steps` with the upgrade split into its parts where `drained` (when the drain ended) is known: the drain up to
 * it, the reboot after it (src/estimate/measured.rs, split). */
export const split = (steps: Measured[], drained: number | undefined): Measured[] =>
  drained === undefined
    ? steps
    : steps.flatMap((s): Measured[] => {
        if (s.step !== 'Upgrade') return [s];
        const at = Math.min(Math.max(drained, s.start), s.end);
        return [
          { step: 'Drain', start: s.start, end: at },
          { step: 'Reboot', start: at, end: s.end },
        ];
      });

/** The steps of `entry` as the timeline draws them: `measured`, its upgrade in its parts where numo saw the drain
 * end (`drainedAt`, from MachineConfigNodes on OpenShift 4.20 and later). */
export const drawnSteps = (entry: NodeProgress, until: number): Measured[] =>
  split(measured(entry, until), ms(entry.drainedAt));

/** The steps of a node the rollout record keeps (the upgrade whole: `split` with `drained` draws its parts). */
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

/** The steps of a recorded node as the timeline draws them: its upgrade in its parts where the record kept when the
 * drain ended (records written before numo read MachineConfigNodes have no such time). */
export const drawnRecordedSteps = (node: RecordedNode): Measured[] =>
  node.times[2] === undefined ? recordedSteps(node) : split(recordedSteps(node), node.times[6]);
