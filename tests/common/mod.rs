//! Shared helpers for integration tests: a harness that runs the real etcd source into a
//! replica, a TCP proxy that can be cut to simulate a network partition, and [`wait_until`]
//! for waiting on a condition. Beside them: what a test needs from outside the repository
//! and what happens when it is missing ([`needs`], [`require!`]), the golden inputs
//! ([`fixtures`]), certificates ([`pki`]), a tmux driver ([`tmux`]), headless Chromium
//! ([`chromium`]), the helpers that the offline and the etcd binaries share per topic
//! ([`recording`], [`scrape`], [`snapshot_cli`], [`decode_cli`]), and a backend file saved
//! by real etcd beside what etcd said at each of its revisions ([`etcd_db`]).
#![allow(dead_code)]

pub mod chromium;
pub mod decode_cli;
pub mod etcd_db;
pub mod fixtures;
pub mod needs;
pub mod pki;
pub mod recording;
pub mod scrape;
pub mod snapshot_cli;
pub mod tmux;

#[allow(unused_imports)] // binaries whose tests need nothing from outside
pub(crate) use needs::require;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use regscope::model::{ConnState, Observation, Stamped};
use regscope::source::{EtcdOptions, EtcdSource, SyncOptions};
use regscope::store::{Replica, ReplicaConfig, Session};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;

/// Checks `cond` every 100 ms until it holds; panics naming `what` after `timeout`. For
/// waiting on something to happen instead of sleeping a fixed time.
pub fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `cmd` to its end and gives its output, as `Command::output` does, but kills it and
/// fails the test if it has not exited after `limit`. A hang guard (set at about ten times
/// what the command should take), not a performance claim.
pub fn output_within(cmd: &mut std::process::Command, limit: Duration) -> std::process::Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let err = stderr.join().unwrap_or_default();
            panic!(
                "{cmd:?} did not exit within {limit:?} (a hang guard); its stderr:\n{}",
                String::from_utf8_lossy(&err)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// [`wait_until`] inside a tokio runtime: awaits between checks instead of blocking.
pub async fn wait_until_async<F>(what: &str, timeout: Duration, mut cond: impl FnMut() -> F)
where
    F: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !cond().await {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sync options tuned for tests: quick liveness detection, small pages.
pub fn fast_sync() -> SyncOptions {
    SyncOptions {
        page_limit: 100,
        progress_interval: Duration::from_millis(500),
        liveness_window: Duration::from_secs(3),
        request_timeout: Duration::from_secs(3),
        backoff_max: Duration::from_millis(500),
        ..SyncOptions::default()
    }
}

pub fn source(endpoint: &str, sync: SyncOptions) -> EtcdSource {
    EtcdSource::new(
        EtcdOptions {
            endpoints: vec![endpoint.to_string()],
            ..Default::default()
        }
        .with_defaults(),
        sync,
    )
}

/// Counts of what the source sent, for assertions about relists and retries.
#[derive(Default, Debug, Clone)]
pub struct Seen {
    pub list_begins: usize,
    pub list_pages: usize,
    pub watch_compactions: Vec<i64>,
    pub not_responding: usize,
    pub notes: Vec<String>,
    pub events: usize,
    /// Events that came with their previous version (etcd's `prev_kv`).
    pub events_with_prev_kv: usize,
}

/// Runs an [`EtcdSource`] and applies what it sends to a session owned by the test (its
/// replica and the etcd cluster's state: `h.replica`, `h.etcd`, through `Deref`).
pub struct Harness {
    pub session: Session,
    pub seen: Seen,
    pub source: EtcdSource,
    rx: mpsc::Receiver<Stamped>,
    task: JoinHandle<()>,
}

impl Harness {
    pub fn start(source: EtcdSource) -> Self {
        Self::start_with(source, ReplicaConfig::default())
    }

    pub fn start_with(source: EtcdSource, cfg: ReplicaConfig) -> Self {
        let (tx, rx) = mpsc::channel(1024);
        let task = source.clone().spawn(tx);
        Self {
            session: Session::from_replica(Replica::new(cfg), "test"),
            seen: Seen::default(),
            source,
            rx,
            task,
        }
    }

    /// Restarts the source (not the replica), resuming after the replica's revision.
    pub fn restart_source_resuming(&mut self) {
        self.task.abort();
        let (tx, rx) = mpsc::channel(1024);
        self.rx = rx;
        self.task = self
            .source
            .clone()
            .spawn_resuming(tx, self.replica.revision());
    }

    fn apply(&mut self, st: Stamped) {
        match &st.obs {
            Observation::ListBegin { .. } => self.seen.list_begins += 1,
            Observation::ListPage { .. } => self.seen.list_pages += 1,
            Observation::Compacted { revision, source }
                if *source == regscope::model::CompactionSource::Watch =>
            {
                self.seen.watch_compactions.push(*revision)
            }
            Observation::Conn(ConnState::NotResponding { .. }) => self.seen.not_responding += 1,
            Observation::Note(n) => self.seen.notes.push(n.clone()),
            Observation::Events { events, .. } => {
                self.seen.events += events.len();
                self.seen.events_with_prev_kv +=
                    events.iter().filter(|e| e.prev_kv.is_some()).count();
            }
            _ => {}
        }
        self.session.apply(&st);
    }

    /// Applies observations until `cond` holds; panics with `what` after `timeout`.
    pub async fn until(
        &mut self,
        what: &str,
        timeout: Duration,
        mut cond: impl FnMut(&Session, &Seen) -> bool,
    ) {
        let deadline = Instant::now() + timeout;
        while !cond(&self.session, &self.seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out after {timeout:?} waiting for: {what}; replica at {} conn {:?}; seen {:?}",
                self.replica.revision(),
                self.etcd.conn(),
                self.seen
            );
            match tokio::time::timeout(left.min(Duration::from_millis(200)), self.rx.recv()).await {
                Ok(Some(st)) => self.apply(st),
                Ok(None) => panic!("source ended while waiting for: {what}"),
                Err(_) => {}
            }
        }
    }

    /// Waits until the replica has applied etcd's current head revision.
    pub async fn catch_up(&mut self, client: &mut etcd_client::Client, timeout: Duration) {
        let head = head_revision(client).await;
        self.until(&format!("catch up to {head}"), timeout, |r, _| {
            r.replica.revision() >= head && r.replica.listing().is_none()
        })
        .await;
    }

    /// Drains what is pending now without waiting.
    pub fn drain(&mut self) {
        while let Ok(st) = self.rx.try_recv() {
            self.apply(st);
        }
    }
}

impl std::ops::Deref for Harness {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn head_revision(client: &mut etcd_client::Client) -> i64 {
    client
        .get("/", Some(etcd_client::GetOptions::new().with_count_only()))
        .await
        .expect("head revision")
        .header()
        .expect("header")
        .revision()
}

/// Asserts that `regscope verify`'s comparison finds no difference.
pub async fn assert_verified(h: &Harness) {
    let diffs = regscope::cli::verify::verify_replica(&h.source, &h.replica)
        .await
        .expect("verify ran");
    assert!(
        diffs.is_empty(),
        "{} differences, first: {:?}",
        diffs.len(),
        diffs.iter().take(5).collect::<Vec<_>>()
    );
}

/// A TCP proxy on a fixed loopback port that can be cut (listener closed, every
/// connection dropped) and restored on the same port, stalled (connections stay open, no
/// byte passes) and throttled (bytes per second in each direction).
pub struct Proxy {
    pub addr: SocketAddr,
    target: SocketAddr,
    stop: Arc<Notify>,
    task: Option<JoinHandle<()>>,
    shape: Arc<Shape>,
}

/// What the proxy does to the bytes it forwards.
#[derive(Default)]
struct Shape {
    stalled: std::sync::atomic::AtomicBool,
    /// Bytes per second in each direction; 0: unlimited.
    rate: std::sync::atomic::AtomicU64,
}

/// Copies `from` to `to` in chunks, holding them while stalled and pacing them when
/// throttled.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    shape: Arc<Shape>,
) {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while shape.stalled.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let rate = shape.rate.load(Ordering::Relaxed);
        if rate > 0 {
            tokio::time::sleep(Duration::from_secs_f64(n as f64 / rate as f64)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

impl Proxy {
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("addr");
        let mut p = Proxy {
            addr,
            target,
            stop: Arc::new(Notify::new()),
            task: None,
            shape: Arc::new(Shape::default()),
        };
        p.serve(listener);
        p
    }

    fn serve(&mut self, listener: TcpListener) {
        let stop = self.stop.clone();
        let target = self.target;
        let shape = self.shape.clone();
        self.task = Some(tokio::spawn(async move {
            let mut conns: Vec<JoinHandle<()>> = Vec::new();
            loop {
                tokio::select! {
                    _ = stop.notified() => break,
                    acc = listener.accept() => {
                        let Ok((inbound, _)) = acc else { break };
                        let shape = shape.clone();
                        conns.push(tokio::spawn(async move {
                            if let Ok(outbound) = TcpStream::connect(target).await {
                                let (ir, iw) = inbound.into_split();
                                let (or, ow) = outbound.into_split();
                                tokio::join!(pipe(ir, ow, shape.clone()), pipe(or, iw, shape));
                            }
                        }));
                    }
                }
            }
            for c in conns {
                c.abort();
            }
        }));
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Closes the listener and every proxied connection.
    pub async fn cut(&mut self) {
        self.stop.notify_one();
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }

    /// Holds every byte (connections stay open) until [`Proxy::unstall`].
    pub fn stall(&self) {
        self.shape
            .stalled
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn unstall(&self) {
        self.shape
            .stalled
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// Paces each direction to `bytes_per_sec` (0: unlimited).
    pub fn throttle(&self, bytes_per_sec: u64) {
        self.shape
            .rate
            .store(bytes_per_sec, std::sync::atomic::Ordering::Relaxed);
    }

    /// Listens again on the same port.
    pub async fn restore(&mut self) {
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) => {
                    tries += 1;
                    assert!(tries < 50, "rebind proxy port: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        self.stop = Arc::new(Notify::new());
        self.serve(listener);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// A loopback port free now (another process may take it before it is used).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn addr_of(endpoint: &str) -> SocketAddr {
    endpoint
        .trim_start_matches("http://")
        .parse()
        .expect("endpoint host:port")
}
