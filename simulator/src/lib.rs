//! numo-simulator: plays OpenShift's cluster-version operator (CVO) and machine-config operator (MCO) against a
//! plain Kubernetes API server, so numo can be tested and demonstrated without OpenShift.

pub mod crds;

use std::time::Duration;

/// The cluster a test or the demo starts from.
#[derive(Clone, Debug)]
pub struct ClusterShape {
    /// The release the cluster runs, e.g. `4.16.4`.
    pub version: String,
    /// Number of worker nodes (`worker-0`, `worker-1`, ...).
    pub workers: usize,
    /// Number of control-plane nodes (`master-0`, ...).
    pub masters: usize,
}

impl Default for ClusterShape {
    fn default() -> Self {
        Self { version: "4.16.4".into(), workers: 3, masters: 1 }
    }
}

/// Timings of the simulated operators.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// How long a node "reboots" while the MCO updates it.
    pub reboot: Duration,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self { reboot: Duration::from_secs(2) }
    }
}

/// Creates the ClusterVersion, pools, rendered MachineConfigs and nodes of `shape`.
pub async fn seed(_client: &kube::Client, _shape: &ClusterShape) -> anyhow::Result<()> {
    anyhow::bail!("the simulator's seeding is not written yet")
}

/// The running simulated operators; they stop when this is dropped.
pub struct SimulatorHandle {
    _private: (),
}

/// The simulated CVO and MCO.
pub struct Simulator;

impl Simulator {
    /// Starts the simulated operators on the current tokio runtime.
    pub fn start(_client: kube::Client, _config: SimConfig) -> SimulatorHandle {
        SimulatorHandle { _private: () }
    }
}
