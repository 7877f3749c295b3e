//! The simulated control plane as one thing to start and stop: the bootstrap of a small
//! cluster, then the tasks that keep it busy (workload workers, heartbeats, the compactor),
//! all writing through the apiserver-style write path of [`super::sim`].

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::etcd_server::{DemoError, PrivateEtcd};
use super::sim::{SimConfig, SimCounters, SimStats, Store};
use super::workload;

/// Entry point of the simulated control plane.
#[derive(Debug)]
pub struct Simulation;

impl Simulation {
    /// Bootstraps a small cluster in `etcd` (namespaces, nodes and their leases, services,
    /// config maps, a secret, a custom resource, deployments with running pods) and spawns
    /// the tasks that keep it busy: workload workers (rollouts, config changes, events),
    /// node-lease and leader-election renewals, and the compactor.
    ///
    /// Only a [`PrivateEtcd`] is accepted: the demo never writes to an etcd it did not start.
    /// Must be called inside a tokio runtime. Errors: connecting, or a bootstrap write failing.
    pub async fn start(etcd: &PrivateEtcd, cfg: SimConfig) -> Result<SimHandle, DemoError> {
        let client = etcd.client().await?;
        let counters = Arc::new(SimCounters::default());
        let store = Store::new(client, counters.clone(), &cfg);
        let (stop_tx, stop_rx) = watch::channel(false);
        let plan = workload::bootstrap(&store, &cfg).await?;
        let mut tasks = Vec::new();
        for worker in plan.workers {
            tasks.push(spawn_stoppable(stop_rx.clone(), {
                let store = store.clone();
                let stop = stop_rx.clone();
                async move { worker.run(store, stop).await }
            }));
        }
        tasks.push(spawn_stoppable(stop_rx.clone(), {
            let store = store.clone();
            let heartbeats = plan.heartbeats;
            let cfg = cfg.clone();
            async move { heartbeats.run(store, &cfg).await }
        }));
        tasks.push(spawn_stoppable(stop_rx.clone(), {
            let store = store.clone();
            let interval = cfg.compact_interval;
            async move { compactor(store, interval).await }
        }));
        Ok(SimHandle {
            stop_tx,
            tasks,
            counters,
        })
    }
}

fn spawn_stoppable<F>(mut stop: watch::Receiver<bool>, work: F) -> JoinHandle<()>
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => {}
            () = work => {}
        }
    })
}

/// kube-apiserver's compaction loop: wait an interval, run a round, repeat; errors are
/// counted and the loop goes on with the state it had.
async fn compactor(store: Store, interval: Duration) {
    let (mut t, mut rev) = (0_i64, 0_i64);
    loop {
        tokio::time::sleep(interval).await;
        match store.compact_round(t, rev).await {
            Ok((nt, nrev)) => {
                t = nt;
                rev = nrev;
            }
            Err(e) => tracing::debug!("demo compactor: {e}"),
        }
    }
}

/// A running simulation. Dropping it aborts the tasks; [`SimHandle::stop`] ends them
/// cleanly.
#[derive(Debug)]
pub struct SimHandle {
    stop_tx: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    counters: Arc<SimCounters>,
}

impl SimHandle {
    /// The counters so far.
    pub fn stats(&self) -> SimStats {
        self.counters.snapshot()
    }

    /// The shared live counters, for a reader that outlives borrows of the handle (the TUI).
    pub fn counters(&self) -> Arc<SimCounters> {
        self.counters.clone()
    }

    /// Signals all tasks to stop and waits for them (at most 5 s, then aborts the rest).
    /// Returns the final counters.
    pub async fn stop(mut self) -> SimStats {
        let _ = self.stop_tx.send(true);
        let deadline = Instant::now() + Duration::from_secs(5);
        for task in std::mem::take(&mut self.tasks) {
            let abort = task.abort_handle();
            if tokio::time::timeout_at(deadline, task).await.is_err() {
                abort.abort();
            }
        }
        self.counters.snapshot()
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        let _ = self.stop_tx.send(true);
        for task in &self.tasks {
            task.abort();
        }
    }
}
