//! `healthChecks.custom`: hold while a custom check's CEL expression is false (or cannot be evaluated) for an object
//! it selects, it selects none, or its objects cannot be read.

use super::{blocker, listed, Check, Input, Readiness, Switch};
use crate::api::{check, CustomCheck, HealthChecks};
use crate::cel_check;

/// See the module.
pub struct Custom;

impl Check for Custom {
    fn name(&self) -> &'static str {
        check::CUSTOM
    }

    fn enabled(&self, checks: &HealthChecks) -> bool {
        !checks.custom.is_empty()
    }

    fn switch(&self) -> Switch {
        Switch {
            field: "custom[]",
            shape: "list of `{apiVersion, kind, namespace, name, labelSelector, expression, message}`, at most 16",
            default: "empty",
            more:
                "Each holds while its CEL `expression` is false for an object of `kind` the other fields select (all \
                of them when unset), showing `message`. See [custom checks](#custom-checks).",
        }
    }

    fn assess(&self, input: &Input<'_>, out: &mut Readiness) {
        let custom: Vec<String> = input.checks.custom.iter().enumerate().flat_map(|(i, c)| one(input, i, c)).collect();
        if !custom.is_empty() {
            out.blockers.push(blocker(check::CUSTOM, listed(&custom)));
        }
    }
}

/// What custom check `index` finds wrong.
fn one(input: &Input<'_>, index: usize, check: &CustomCheck) -> Vec<String> {
    let what = format!("{} {}", check.kind, check.api_version);
    let objects = match input.snapshot.health.custom.get(index) {
        None => return vec![format!("custom check {index} ({what}) was not read")],
        Some(Err(why)) => return vec![format!("custom check {index} cannot read {what}: {why}")],
        Some(Ok(objects)) => objects,
    };
    if objects.is_empty() {
        let name = check.name.as_deref().map(|n| format!(" named {n}")).unwrap_or_default();
        let namespace = check.namespace.as_deref().map(|n| format!(" in namespace {n}")).unwrap_or_default();
        return vec![format!("custom check {index} selects no {what} object{name}{namespace}")];
    }
    let results = match cel_check::evaluate(&check.expression, objects) {
        Err(why) => return vec![format!("custom check {index}: its expression does not compile: {why}")],
        Ok(results) => results,
    };
    objects
        .iter()
        .zip(results)
        .filter_map(|(object, result)| {
            let meta = &object["metadata"];
            let name = match meta["namespace"].as_str() {
                Some(ns) => format!("{ns}/{}", meta["name"].as_str().unwrap_or_default()),
                None => meta["name"].as_str().unwrap_or_default().to_string(),
            };
            match result {
                Ok(true) => None,
                Ok(false) => Some(format!("{} ({} {name})", check.message, check.kind)),
                Err(why) => Some(format!("custom check {index} cannot be evaluated on {} {name}: {why}", check.kind)),
            }
        })
        .collect()
}
