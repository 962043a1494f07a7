//! The reference document's YAML examples, shared by the test binaries that use them.

#![allow(dead_code)] // each test binary uses only some of these

/// The reference document's examples, verbatim (the document calls them "the example below" and so on). When the
/// document itself is available next to the repository, a test checks these copies against it.
pub const REFERENCE_EXAMPLES: [&str; 4] = [
    r#"apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: canary
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: worker
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/worker: ''
    matchExpressions:
      - key: 'isCanary'
        operator: Exists
  paused: false"#,
    r#"apiVersion: openshift-optional.skrzypek.io/v1alpha1
kind: MutexRule
metadata:
  name: k8s-example
spec:
  jobName: "example" # Jobs will be run with this prefix name
  jobNamespace: "node-upgrade-mutex-operator" # Jobs will be run in this namespace
  jobSpec: # Accepts full 'batch/v1' job spec
    selector: {}
    template:
      metadata:
        name: mutex
      spec:
        containers:
        - command:
          - sleep
          args:
          - "30"
          image: ubi9/toolbox
          name: mutex
        restartPolicy: Never
  cleanUpJobSpec: # Accepts full 'batch/v1' job spec (Optional)
    selector: {}
    template:
      metadata:
        name: mutex
      spec:
        containers:
        - command:
          - sleep
          args:
          - "30"
          image: ubi9/toolbox
          name: mutex
        restartPolicy: Never
  type: kubernetes"#,
    r#"apiVersion: openshift-optional.skrzypek.io/v1alpha1
kind: MutexTarget
metadata:
  name: worker-example
spec:
  machineConfigPools:
    - worker # Name of existing machineconfigpool"#,
    r#"apiVersion: openshift-optional.skrzypek.io/v1alpha1
kind: MutexRunConfig
metadata:
  name: example
spec:
  skipTLSVerify: false # Defaults to false if omitted
  canary:
    name: canary # Name of unpaused machineconfigpool to modify
  mutexRules: # List of existing mutexRules
    - name: k8s-example
      namespace: node-upgrade-mutex-operator
  mutexTargets: # List of existing mutexTargets
    - name: worker-example
      namespace: node-upgrade-mutex-operator"#,
];

/// The reference's MutexRule example.
pub const REFERENCE_RULE: &str = REFERENCE_EXAMPLES[1];
