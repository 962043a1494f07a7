//! The console plugin's types of the timeline numo serves (`console-plugin/src/timeline-types.ts`) are what
//! `src/timeline/drawing.rs` generates: a field added, renamed or removed there fails here until `cargo xtask
//! plugin-timeline` writes the plugin's copy again, and then the plugin's type check until the plugin follows.

use xtask::plugin_timeline;

#[test]
fn the_committed_timeline_types_are_what_src_timeline_generates() {
    let root = xtask::repo_root();
    let drift = plugin_timeline::drift(&root).expect("generate the types from the served timeline's schema");
    assert_eq!(drift, None, "run `cargo xtask plugin-timeline` and commit the result");
}

#[test]
fn the_timeline_types_are_numos() {
    let generated = plugin_timeline::generate().expect("generate");
    for expected in [
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
    ] {
        assert!(generated.contains(expected), "the generated types lack {expected:?}:\n{generated}");
    }
}
