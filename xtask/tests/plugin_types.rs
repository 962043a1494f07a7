//! The console plugin's types of numo's kinds (`console-plugin/src/api-types.ts`) are what the CRD schemas generate:
//! a field added, renamed or removed in `src/api` fails here until `cargo xtask plugin-types` writes the plugin's
//! copy again, and then the plugin's type check until the plugin follows.

use xtask::plugin_types;

#[test]
fn the_committed_types_are_what_src_api_generates() {
    let root = xtask::repo_root();
    let drift = plugin_types::drift(&root).expect("generate the types from numo's CRD schemas");
    assert_eq!(drift, None, "run `cargo xtask plugin-types` and commit the result");
}

#[test]
fn the_types_are_numos_and_a_changed_file_is_noticed() {
    let generated = plugin_types::generate().expect("generate");
    for expected in [
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
    ] {
        assert!(generated.contains(expected), "the generated types lack {expected:?}:\n{generated}");
    }
    // A copy of the repository's file with one field made required is not what numo generates.
    let scratch = std::env::temp_dir().join(format!("numo-plugin-types-{}", std::process::id()));
    let file = scratch.join(plugin_types::PATH);
    std::fs::create_dir_all(file.parent().unwrap_or(&scratch)).expect("scratch dir");
    std::fs::write(&file, generated.replace("  acceptedAt?: string | null;", "  acceptedAt: string;"))
        .expect("write the changed copy");
    let drift = plugin_types::drift(&scratch).expect("compare");
    assert!(drift.is_some_and(|d| d.contains("differs")), "a changed field must be noticed");
    assert!(plugin_types::write(&scratch).expect("write"), "the file is written again");
    assert_eq!(plugin_types::drift(&scratch).expect("compare"), None);
    let _ = std::fs::remove_dir_all(&scratch);
}
