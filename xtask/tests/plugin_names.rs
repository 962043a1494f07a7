//! The console plugin's names of numo's API (`console-plugin/src/api-names.ts`) are what `src/api` generates: a
//! phase, step, check or condition renamed, added or removed in numo fails here until `cargo xtask plugin-names`
//! writes the plugin's copy again, and then the plugin's type check until the plugin follows.

use std::path::PathBuf;

use xtask::plugin_names;

#[test]
fn the_committed_names_are_what_src_api_generates() {
    let root = xtask::repo_root();
    let drift = plugin_names::drift(&root).expect("generate the names from numo's API");
    assert_eq!(drift, None, "run `cargo xtask plugin-names` and commit the result");
}

#[test]
fn the_names_are_numos_and_a_changed_file_is_noticed() {
    let generated = plugin_names::generate().expect("generate");
    for expected in [
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
    ] {
        assert!(generated.contains(expected), "the generated names lack {expected:?}:\n{generated}");
    }
    // A copy of the repository's file with one phase renamed is not what numo generates.
    let scratch = std::env::temp_dir().join(format!("numo-plugin-names-{}", std::process::id()));
    let file = scratch.join(plugin_names::PATH);
    std::fs::create_dir_all(file.parent().unwrap_or(&scratch)).expect("scratch dir");
    std::fs::write(&file, generated.replace("  'Soaking',", "  'Soak',")).expect("write the changed copy");
    let drift = plugin_names::drift(&scratch).expect("compare");
    assert!(drift.is_some_and(|d| d.contains("differs")), "a renamed phase must be noticed");
    assert!(plugin_names::write(&scratch).expect("write"), "the file is written again");
    assert_eq!(plugin_names::drift(&scratch).expect("compare"), None);
    let _ = std::fs::remove_dir_all(&scratch);
    let _: PathBuf = plugin_names::path(&scratch);
}
