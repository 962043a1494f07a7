//! What the local cluster's fake kubelet (kwok, with the Stages of `hack/kwok/stages.yaml`) does, for tests.
//!
//! - Nodes become Ready and stay so. kwokctl's binary runtime runs kwok with `--manage-all-nodes=true`, so every
//!   node is managed; test nodes still carry [`KWOK_NODE_ANNOTATION`]` = fake` (what a standalone kwok selects by).
//! - Pods scheduled to a node become Running. Pods not owned by a Job stay Running.
//! - Pods owned by a Job finish after [`JOB_DURATION`] (a Go duration on the pod template, e.g. `3s`; default 1s)
//!   and succeed, or fail (phase Failed, exit code 1) when [`JOB_RESULT`] is [`JOB_RESULT_FAIL`]. A Job meant to
//!   fail needs `backoffLimit: 0`, or the Job controller retries with its usual back-off.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use kube::api::ObjectMeta;

/// Pod(-template) annotation: how long a Job's pod runs before it finishes, as a Go duration (`500ms`, `3s`, `1m`).
pub const JOB_DURATION: &str = "sim.numo.openshift-optional.skrzypek.io/job-duration";
/// Pod(-template) annotation: [`JOB_RESULT_FAIL`] makes a Job's pod fail; any other value, or none, succeeds.
pub const JOB_RESULT: &str = "sim.numo.openshift-optional.skrzypek.io/job-result";
/// The [`JOB_RESULT`] value that makes a Job's pod fail.
pub const JOB_RESULT_FAIL: &str = "fail";
/// Node annotation by which kwok recognises the nodes it fakes.
pub const KWOK_NODE_ANNOTATION: &str = "kwok.x-k8s.io/node";

/// The annotations that make a Job's pod run for `duration` (a Go duration) and then succeed or fail.
pub fn job_pod_annotations(duration: &str, succeed: bool) -> BTreeMap<String, String> {
    let mut annotations = BTreeMap::from([(JOB_DURATION.to_string(), duration.to_string())]);
    if !succeed {
        annotations.insert(JOB_RESULT.to_string(), JOB_RESULT_FAIL.to_string());
    }
    annotations
}

/// A plain node kwok manages (no OpenShift labels; the simulator seeds OpenShift-like nodes).
pub fn fake_node(name: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            annotations: Some([(KWOK_NODE_ANNOTATION.to_string(), "fake".to_string())].into()),
            labels: Some(
                [
                    ("kubernetes.io/hostname".to_string(), name.to_string()),
                    ("kubernetes.io/os".to_string(), "linux".to_string()),
                    ("type".to_string(), "kwok".to_string()),
                ]
                .into(),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Whether a node reports the condition Ready=True.
pub fn is_node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotation_names_match_the_stage_file() {
        let stages = include_str!("../../hack/kwok/stages.yaml");
        for name in [JOB_DURATION, JOB_RESULT] {
            assert!(stages.contains(&format!("annotations[\"{name}\"]")), "{name} is not used by the stages");
        }
        assert!(stages.contains(&format!("values: ['{JOB_RESULT_FAIL}']")));
    }

    #[test]
    fn failing_jobs_get_the_fail_annotation_and_succeeding_ones_do_not() {
        assert_eq!(job_pod_annotations("3s", false).get(JOB_RESULT).map(String::as_str), Some("fail"));
        assert!(!job_pod_annotations("3s", true).contains_key(JOB_RESULT));
        assert_eq!(job_pod_annotations("3s", true).get(JOB_DURATION).map(String::as_str), Some("3s"));
    }
}
