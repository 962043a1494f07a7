//! `console-plugin/src/api-names.ts`: numo's API names as the console plugin spells them (run and node phases, steps,
//! Job results and phases, failure-domain modes, health checks, condition types, labels and annotations), written
//! from numo's own sources so that the plugin never copies them by hand.
//!
//! The enums come from the MutexRunConfig schema numo generates (`numo::crdgen`, the same schema as `config/crd`,
//! which `tests/crds.rs` keeps equal to `src/api`); the names that are plain strings in the schema (checks,
//! conditions, Job phases, labels) come from the constants numo itself writes. `cargo xtask plugin-names` writes the
//! file; `cargo xtask plugin-names --check` and `xtask/tests/generated.rs` fail when the committed one differs.
//! The plugin types its tables with these unions (`Record<NodePhase, …>`), so a phase added in `src/api` fails the
//! plugin's type check until the plugin says what to do with it.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{JSONSchemaProps, JSONSchemaPropsOrArray};
use numo::api::{check, Step, GROUP, VERSION};
use numo::controllers::run_config::plan::condition;
use numo::jobs::JobPhase;
use numo::labels;

/// Where the file lives, relative to the repository root.
pub const PATH: &str = "console-plugin/src/api-names.ts";

/// The schema node at `path` under `schema` (`[]` steps into an array's items).
fn node<'a>(schema: &'a JSONSchemaProps, path: &[&str]) -> anyhow::Result<&'a JSONSchemaProps> {
    let mut at = schema;
    for part in path {
        at = if *part == "[]" {
            match &at.items {
                Some(JSONSchemaPropsOrArray::Schema(items)) => items,
                _ => bail!("{}: no array items at `{part}`", path.join(".")),
            }
        } else {
            at.properties
                .as_ref()
                .and_then(|p| p.get(*part))
                .with_context(|| format!("{}: no property `{part}`", path.join(".")))?
        };
    }
    Ok(at)
}

/// The enum values of the string at `path` in the MutexRunConfig schema.
fn enum_at(schema: &JSONSchemaProps, path: &str) -> anyhow::Result<Vec<String>> {
    let parts: Vec<&str> = path.split('.').collect();
    let values = node(schema, &parts)?.enum_.as_ref().with_context(|| format!("{path}: not an enum"))?;
    values
        .iter()
        .map(|v| v.0.as_str().map(str::to_string).with_context(|| format!("{path}: a value that is not a string")))
        .collect()
}

/// The MutexRunConfig's schema as numo generates it.
fn run_config_schema() -> anyhow::Result<JSONSchemaProps> {
    schema_of("MutexRunConfig")
}

/// The schema of numo's kind `kind` as numo generates it (`numo::crdgen`, the same as `config/crd`).
pub fn schema_of(kind: &str) -> anyhow::Result<JSONSchemaProps> {
    let crd = numo::crdgen::crds()
        .into_iter()
        .find(|crd| crd.spec.names.kind == kind)
        .with_context(|| format!("numo generates no {kind} CRD"))?;
    crd.spec
        .versions
        .iter()
        .find(|v| v.name == VERSION)
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.clone())
        .with_context(|| format!("the {kind} CRD has no {VERSION} schema"))
}

fn serialized<T: serde::Serialize>(value: T) -> anyhow::Result<String> {
    match serde_json::to_value(value)? {
        serde_json::Value::String(s) => Ok(s),
        other => bail!("{other} is not serialized as a string"),
    }
}

fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A union type the file exports, and its values in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Union {
    /// The type's name, e.g. `NodePhase`.
    pub name: String,
    /// The strings it admits, in the order the file lists them.
    pub values: Vec<String>,
}

/// `export const NAME = [...] as const;` and its union type, which `unions` records.
fn list(out: &mut String, unions: &mut Vec<Union>, doc: &str, name: &str, type_name: &str, values: &[String]) {
    unions.push(Union { name: type_name.to_string(), values: values.to_vec() });
    let _ = writeln!(out, "\n/** {doc} */");
    let _ = writeln!(out, "export const {name} = [");
    for value in values {
        let _ = writeln!(out, "  {},", quoted(value));
    }
    let _ = writeln!(out, "] as const;");
    let _ = writeln!(out, "export type {type_name} = (typeof {name})[number];");
}

/// `export const NAME = [...] as const satisfies readonly Type[];` (a subset of a union above).
fn subset(out: &mut String, doc: &str, name: &str, type_name: &str, values: &[String]) {
    let _ = writeln!(out, "\n/** {doc} */");
    let items: Vec<String> = values.iter().map(|v| quoted(v)).collect();
    let _ = writeln!(out, "export const {name} = [{}] as const satisfies readonly {type_name}[];", items.join(", "));
}

fn constant(out: &mut String, doc: &str, name: &str, value: &str) {
    let _ = writeln!(out, "\n/** {doc} */");
    let _ = writeln!(out, "export const {name} = {};", quoted(value));
}

/// The file's content.
pub fn generate() -> anyhow::Result<String> {
    Ok(build()?.0)
}

/// The union types the file exports (`RunPhase`, `NodePhase`, `Step`...), in the file's order.
pub fn unions() -> anyhow::Result<Vec<Union>> {
    Ok(build()?.1)
}

/// The file's content and the unions it exports.
fn build() -> anyhow::Result<(String, Vec<Union>)> {
    let schema = run_config_schema()?;
    let mut unions = Vec::new();
    let steps = enum_at(&schema, "status.estimate.stepSeconds.[].step")?;
    let mut out = String::new();
    out.push_str(
        "// Generated by `cargo xtask plugin-names` from numo's API (src/api, through the MutexRunConfig schema that\n\
         // config/crd holds, and the names numo writes as plain strings): do not edit. `cargo test -p xtask` fails\n\
         // while this file differs from what numo's sources generate.\n",
    );
    list(
        &mut out,
        &mut unions,
        "Where a rollout is: `status.phase`.",
        "RUN_PHASES",
        "RunPhase",
        &enum_at(&schema, "status.phase")?,
    );
    list(
        &mut out,
        &mut unions,
        "Where a node is, in the order a node goes through them: `status.nodes[].phase`.",
        "NODE_PHASES",
        "NodePhase",
        &enum_at(&schema, "status.nodes.[].phase")?,
    );
    list(
        &mut out,
        &mut unions,
        "The steps numo measures and projects: `status.estimate.stepSeconds[].step`, `status.stepDurations[].step`.",
        "STEPS",
        "Step",
        &steps,
    );
    let node_steps = Step::NODE.into_iter().map(serialized).collect::<anyhow::Result<Vec<_>>>()?;
    subset(&mut out, "A node's steps, in order.", "NODE_STEPS", "Step", &node_steps);
    let parts = Step::UPGRADE_PARTS.into_iter().map(serialized).collect::<anyhow::Result<Vec<_>>>()?;
    subset(
        &mut out,
        "The parts of `Upgrade`, where MachineConfigNodes tell when the drain ended.",
        "UPGRADE_PARTS",
        "Step",
        &parts,
    );
    let _ = writeln!(
        out,
        "\n/** Each step's colour, as `numo timeline` and the console's timeline draw it (Okabe–Ito). */"
    );
    let _ = writeln!(out, "export const STEP_COLOURS: Record<Step, string> = {{");
    for name in &steps {
        let step: Step = serde_json::from_value(serde_json::Value::String(name.clone()))
            .with_context(|| format!("the schema's step {name} is no Step"))?;
        let _ = writeln!(out, "  {name}: '{}',", numo::timeline::colour(step));
    }
    let _ = writeln!(out, "}};");
    list(
        &mut out,
        &mut unions,
        "A Job's result: `status.nodes[].jobs[].result`.",
        "JOB_RESULTS",
        "JobResult",
        &enum_at(&schema, "status.nodes.[].jobs.[].result")?,
    );
    let job_phases: Vec<String> =
        [JobPhase::Gate, JobPhase::Cleanup].into_iter().map(|p| p.as_str().to_string()).collect();
    list(
        &mut out,
        &mut unions,
        "When a Job runs: `status.nodes[].jobs[].phase`.",
        "JOB_PHASES",
        "JobPhase",
        &job_phases,
    );
    list(
        &mut out,
        &mut unions,
        "What the estimated end rests on: `status.estimate.basis`.",
        "ESTIMATE_BASES",
        "EstimateBasis",
        &enum_at(&schema, "status.estimate.basis")?,
    );
    list(
        &mut out,
        &mut unions,
        "What a failed node does to the rollout: `spec.onFailure`.",
        "FAILURE_POLICIES",
        "FailurePolicy",
        &enum_at(&schema, "spec.onFailure")?,
    );
    list(
        &mut out,
        &mut unions,
        "How a node's release version is read: `spec.versionSource`.",
        "VERSION_SOURCES",
        "VersionSource",
        &enum_at(&schema, "spec.versionSource")?,
    );
    list(
        &mut out,
        &mut unions,
        "What numo gates: `spec.trigger`.",
        "TRIGGERS",
        "Trigger",
        &enum_at(&schema, "spec.trigger")?,
    );
    list(
        &mut out,
        &mut unions,
        "How a rollout by failure domain moves through the domains: `status.topology.mode`.",
        "TOPOLOGY_MODES",
        "TopologyMode",
        &enum_at(&schema, "status.topology.mode")?,
    );
    list(
        &mut out,
        &mut unions,
        "Where the failure-domain key came from: `status.topology.keySource`.",
        "KEY_SOURCES",
        "KeySource",
        &enum_at(&schema, "status.topology.keySource")?,
    );
    let checks: Vec<String> = check::ALL.iter().map(|c| c.to_string()).collect();
    list(
        &mut out,
        &mut unions,
        "The checks that hold the next node: `status.blockedBy[].check` (a plain string in the schema).",
        "CHECKS",
        "Check",
        &checks,
    );
    let conditions: Vec<String> = condition::ALL.iter().map(|c| c.to_string()).collect();
    list(
        &mut out,
        &mut unions,
        "The condition types numo writes on a run config: `status.conditions[].type`.",
        "CONDITION_TYPES",
        "ConditionType",
        &conditions,
    );
    constant(&mut out, "numo's API group.", "GROUP", GROUP);
    constant(&mut out, "The API version of numo's kinds.", "VERSION", VERSION);
    constant(
        &mut out,
        "The run config annotation that asks numo to run a failed node's failed step again (or accept an Ungated node).",
        "RETRY_ANNOTATION",
        labels::RETRY_ANNOTATION,
    );
    constant(
        &mut out,
        "The run config annotation naming nodes numo does not gate.",
        "SKIP_ANNOTATION",
        labels::SKIP_ANNOTATION,
    );
    constant(
        &mut out,
        "Prefix of the node labels numo sets on every node it holds, one per rule (`<prefix>/<rule>.<namespace>`).",
        "RULE_LABEL_PREFIX",
        labels::RULE_LABEL_PREFIX,
    );
    Ok((out, unions))
}

/// Whether the committed file is what numo's sources generate: `None` when it is, else what differs.
pub fn drift(root: &Path) -> anyhow::Result<Option<String>> {
    Ok(crate::generated::drift(root, PATH, &generate()?))
}

/// Writes the file; returns whether it changed.
pub fn write(root: &Path) -> anyhow::Result<bool> {
    crate::generated::write(root, PATH, &generate()?)
}
