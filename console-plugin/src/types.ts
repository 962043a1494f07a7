// The MutexRunConfig as numo's CRD defines it (config/crd, generated from src/api/mutex_run_config.rs and
// src/api/estimate.rs). Only what the plugin reads is typed; every field of the status is optional, as numo may
// not have written it yet.
import type { K8sResourceCommon } from '@openshift-console/dynamic-plugin-sdk';

// numo's names (phases, steps, checks, conditions) are generated from src/api into ./api-names.ts (`cargo xtask
// plugin-names`); they are never spelled out here.
import type {
  EstimateBasis,
  FailurePolicy,
  JobPhase,
  JobResult,
  KeySource,
  Step,
  TopologyMode,
  Trigger,
  VersionSource,
} from './api-names';

export type {
  Check,
  ConditionType,
  EstimateBasis,
  FailurePolicy,
  JobPhase,
  JobResult,
  KeySource,
  NodePhase,
  RunPhase,
  Step,
  TopologyMode,
  Trigger,
  VersionSource,
} from './api-names';
export { NODE_PHASES } from './api-names';
import type { NodePhase, RunPhase, UPGRADE_PARTS } from './api-names';

// `Drain` and `Reboot` (steps) are parts of `Upgrade` (from `upgradingAt` to `drainedAt`, and from `drainedAt` to
// `upgradedAt`), measured only where `drainedAt` is known; `Upgrade` is still measured whole, and is what
// projections use.

/** The parts of `Upgrade`. */
export type UpgradePart = (typeof UPGRADE_PARTS)[number];

/** The steps a rollout is projected in: every step but the parts of `Upgrade`. */
export type WholeStep = Exclude<Step, UpgradePart>;

export type JobRecord = {
  name: string;
  /** Absent when the Job runs in its rule's namespace (the one in `rule`): see `jobNamespace`. */
  namespace?: string;
  /** `namespace/name` of the MutexRule. */
  rule: string;
  phase: JobPhase;
  result: JobResult;
  attempt?: number;
  message?: string;
};

/** The namespace a recorded Job runs in: its own, or else its rule's. */
export const jobNamespace = (job: JobRecord): string => job.namespace || job.rule.split('/')[0];

export type NodeProgress = {
  name: string;
  phase: NodePhase;
  jobs?: JobRecord[];
  startedAt?: string;
  releasedAt?: string;
  upgradingAt?: string;
  /** When the Machine Config Operator had drained the node for this upgrade (its MachineConfigNode's `Drained`
   * condition turned True); set only where MachineConfigNodes are served (OpenShift 4.20 and later). */
  drainedAt?: string;
  upgradedAt?: string;
  finishedAt?: string;
  soakStartedAt?: string;
  message?: string;
  acceptedAt?: string;
};

export type Blocker = { check: string; message: string };

export type Condition = {
  type: string;
  status: 'True' | 'False' | 'Unknown' | string;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
};

export type Estimate = {
  end: string;
  nodesDone?: string;
  remainingNodes: number;
  restoreRounds?: number;
  basis: EstimateBasis;
  /** The seconds numo's estimate takes for each step (numo 0.2.0 and later); `Drain` and `Reboot`, where listed, are
   * the figures of `Upgrade`'s parts, which `Upgrade`'s own already covers. */
  stepSeconds?: { step: Step; seconds: number }[];
  assumes: string;
  computedAt: string;
};

export type StepSamples = { step: Step; count: number; seconds?: number[] };

export type StepFigure = { step: Step; count: number; medianSeconds: number; p90Seconds: number };

export type RolloutFigures = {
  rollout: string;
  startedAt?: string;
  finishedAt?: string;
  nodes: number;
  steps?: StepFigure[];
};

export type ForeignChange = {
  object: string;
  field: string;
  changedBy: string;
  changes: number;
  firstSeen: string;
  lastSeen: string;
  unresolved: boolean;
  action: string;
};

export type WindowTimes = { start: string; end?: string };

/** One failure domain of a rollout by domain: a wave (src/api/topology.rs, Wave). */
export type TopologyWave = {
  /** The domain: the value of the nodes' key label ('' for the nodes without it). */
  domain: string;
  nodes: number;
  done: number;
  startedAt?: string;
  finishedAt?: string;
};

/** The failure domains of the rollout, as numo moves through them (`status.topology`; absent without
 * `spec.topology`). */
export type Topology = {
  /** The node label whose value names a node's domain, e.g. `topology.kubernetes.io/zone`. */
  key: string;
  keySource?: KeySource;
  /** Unset when the nodes go in target and name order (the domains are still shown). */
  mode?: TopologyMode;
  /** Under `DomainAtATime`: the domain in flight (or, between domains, the one that starts next). */
  current?: string;
  /** The domains whose every node has finished. */
  done?: string[];
  /** Every domain in the order numo takes them. */
  waves?: TopologyWave[];
};

export type MutexRunConfigStatus = {
  observedGeneration?: number;
  phase?: RunPhase;
  message?: string;
  targetVersion?: string;
  targetConfig?: {
    rollout: string;
    pools?: { pool: string; renderedConfig: string }[];
    machineConfigs?: string[];
    behindSince?: string;
  };
  progress?: string;
  totalNodes?: number;
  nodes?: NodeProgress[];
  completedNodes?: string[];
  skippedNodes?: string[];
  pendingNodes?: number;
  startedAt?: string;
  finishedAt?: string;
  restoreStartedAt?: string;
  nextWindow?: WindowTimes;
  heldSince?: string;
  blockedBy?: Blocker[];
  estimate?: Estimate;
  stepDurations?: StepSamples[];
  history?: RolloutFigures[];
  foreignChanges?: ForeignChange[];
  topology?: Topology;
  targetChanges?: TargetChange[];
  conditions?: Condition[];
};

/** A new release asked for during the rollout. */
export type TargetChange = {
  from: string;
  to: string;
  at: string;
  /** The nodes in their gated turn then: they went on to `to` inside it. */
  inFlight?: string[];
};

export type ObjectReference = { name: string; namespace?: string };

export type MutexRunConfigSpec = {
  canary: { name: string };
  mutexRules: ObjectReference[];
  mutexTargets: ObjectReference[];
  concurrency?: number;
  nodeTimeout?: string;
  onFailure?: FailurePolicy;
  versionSource?: VersionSource;
  paused?: boolean;
  avoidTargetNode?: boolean;
  skipTLSVerify?: boolean;
  maintenanceWindows?: { schedule: string; duration: string; timeZone?: string }[];
  blackoutWindows?: { start: string; end: string; reason?: string }[];
  healthChecks?: Record<string, unknown>;
  soakTime?: string;
  trigger?: Trigger;
  overdueAfter?: string;
};

export type MutexRunConfig = K8sResourceCommon & {
  spec: MutexRunConfigSpec;
  status?: MutexRunConfigStatus;
};

export type ConfigMap = K8sResourceCommon & { data?: Record<string, string> };

export type Node = K8sResourceCommon;

/** A MutexTarget as the plugin reads it: the nodes its pools select (numo keeps `status.nodes` sorted). */
export type MutexTarget = K8sResourceCommon & {
  spec?: { machineConfigPools?: string[] };
  status?: { nodes?: string[] };
};
