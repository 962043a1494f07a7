// The types the plugin reads. numo's own are generated from src/api, never spelled out here: its kinds
// (MutexRunConfig, MutexTarget and every object of their spec and status) from the CRD schemas into ./api-types.ts
// (`cargo xtask plugin-types`), its names (phases, steps, checks, conditions) into ./api-names.ts (`cargo xtask
// plugin-names`). What follows them is the plugin's own.
import type { K8sResourceCommon } from '@openshift-console/dynamic-plugin-sdk';

import type { JobRecord } from './api-types';

export type * from './api-types';

export type * from './api-names';
export { NODE_PHASES } from './api-names';
import type { Step, UPGRADE_PARTS } from './api-names';

// `Drain` and `Reboot` (steps) are parts of `Upgrade` (from `upgradingAt` to `drainedAt`, and from `drainedAt` to
// `upgradedAt`), measured only where `drainedAt` is known; `Upgrade` is still measured whole, and is what
// projections use.

/** The parts of `Upgrade`. */
export type UpgradePart = (typeof UPGRADE_PARTS)[number];

/** The steps a rollout is projected in: every step but the parts of `Upgrade`. */
export type WholeStep = Exclude<Step, UpgradePart>;

/** The namespace a recorded Job runs in: its own, or else its rule's. */
export const jobNamespace = (job: JobRecord): string => job.namespace || job.rule.split('/')[0];

export type ConfigMap = K8sResourceCommon & { data?: Record<string, string> };

export type Node = K8sResourceCommon;
