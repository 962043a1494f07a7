//! One test's exclusive use of the cluster: its client and namespace, the simulated OpenShift, and tasks (such as
//! the operator under test) that live as long as the test.

use std::collections::HashMap;
use std::future::Future;

use numo_simulator::{ClusterShape, Platform, SimConfig, Simulator, SimulatorHandle};
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

use crate::lock::ClusterLock;

/// Identifies a task spawned with [`World::spawn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskId(u64);

/// A test's world; see [`crate::TestCluster::world`]. Dropping it stops its tasks and the simulator, then lets the
/// next test have the cluster. What the test created stays until the next test's world removes it.
pub struct World {
    /// A client of the cluster, on the test's runtime.
    pub client: kube::Client,
    /// The test's own namespace, `<test-name>-<random>`.
    pub namespace: String,
    /// The cluster's (admin) client configuration, for clients that act as someone else.
    config: kube::Config,
    runtime: Handle,
    tasks: HashMap<TaskId, AbortHandle>,
    next_task: u64,
    simulator: Option<SimulatorHandle>,
    // Declared last: released only after the tasks and the simulator have been stopped.
    _lock: ClusterLock,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("namespace", &self.namespace)
            .field("tasks", &self.tasks.len())
            .field("simulator", &self.simulator.is_some())
            .finish()
    }
}

impl World {
    /// A world on the current tokio runtime (tasks are spawned on it).
    pub(crate) fn new(client: kube::Client, config: kube::Config, namespace: String, lock: ClusterLock) -> Self {
        Self {
            client,
            namespace,
            config,
            runtime: Handle::current(),
            tasks: HashMap::new(),
            next_task: 0,
            simulator: None,
            _lock: lock,
        }
    }

    /// Seeds a simulated OpenShift (`numo_simulator::seed`) and starts the simulator in-process
    /// (`numo_simulator::Simulator::start_with`), its platform components acting as their own users (the
    /// machine-config operator as its ServiceAccount), so that admission judges them as on a real cluster; the
    /// simulator stops when the World drops. Calling it again replaces the running simulator.
    pub async fn openshift(&mut self, shape: ClusterShape, config: SimConfig) -> anyhow::Result<()> {
        self.simulator = None;
        numo_simulator::seed(&self.client, &shape).await?;
        let platform = Platform::impersonating(&self.config)?;
        self.simulator = Some(Simulator::start_with(self.client.clone(), platform, config));
        Ok(())
    }

    /// The running simulator, if [`World::openshift`] started one (for its storage record,
    /// [`SimulatorHandle::storage_report`]).
    pub fn simulator(&self) -> Option<&SimulatorHandle> {
        self.simulator.as_ref()
    }

    /// Spawns a task that lives as long as the World (e.g. the operator under test); returns an id to abort it with
    /// [`World::stop`], to simulate a crash.
    pub fn spawn(&mut self, fut: impl Future<Output = ()> + Send + 'static) -> TaskId {
        let id = TaskId(self.next_task);
        self.next_task += 1;
        let handle = self.runtime.spawn(fut);
        self.tasks.insert(id, handle.abort_handle());
        id
    }

    /// Aborts the task `id` (it stops at its next `.await`); unknown or finished ids are ignored.
    pub fn stop(&mut self, id: TaskId) {
        if let Some(task) = self.tasks.remove(&id) {
            task.abort();
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        for (_, task) in self.tasks.drain() {
            task.abort();
        }
        self.simulator = None;
    }
}
