//! The parts of the documentation that describe numo's checks, written from the code: `numo::api::check::ABOUT`
//! (every check that can hold the next node: what holds it, what an admin does) and the health checks' switches
//! (`numo::controllers::run_config::checks::ALL`). A check added there reaches docs/status.md, docs/api.md, the
//! NumoRolloutHeld runbook and alert (`config/prometheus/rule.yaml`) through `cargo xtask docs`; nobody edits those
//! parts by hand, and a test fails while they differ from what the code generates.
//!
//! In Markdown a generated part stands between `<!-- cargo xtask docs: <part> -->` and
//! `<!-- end of cargo xtask docs: <part> -->`. In the alert rule the parts are the expression's list of checks that
//! hold by design and the description's clause of each other check.

use std::path::Path;

use anyhow::{bail, Context};
use numo::api::check::{self, About};
use numo::controllers::run_config::checks;

/// The files `cargo xtask docs` writes parts of.
pub const FILES: [&str; 4] = [STATUS, API, RUNBOOK, RULE];

const STATUS: &str = "docs/status.md";
const API: &str = "docs/api.md";
const RUNBOOK: &str = "docs/runbooks/NumoRolloutHeld.md";
const RULE: &str = "config/prometheus/rule.yaml";

/// Each file as the code generates it, from the committed copy (whose generated parts are replaced).
pub fn generate(root: &Path) -> anyhow::Result<Vec<(&'static str, String)>> {
    FILES
        .iter()
        .map(|rel| {
            let committed = std::fs::read_to_string(root.join(rel)).with_context(|| format!("read {rel}"))?;
            let generated = match *rel {
                STATUS => replace_part(&committed, "what-holds", &what_holds()),
                API => replace_part(&committed, "health-checks", &health_checks()),
                RUNBOOK => replace_part(&committed, "checks", &runbook()),
                _ => alert_rule(&committed),
            }
            .with_context(|| format!("in {rel}"))?;
            Ok((*rel, generated))
        })
        .collect()
}

/// What differs between the committed files and what the code generates (empty: nothing).
pub fn drift(root: &Path) -> anyhow::Result<Vec<String>> {
    Ok(generate(root)?
        .into_iter()
        .filter_map(|(rel, generated)| crate::generated::drift(root, rel, &generated))
        .collect())
}

/// Writes the files whose generated parts changed; returns them.
pub fn write(root: &Path) -> anyhow::Result<Vec<&'static str>> {
    let mut changed = Vec::new();
    for (rel, generated) in generate(root)? {
        if crate::generated::write(root, rel, &generated)? {
            changed.push(rel);
        }
    }
    Ok(changed)
}

/// `text` with the lines between the markers of `part` replaced by `body`.
fn replace_part(text: &str, part: &str, body: &str) -> anyhow::Result<String> {
    let begin = format!("<!-- cargo xtask docs: {part} -->\n");
    let end = format!("<!-- end of cargo xtask docs: {part} -->");
    let Some(start) = text.find(&begin).map(|i| i + begin.len()) else { bail!("no line {}", begin.trim()) };
    let Some(stop) = text[start..].find(&end).map(|i| i + start) else { bail!("no line {end}") };
    Ok(format!("{}{body}{}", &text[..start], &text[stop..]))
}

/// A Markdown table cell: no line breaks, no unescaped bar.
fn cell(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

/// Capitalised, as a sentence begins.
fn sentence(clause: &str) -> String {
    let mut chars = clause.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// docs/status.md: every check that can hold the next node, and what to do about it.
fn what_holds() -> String {
    let mut out =
        String::from("| `blockedBy[].check` | holds the next node while | what to do |\n| --- | --- | --- |\n");
    for about in check::ABOUT {
        out.push_str(&format!("| `{}` | {} | {} |\n", about.name, cell(about.holds), cell(about.to_do)));
    }
    out
}

/// docs/api.md: the health checks' switches under `spec.healthChecks`.
fn health_checks() -> String {
    let mut out = String::from("| field | type | default | holds the next node while |\n| --- | --- | --- | --- |\n");
    for check in checks::ALL {
        let switch = check.switch();
        let holds = check::about(check.name()).map_or("", |a| a.holds);
        let more = cell(switch.more);
        let more = if more.is_empty() { more } else { format!(" {more}") };
        out.push_str(&format!(
            "| `spec.healthChecks.{}` | {} | {} | {}.{} |\n",
            switch.field,
            cell(switch.shape),
            cell(switch.default),
            cell(holds),
            more
        ));
    }
    out
}

/// The checks that fire NumoRolloutHeld: those that do not hold by design.
fn alerting() -> impl Iterator<Item = &'static About> {
    check::ABOUT.iter().filter(|a| !a.by_design)
}

/// The runbook: what to look at for each check that fires the alert (its links made relative to docs/runbooks,
/// those within docs/status.md pointing there).
fn runbook() -> String {
    alerting()
        .map(|a| {
            let to_do = cell(a.to_do).replace("](#", "](../status.md#").replace("](", "](../").replace("../../", "../");
            format!("- `{}`: {}\n", a.name, sentence(&to_do))
        })
        .collect()
}

/// The width the alert rule's description lines keep to.
const RULE_WIDTH: usize = 120;

/// The alert rule with NumoRolloutHeld's list of checks that hold by design (its expression leaves them out) and
/// the clause of each other check in its description.
fn alert_rule(text: &str) -> anyhow::Result<String> {
    let by_design: Vec<&str> = check::ABOUT.iter().filter(|a| a.by_design).map(|a| a.name).collect();
    let expression = "numo_health_check_blocking{check!~\"";
    let mut lines: Vec<String> = Vec::new();
    let mut in_chain = false;
    let mut found = (false, false);
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        if let Some((before, after)) = line.split_once(expression) {
            let Some((_, rest)) = after.split_once('"') else { bail!("the expression's list of checks is not closed") };
            lines.push(format!("{before}{expression}{}\"{rest}", by_design.join("|")));
            found.0 = true;
        } else if trimmed.starts_with("{{- if eq $labels.check ") {
            in_chain = true;
            found.1 = true;
            for (i, about) in alerting().enumerate() {
                let keyword = if i == 0 { "if" } else { "else if" };
                let clause =
                    format!("{{{{- {keyword} eq $labels.check \"{}\" }}}} ({})", about.name, cell(about.holds));
                lines.extend(wrapped(indent, &clause));
            }
        } else if in_chain && trimmed.starts_with("{{- end }}") {
            in_chain = false;
            lines.push(line.to_string());
        } else if !in_chain {
            lines.push(line.to_string());
        }
    }
    if found != (true, true) {
        bail!("NumoRolloutHeld's expression or its description's list of checks is missing");
    }
    Ok(lines.join("\n") + "\n")
}

/// `text` as lines of a folded YAML scalar at `indent`, each at most [`RULE_WIDTH`] wide where the words allow.
fn wrapped(indent: &str, text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::from(indent);
    for word in text.split(' ') {
        if line.len() > indent.len() && line.len() + 1 + word.len() > RULE_WIDTH {
            lines.push(std::mem::replace(&mut line, indent.to_string()));
        }
        if line.len() > indent.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_replaced_between_its_markers_and_a_missing_marker_is_an_error() {
        let text = "a\n<!-- cargo xtask docs: x -->\nold\n<!-- end of cargo xtask docs: x -->\nb\n";
        let replaced = replace_part(text, "x", "new\n").unwrap_or_default();
        assert_eq!(replaced, "a\n<!-- cargo xtask docs: x -->\nnew\n<!-- end of cargo xtask docs: x -->\nb\n");
        assert!(replace_part(text, "y", "new\n").is_err());
    }

    #[test]
    fn every_check_that_does_not_hold_by_design_is_explained_in_the_alert() {
        let rule = "    expr: numo_health_check_blocking{check!~\"Old\"} == 1\n    description: >-\n      held\n      \
                    {{- if eq $labels.check \"Old\" }} (old)\n      {{- end }}. Done.\n";
        let generated = alert_rule(rule).unwrap_or_default();
        for about in check::ABOUT {
            let explained = generated.contains(&format!("eq $labels.check \"{}\"", about.name));
            assert_eq!(explained, !about.by_design, "{}", about.name);
        }
        assert!(generated.contains("{{- end }}. Done."), "{generated}");
        let clauses = generated.lines().filter(|l| l.trim_start().starts_with("{{-"));
        assert!(clauses.into_iter().all(|l| l.len() <= RULE_WIDTH), "{generated}");
    }
}
