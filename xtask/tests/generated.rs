//! The files xtask generates from numo's sources, committed in the repository, are what the sources generate now:
//! the console plugin's names of numo's API (`console-plugin/src/api-names.ts`, `cargo xtask plugin-names`), its types
//! of numo's kinds (`api-types.ts`, `plugin-types`) and of the timeline numo serves (`timeline-types.ts`,
//! `plugin-timeline`), numo's ClusterRole (`config/rbac/role.yaml`, `rbac`, from `numo::access::GRANTS`) and the
//! documentation's parts on the checks (`docs`). A change in the sources fails here until its task writes the files
//! again (and then, for the plugin, its type check until the plugin follows).

use std::path::Path;

use xtask::{plugin_names, plugin_timeline, plugin_types};

/// The generated files (the task that writes them, and what differs; None: nothing).
fn drifts(root: &Path) -> Vec<(&'static str, Option<String>)> {
    let docs = xtask::docs::drift(root).expect("the documented files and their markers");
    vec![
        ("plugin-names", plugin_names::drift(root).expect("generate the names from numo's API")),
        ("plugin-types", plugin_types::drift(root).expect("generate the types from numo's CRD schemas")),
        ("plugin-timeline", plugin_timeline::drift(root).expect("generate the types of the served timeline")),
        ("rbac", xtask::rbac::drift(root)),
        ("docs", (!docs.is_empty()).then(|| docs.join("; "))),
    ]
}

#[test]
fn every_committed_generated_file_is_what_numo_s_sources_generate() {
    for (task, drift) in drifts(&xtask::repo_root()) {
        assert_eq!(drift, None, "run `cargo xtask {task}` and commit the result");
    }
}

/// Whether `generated` has each of `expected`.
fn assert_has(what: &str, generated: &str, expected: &[&str]) {
    for line in expected {
        assert!(generated.contains(line), "the generated {what} lack {line:?}:\n{generated}");
    }
}

/// A copy of `rel`, written from `generated` changed by `change`, is noticed and written again.
fn assert_change_noticed(
    rel: &str,
    generated: &str,
    change: (&str, &str),
    drift: impl Fn(&Path) -> Option<String>,
    write: impl Fn(&Path) -> bool,
) {
    let scratch = std::env::temp_dir().join(format!("numo-generated-{}-{}", std::process::id(), rel.len()));
    let file = scratch.join(rel);
    std::fs::create_dir_all(file.parent().unwrap_or(&scratch)).expect("scratch dir");
    assert!(generated.contains(change.0), "{rel} has {:?}", change.0);
    std::fs::write(&file, generated.replace(change.0, change.1)).expect("write the changed copy");
    assert!(drift(&scratch).is_some_and(|d| d.contains("differs")), "a change of {rel} must be noticed");
    assert!(write(&scratch), "{rel} is written again");
    assert_eq!(drift(&scratch), None);
    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn the_names_are_numos_and_a_changed_file_is_noticed() {
    let generated = plugin_names::generate().expect("generate");
    assert_has("names", &generated, &[
        "export type NodePhase = (typeof NODE_PHASES)[number];",
        "  'CleaningUp',",
        "  'Ungated',",
        "  'WaitForMco',",
        "  'MaintenanceWindow',",
        "  'ReadyForNextNode',",
        "  'DomainAtATime',",
        "  'DomainSoak',",
        "export const NODE_STEPS = ['Gate', 'WaitForMco', 'Upgrade', 'Cleanup', 'Soak'] as const satisfies readonly Step[];",
        // The steps' colours, numo timeline's (src/timeline/mod.rs).
        "export const STEP_COLOURS: Record<Step, string> = {",
        "  Upgrade: '#E69F00',",
        "export const RETRY_ANNOTATION = 'openshift-optional.skrzypek.io/retry';",
    ]);
    assert_change_noticed(
        plugin_names::PATH,
        &generated,
        ("  'Soaking',", "  'Soak',"),
        |root| plugin_names::drift(root).expect("compare"),
        |root| plugin_names::write(root).expect("write"),
    );
}

#[test]
fn the_types_are_numos_and_a_changed_file_is_noticed() {
    let generated = plugin_types::generate().expect("generate");
    assert_has(
        "types",
        &generated,
        &[
            // The kinds, on the SDK's common fields; the status may be absent or null.
            "import type { K8sResourceCommon } from '@openshift-console/dynamic-plugin-sdk';",
            "export type MutexRunConfig = K8sResourceCommon & {",
            "  spec: MutexRunConfigSpec;",
            "  status?: MutexRunConfigStatus | null;",
            "export type MutexTarget = K8sResourceCommon & {",
            // Objects are named after their Rust types, arrays of them typed as such.
            "export type NodeProgress = {",
            "  nodes?: NodeProgress[];",
            "  jobs?: JobRecord[];",
            "  waves?: Wave[];",
            "  topology?: TopologyStatus | null;",
            "  stepSeconds?: StepSeconds[];",
            "  conditions?: Condition[];",
            // Required fields are not optional; enums are api-names.ts's unions, and so is a Job's phase.
            "  name: string;",
            "  phase: NodePhase;",
            "  phase?: RunPhase | null;",
            "  step: Step;",
            "  phase: JobPhase;",
            "  basis: EstimateBasis;",
            // Maps, and the schema's descriptions as doc comments.
            "  matchLabels?: Record<string, string>;",
            "  /** The node's name. */",
        ],
    );
    assert_change_noticed(
        plugin_types::PATH,
        &generated,
        ("  acceptedAt?: string | null;", "  acceptedAt: string;"),
        |root| plugin_types::drift(root).expect("compare"),
        |root| plugin_types::write(root).expect("write"),
    );
}

#[test]
fn the_timeline_types_are_numos() {
    let generated = plugin_timeline::generate().expect("generate");
    assert_has(
        "timeline types",
        &generated,
        &[
            "export type TimelineDrawing = {",
            "  rows: TimelineRow[];",
            "  restore?: TimelineRestore | null;",
            "  estimatedEndX?: number | null;",
            // numo's enums are api-names.ts's unions; the timeline's own are unions of their values.
            "import type { Step } from './api-names';",
            "  step: Step;",
            "  outcome: 'Done' | 'InFlight' | 'Failed' | 'Skipped' | 'Ungated' | 'Projected';",
            "  state: 'done' | 'in-progress' | 'pending';",
            "  projection: 'Planner' | 'None';",
            // Times are RFC 3339 strings, with the descriptions as doc comments.
            "  /** The time at the chart's left edge. */\n  start: string;",
        ],
    );
}

#[test]
fn the_generated_role_reads_as_yaml_with_every_grant() {
    let role: serde_json::Value = serde_yaml::from_str(&numo::access::role_yaml()).expect("YAML");
    let rules = role["rules"].as_array().cloned().unwrap_or_default();
    assert_eq!(rules.len(), numo::access::GRANTS.len());
    assert_eq!(role["metadata"]["name"], "numo-operator");
    assert_eq!(rules[0]["apiGroups"][0], "", "the core group is written as \"\"");
}
