//! How `numo plan` prints a preview: a table for people, JSON or YAML for tools.

use std::fmt::Write;

use chrono::{DateTime, SecondsFormat, Utc};

use super::Preview;
use crate::estimate;

fn at(t: Option<DateTime<Utc>>) -> String {
    t.map_or_else(|| "-".to_string(), |t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
}

/// The preview as a table, with what holds the first node and the total.
pub fn table(preview: &Preview) -> String {
    let mut out = String::new();
    let version = preview.target_version.as_deref().unwrap_or("no version");
    let _ = writeln!(
        out,
        "Run config {}: {} nodes to {version}, {} at a time.",
        preview.run_config, preview.total_nodes, preview.concurrency
    );
    // What the planner says matters when no node would start and nothing holds one (no upgrade, invalid, waiting).
    if let (Some(phase), None, true) = (preview.phase, &preview.starts_now, preview.held_by.is_empty()) {
        let _ = writeln!(out, "{phase:?}: {}", preview.message);
    }
    for note in &preview.notes {
        let _ = writeln!(out, "Note: {note}.");
    }
    match (&preview.starts_now, preview.held_by.as_slice()) {
        (Some(node), _) => {
            let _ = writeln!(out, "Nothing holds the first node: {node} would start now.");
        }
        (None, []) => {}
        (None, held) => {
            for blocker in held {
                let _ = writeln!(out, "Held now by {}: {}", blocker.check, blocker.message);
            }
        }
    }
    if let Some(key) = &preview.topology_key {
        let domain = |d: &str| if d.is_empty() { format!("(no {key})") } else { d.to_string() };
        let width = preview.waves.iter().map(|w| domain(&w.domain).len()).max().unwrap_or(6).max(6);
        let _ = writeln!(out, "\nWaves by {key}:");
        let _ = writeln!(out, "{:>4}  {:<width$}  {:>5}  {:<20}  {:<20}", "WAVE", "DOMAIN", "NODES", "START", "END");
        for (i, wave) in preview.waves.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:>4}  {:<width$}  {:>5}  {:<20}  {:<20}",
                i + 1,
                domain(&wave.domain),
                format!("{}/{}", wave.done, wave.nodes),
                at(wave.start),
                at(wave.end)
            );
        }
    }
    if !preview.nodes.is_empty() {
        let width = preview.nodes.iter().map(|n| n.node.len()).max().unwrap_or(4).max(4);
        let _ = writeln!(out, "\n{:>5}  {:<width$}  {:<20}  {:<20}  STEPS", "ORDER", "NODE", "START", "END");
        for node in &preview.nodes {
            let steps: Vec<String> = node
                .steps
                .iter()
                .map(|s| format!("{} {}s", estimate::name(s.step), (s.end - s.start).num_seconds()))
                .collect();
            let started = if node.started { " (under way)" } else { "" };
            let _ = writeln!(
                out,
                "{:>5}  {:<width$}  {:<20}  {:<20}  {}{started}",
                node.order,
                node.node,
                at(node.start),
                at(node.end),
                steps.join(", ")
            );
        }
    }
    if let Some(estimate) = &preview.estimate {
        let end = crate::windows::utc(&estimate.end.0);
        let _ = writeln!(
            out,
            "\nThe rollout would end {} ({} nodes remaining, the restore walk {} round(s) at the end). {}",
            at(Some(end)),
            estimate.remaining_nodes,
            estimate.restore_rounds,
            estimate.assumes
        );
    }
    out
}

/// The preview as JSON.
pub fn json(preview: &Preview) -> String {
    serde_json::to_string_pretty(preview).unwrap_or_default()
}

/// The preview as YAML.
pub fn yaml(preview: &Preview) -> String {
    serde_yaml::to_string(preview).unwrap_or_default()
}
