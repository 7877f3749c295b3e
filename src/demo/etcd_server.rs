//! A private, single-member etcd for `regscope demo` and the integration tests.
//!
//! [`PrivateEtcd`] runs the `etcd` binary found on `PATH` (Debian's `etcd-server`, etcd 3.4
//! here) on free loopback ports with a data directory in a temp dir. Its stdout/stderr go to
//! `etcd.log` in that temp dir, never to the terminal (the demo draws a full-screen console).
//! The process is killed with SIGKILL and reaped on drop, and the child is also asked to die
//! with the thread that spawned it (`PR_SET_PDEATHSIG`), so no etcd outlives regscope.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions, GetOptions};
use tempfile::TempDir;

/// How long [`PrivateEtcd::start`] and [`PrivateEtcd::restart`] wait for etcd to serve reads.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How many times a start is retried with fresh ports when etcd reports a port conflict.
const PORT_ATTEMPTS: usize = 5;

/// Bytes of `etcd.log` quoted in error messages.
const LOG_TAIL_BYTES: u64 = 4096;

/// The member name; also the `--initial-cluster` entry of the one-member cluster.
pub const MEMBER_NAME: &str = "regscope-demo";

/// Errors of the demo: starting etcd, talking to it, and the simulation.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// No `etcd` executable on `PATH`.
    #[error(
        "no `etcd` binary on PATH: install it with `sudo apt-get install etcd-server` \
         (Debian/Ubuntu), or put an etcd 3.4+ binary on PATH"
    )]
    EtcdNotFound,
    /// etcd exited before it served requests; `log_tail` is the end of its log.
    #[error("etcd exited during start-up ({status}); log tail ({log}):\n{log_tail}")]
    Exited {
        /// The exit status as printed by std.
        status: String,
        /// Path of the full log.
        log: PathBuf,
        /// The last few KiB of the log.
        log_tail: String,
    },
    /// etcd did not serve a read within [`READY_TIMEOUT`].
    #[error("etcd did not become ready within {waited:?}; log tail ({log}):\n{log_tail}")]
    NotReady {
        /// How long we waited.
        waited: Duration,
        /// Path of the full log.
        log: PathBuf,
        /// The last few KiB of the log.
        log_tail: String,
    },
    /// An operation needs a running etcd but it was killed.
    #[error("the private etcd is not running")]
    NotRunning,
    /// A local I/O failure (temp dir, log file, spawning, signals).
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An etcd client call failed.
    #[error("etcd: {0}")]
    Etcd(#[from] etcd_client::Error),
    /// A stored value could not be decoded (the simulation reads back its own objects).
    #[error("decode {key}: {reason}")]
    Decode {
        /// The etcd key.
        key: String,
        /// What was wrong.
        reason: String,
    },
    /// An optimistic-concurrency write kept conflicting (GuaranteedUpdate gave up).
    #[error("{key}: still conflicting after {attempts} attempts")]
    TooManyConflicts {
        /// The etcd key.
        key: String,
        /// Attempts made.
        attempts: usize,
    },
}

impl DemoError {
    fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        DemoError::Io {
            context: context.into(),
            source,
        }
    }
}

/// A private single-member etcd on `127.0.0.1`, killed (SIGKILL, reaped) on drop.
///
/// The data dir and log live in a temp dir that is removed on drop. Client and peer ports
/// are picked by binding port 0 and releasing it; a start that loses the race for a port is
/// retried with new ports. Call it from async code that runs on a long-lived thread (a tokio
/// worker or the main thread): the child is tied to the spawning thread by
/// `PR_SET_PDEATHSIG`.
#[derive(Debug)]
pub struct PrivateEtcd {
    binary: PathBuf,
    dir: TempDir,
    client_port: u16,
    peer_port: u16,
    extra_args: Vec<String>,
    cluster_token: String,
    child: Option<Child>,
    paused: bool,
}

impl PrivateEtcd {
    /// Starts etcd with default flags and waits until it serves a linearizable read.
    ///
    /// Errors: [`DemoError::EtcdNotFound`] without an `etcd` on `PATH`; [`DemoError::Exited`]
    /// or [`DemoError::NotReady`] (with the log tail) when it does not come up within
    /// [`READY_TIMEOUT`].
    pub async fn start() -> Result<Self, DemoError> {
        Self::start_with(&[]).await
    }

    /// Like [`PrivateEtcd::start`], with extra etcd flags appended (e.g.
    /// `["--auto-compaction-retention=1", "--quota-backend-bytes=..."]`). They are kept for
    /// [`PrivateEtcd::restart`].
    pub async fn start_with(args: &[&str]) -> Result<Self, DemoError> {
        let binary = find_on_path("etcd").ok_or(DemoError::EtcdNotFound)?;
        remove_stale_dirs(&std::env::temp_dir());
        let dir = tempfile::Builder::new()
            .prefix(DIR_PREFIX)
            .tempdir()
            .map_err(|e| DemoError::io("create temp dir for etcd", e))?;
        // Who owns the dir: a later start removes dirs whose owner died without cleaning up
        // (SIGKILL skips destructors).
        let _ = std::fs::write(dir.path().join(OWNER_FILE), std::process::id().to_string());
        let mut etcd = PrivateEtcd {
            binary,
            dir,
            client_port: 0,
            peer_port: 0,
            extra_args: args.iter().map(|s| s.to_string()).collect(),
            cluster_token: format!("regscope-{:016x}", rand::random::<u64>()),
            child: None,
            paused: false,
        };
        let mut last_err = None;
        for _ in 0..PORT_ATTEMPTS {
            let (client_port, peer_port) = free_port_pair()?;
            etcd.client_port = client_port;
            etcd.peer_port = peer_port;
            match etcd.spawn_and_wait().await {
                Ok(()) => return Ok(etcd),
                Err(DemoError::Exited {
                    status,
                    log,
                    log_tail,
                }) if log_tail.contains("address already in use") => {
                    // Lost the race for a port: wipe the half-initialised member and retry.
                    let _ = std::fs::remove_dir_all(etcd.member_dir());
                    last_err = Some(DemoError::Exited {
                        status,
                        log,
                        log_tail,
                    });
                }
                Err(e) => return Err(e),
            }
        }
        Err(last_err.unwrap_or(DemoError::NotRunning))
    }

    /// The client URL, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The client port on 127.0.0.1.
    pub fn client_port(&self) -> u16 {
        self.client_port
    }

    /// The peer port on 127.0.0.1.
    pub fn peer_port(&self) -> u16 {
        self.peer_port
    }

    /// The etcd process id, or `None` after [`PrivateEtcd::kill`].
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// etcd's `--data-dir` (inside the temp dir).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The file etcd's stdout and stderr go to (appended across restarts).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    /// The last few KiB of etcd's log, for error messages.
    pub fn log_tail(&self) -> String {
        read_tail(&self.log_path())
    }

    /// Whether the process is running (possibly stopped by [`PrivateEtcd::pause`]).
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// A new etcd-client connected to [`PrivateEtcd::endpoint`] (5 s connect timeout, HTTP/2
    /// keep-alive so a stopped etcd is noticed).
    pub async fn client(&self) -> Result<Client, DemoError> {
        connect(&self.endpoint()).await
    }

    /// SIGKILLs etcd and reaps it. A no-op when it is not running.
    pub fn kill(&mut self) -> Result<(), DemoError> {
        self.paused = false;
        if let Some(mut child) = self.child.take() {
            // SIGKILL also ends a SIGSTOPped process.
            match child.kill() {
                Ok(()) => {}
                // Already exited: reaping below still applies.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {}
                Err(e) => return Err(DemoError::io("kill etcd", e)),
            }
            child
                .wait()
                .map_err(|e| DemoError::io("wait for etcd", e))?;
        }
        Ok(())
    }

    /// Kills etcd (if running) and starts it again on the same ports and data dir, waiting
    /// until it serves reads. Revisions and keys survive, as after a real crash.
    pub async fn restart(&mut self) -> Result<(), DemoError> {
        self.kill()?;
        self.spawn_and_wait().await
    }

    /// SIGSTOPs etcd: it keeps its sockets but answers nothing (a hung server).
    ///
    /// kill(2) returns once the signal is queued, while each of etcd's threads stops only
    /// when it next leaves the kernel, so a request in flight could still be answered. This
    /// waits (at most 2 s) until every thread of the process shows state `T` in
    /// `/proc/<pid>/task/*/stat` (proc(5)), so that nothing is answered after it returns.
    pub fn pause(&mut self) -> Result<(), DemoError> {
        self.signal(libc::SIGSTOP)?;
        self.paused = true;
        if let Some(pid) = self.pid() {
            let deadline = Instant::now() + Duration::from_secs(2);
            while !all_threads_stopped(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Ok(())
    }

    /// SIGCONTs a paused etcd.
    pub fn resume(&mut self) -> Result<(), DemoError> {
        self.signal(libc::SIGCONT)?;
        self.paused = false;
        Ok(())
    }

    /// Whether [`PrivateEtcd::pause`] is in effect.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    fn signal(&self, sig: libc::c_int) -> Result<(), DemoError> {
        let pid = self.pid().ok_or(DemoError::NotRunning)?;
        let pid = libc::pid_t::try_from(pid).map_err(|_| DemoError::NotRunning)?;
        // SAFETY: kill(2) with a pid we own (our unreaped child) and a valid signal number.
        let rc = unsafe { libc::kill(pid, sig) };
        if rc != 0 {
            return Err(DemoError::io(
                format!("signal {sig} to etcd"),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    fn member_dir(&self) -> PathBuf {
        self.data_dir().join("member")
    }

    fn command(&self) -> Result<Command, DemoError> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| DemoError::io("open etcd log", e))?;
        let log_err = log
            .try_clone()
            .map_err(|e| DemoError::io("open etcd log", e))?;
        let client_url = format!("http://127.0.0.1:{}", self.client_port);
        let peer_url = format!("http://127.0.0.1:{}", self.peer_port);
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--name")
            .arg(MEMBER_NAME)
            .arg("--data-dir")
            .arg(self.data_dir())
            .arg("--listen-client-urls")
            .arg(&client_url)
            .arg("--advertise-client-urls")
            .arg(&client_url)
            .arg("--listen-peer-urls")
            .arg(&peer_url)
            .arg("--initial-advertise-peer-urls")
            .arg(&peer_url)
            .arg("--initial-cluster")
            .arg(format!("{MEMBER_NAME}={peer_url}"))
            .arg("--initial-cluster-state")
            .arg("new")
            .arg("--initial-cluster-token")
            .arg(&self.cluster_token)
            .args(&self.extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        // etcd reads ETCD_* variables as flags; a user's environment must not reconfigure
        // the private member (etcd 3.4 refuses a variable that a flag also sets).
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("ETCD_") {
                cmd.env_remove(name);
            }
        }
        // SAFETY: the closure only calls prctl(2) and getppid(2), both async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died between fork and prctl.
                if libc::getppid() == 1 {
                    return Err(std::io::Error::other("parent exited"));
                }
                Ok(())
            });
        }
        Ok(cmd)
    }

    async fn spawn_and_wait(&mut self) -> Result<(), DemoError> {
        let child = self
            .command()?
            .spawn()
            .map_err(|e| DemoError::io(format!("spawn {}", self.binary.display()), e))?;
        self.child = Some(child);
        self.paused = false;
        match self.wait_ready().await {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = self.kill();
                Err(e)
            }
        }
    }

    async fn wait_ready(&mut self) -> Result<(), DemoError> {
        let started = Instant::now();
        let deadline = started + READY_TIMEOUT;
        let mut client: Option<Client> = None;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(DemoError::Exited {
                        status: status.to_string(),
                        log: self.log_path(),
                        log_tail: self.log_tail(),
                    });
                }
            } else {
                return Err(DemoError::NotRunning);
            }
            if client.is_none() {
                client = tokio::time::timeout(Duration::from_secs(2), self.client())
                    .await
                    .ok()
                    .and_then(Result::ok);
            }
            if let Some(c) = client.as_mut() {
                // A linearizable read needs an elected leader and an applied raft log.
                let probe = c.get("/", Some(GetOptions::new().with_count_only()));
                if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), probe).await {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(DemoError::NotReady {
                    waited: started.elapsed(),
                    log: self.log_path(),
                    log_tail: self.log_tail(),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for PrivateEtcd {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// Connects an etcd-client to one plain-HTTP endpoint with the demo's timeouts.
pub(crate) async fn connect(endpoint: &str) -> Result<Client, DemoError> {
    let opts = ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(5))
        .with_keep_alive(Duration::from_secs(5), Duration::from_secs(5));
    Ok(Client::connect([endpoint], Some(opts)).await?)
}

/// The first executable file named `name` in `$PATH`.
/// Name prefix of every private etcd's temp dir.
const DIR_PREFIX: &str = "regscope-etcd-";
/// File in the temp dir holding the owning regscope process's pid.
const OWNER_FILE: &str = "owner.pid";

/// Removes `regscope-etcd-*` dirs under `tmp` whose owner process no longer exists (left
/// behind by a SIGKILLed demo or test). Dirs without an owner file, or whose owner lives, are
/// kept. Best effort: errors are ignored.
pub fn remove_stale_dirs(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(DIR_PREFIX) {
            continue;
        }
        let Ok(pid) = std::fs::read_to_string(e.path().join(OWNER_FILE)) else {
            continue;
        };
        let Ok(pid) = pid.trim().parse::<i32>() else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Two distinct free loopback ports (bound to port 0, then released).
fn free_port_pair() -> Result<(u16, u16), DemoError> {
    let a = TcpListener::bind("127.0.0.1:0").map_err(|e| DemoError::io("pick a free port", e))?;
    let b = TcpListener::bind("127.0.0.1:0").map_err(|e| DemoError::io("pick a free port", e))?;
    let pa = a
        .local_addr()
        .map_err(|e| DemoError::io("pick a free port", e))?
        .port();
    let pb = b
        .local_addr()
        .map_err(|e| DemoError::io("pick a free port", e))?
        .port();
    Ok((pa, pb))
}

fn read_tail(path: &Path) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::from("(no log)");
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(LOG_TAIL_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return String::from("(log unreadable)");
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return String::from("(log unreadable)");
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Whether every thread of `pid` is stopped (state `T` or `t` in `/proc/<pid>/task/<tid>/stat`,
/// the field after the parenthesised command name; proc(5)). False when it cannot be read.
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let mut any = false;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            return false;
        };
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next());
        if !matches!(state, Some("T" | "t")) {
            return false;
        }
        any = true;
    }
    any
}

#[cfg(test)]
mod stale_tests {
    use super::*;

    #[test]
    fn stale_dirs_of_dead_owners_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(format!("{DIR_PREFIX}dead"));
        let live = tmp.path().join(format!("{DIR_PREFIX}live"));
        let other = tmp.path().join("unrelated");
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
        }
        // A pid far above pid_max on Linux cannot exist.
        std::fs::write(dead.join(OWNER_FILE), "2147483000").unwrap();
        std::fs::write(live.join(OWNER_FILE), std::process::id().to_string()).unwrap();
        std::fs::write(other.join(OWNER_FILE), "2147483000").unwrap();
        remove_stale_dirs(tmp.path());
        assert!(!dead.exists());
        assert!(live.exists());
        assert!(other.exists());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct_and_nonzero() {
        let (a, b) = free_port_pair().unwrap();
        assert_ne!(a, 0);
        assert_ne!(b, 0);
        assert_ne!(a, b);
    }

    #[test]
    fn find_on_path_finds_sh_and_not_nonsense() {
        assert!(find_on_path("sh").is_some());
        assert!(find_on_path("regscope-no-such-binary-xyz").is_none());
    }

    #[test]
    fn not_found_error_says_how_to_install() {
        let msg = DemoError::EtcdNotFound.to_string();
        assert!(msg.contains("apt-get install etcd-server"), "{msg}");
    }

    #[test]
    fn read_tail_keeps_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let body = "x".repeat(10_000) + "THE END";
        std::fs::write(&p, body).unwrap();
        let tail = read_tail(&p);
        assert!(tail.ends_with("THE END"));
        assert_eq!(tail.len() as u64, LOG_TAIL_BYTES);
    }
}
