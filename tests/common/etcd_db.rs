//! A backend file written by real etcd, and what that etcd said about every revision in it:
//! the fixture every test of reading etcd's bbolt file (what `etcdctl snapshot save`
//! writes) compares against.
//!
//! [`write_workload_and_snapshot`] starts a private etcd (`demo::PrivateEtcd`, the `etcd`
//! on PATH: Debian's 3.4, or 3.5.1 in the second pass of `scripts/test.sh`), writes a fixed
//! workload of real Kubernetes storage encodings through the etcd client (creates, updates,
//! deletes, a key created again after its delete, keys on leases and a revoked lease, one
//! transaction of several operations, encrypted Secrets, keys outside `/registry`),
//! compacts in the middle of it with more writes after, and then, before the snapshot,
//! asks `etcdctl` (the `etcdctl` on PATH, `ETCDCTL_API=3`) what it holds at every revision
//! still readable. Only then does `etcdctl snapshot save` write the file, and
//! `etcdctl snapshot status` describe it. Everything lands in one temp dir that lives as
//! long as the [`DbFixture`].
//!
//! A test that builds it starts with `require!(ETCD, ETCDCTL, TESTDATA)`. The workload is
//! deterministic: the same operations at the same revisions each run (the fixture asserts
//! each step got the revision the workload expects), with the same bytes (fixed IVs and
//! nonces where kube-apiserver draws random ones). What differs between runs: lease ids,
//! the cluster and member ids in the response headers, and the snapshot's hash.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use base64::Engine as _;
use etcd_client::{Client, CompactionOptions, PutOptions, Txn, TxnOp};
use serde_json::Value;

use super::fixtures::{self, KEY_A, KEY_B};

/// The Secret every encrypted value holds once decrypted: the real storage encoding of a
/// Secret (`k8s-api/v1.30.3/core.v1.Secret.pb`).
pub const SECRET: &str = "v1.30.3/core.v1.Secret.pb";

/// The aescbc key of [`DbFixture::encryption_config`]: `key1`, secret [`KEY_A`] (AES-256).
pub const AESCBC_KEY_NAME: &str = "key1";
/// The secretbox key of [`DbFixture::encryption_config`]: `key2`, secret [`KEY_B`].
pub const SECRETBOX_KEY_NAME: &str = "key2";

/// How long a lease the workload keeps is granted for, in seconds: far longer than any test
/// runs, so its keys are still there when the snapshot is saved.
pub const LEASE_TTL: i64 = 3600;

/// Hang guard for one `etcdctl` run (each takes tens of milliseconds).
const ETCDCTL_LIMIT: Duration = Duration::from_secs(30);

/// A backend file saved by `etcdctl snapshot save`, and what etcd said before the save.
///
/// Revisions are etcd's main revisions (`i64`, as etcd's API gives them). JSON values are
/// `etcdctl -w json` output parsed as it is: keys and values base64, numbers as etcd's
/// JSON printer writes them (fields equal to zero, such as `lease`, left out); [`kvs`]
/// reads the key-value list of one.
#[derive(Debug)]
pub struct DbFixture {
    /// Holds the db file, the encryption config and any file a test writes beside them.
    pub dir: tempfile::TempDir,
    /// The file `etcdctl snapshot save` wrote: etcd's bbolt database followed by the 32-byte
    /// SHA-256 of it, which etcd's Snapshot RPC appends (`v3rpc/maintenance.go`) and
    /// `snapshot restore` checks when the size is a multiple of 512 plus 32 (`hasChecksum`
    /// in etcd 3.5 `etcdutl/snapshot/v3_snapshot.go`; 3.4 `clientv3/snapshot/`).
    pub db: PathBuf,
    /// From `etcd --version` (`3.4.23`, `3.5.1`).
    pub etcd_version: String,
    /// etcd's revision when the snapshot was saved (nothing was written after the workload).
    pub head: i64,
    /// The revision the workload compacted at (with `physical`, so the backend had dropped
    /// the history before the save): every revision below it is gone.
    pub compacted: i64,
    /// For every revision `compacted..=head`: `etcdctl get --prefix /registry --rev REV -w
    /// json`, taken before the snapshot (`header`, `kvs` with `key`, `value`,
    /// `create_revision`, `mod_revision`, `version`, `lease`, and `count`).
    pub at: BTreeMap<i64, Value>,
    /// For every revision `1..compacted`: the same read, `Ok(parsed output)` if etcdctl
    /// answered, `Err(stderr)` if it failed (it should fail: "required revision has been
    /// compacted").
    pub below_compacted: BTreeMap<i64, Result<Value, String>>,
    /// `etcdctl get "" --prefix -w json` at head: every key, also those outside `/registry`
    /// (`/other/...`, `compact_rev_key`).
    pub all_keys_at_head: Value,
    /// Each lease alive at head, by id: (id, granted TTL in seconds, its keys sorted), from
    /// `etcdctl lease list` and `etcdctl lease timetolive --keys`.
    pub leases: Vec<(i64, i64, Vec<String>)>,
    /// `etcdctl snapshot status DB -w json`, read from the file: `hash` (CRC-32C over every
    /// bucket's name, keys and values), `revision` (the main revision of the last key of the
    /// `key` bucket), `totalKey` (keys of all buckets), `totalSize` (bytes of the bbolt
    /// pages, without the SHA-256 trailer); etcd 3.5 `etcdutl/snapshot/v3_snapshot.go`
    /// `Status`.
    pub status: Value,
    /// An `EncryptionConfiguration` for secrets naming the keys the encrypted values were
    /// written with: aescbc [`AESCBC_KEY_NAME`], secretbox [`SECRETBOX_KEY_NAME`], then
    /// identity.
    pub encryption_config: PathBuf,
    /// Every write of the workload in order: the revision etcd gave it and what it did.
    pub steps: Vec<Step>,
}

/// One write of the workload.
#[derive(Clone, Debug)]
pub struct Step {
    /// The main revision etcd gave it.
    pub revision: i64,
    /// What it did, e.g. `put /registry/pods/default/web-0 = head/core.v1.Pod.pb`,
    /// `txn ...`, `revoke lease ...`.
    pub what: String,
}

/// One key-value of an `etcdctl get -w json` answer, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kv {
    pub key: String,
    pub value: Vec<u8>,
    pub create_revision: i64,
    pub mod_revision: i64,
    pub version: i64,
    /// 0: no lease.
    pub lease: i64,
}

impl DbFixture {
    /// The revision of the one step whose description starts with `prefix`; panics unless
    /// exactly one does.
    pub fn revision_of(&self, prefix: &str) -> i64 {
        let hits: Vec<&Step> = self
            .steps
            .iter()
            .filter(|s| s.what.starts_with(prefix))
            .collect();
        assert!(
            hits.len() == 1,
            "{} workload steps start with {prefix:?}: {hits:?}",
            hits.len()
        );
        hits[0].revision
    }

    /// The `/registry` key-values etcd held at `rev` (`compacted..=head`), in key order.
    pub fn kvs_at(&self, rev: i64) -> Vec<Kv> {
        let got = self.at.get(&rev).unwrap_or_else(|| {
            panic!(
                "revision {rev} is outside {}..={} that the fixture read",
                self.compacted, self.head
            )
        });
        kvs(got)
    }

    /// One key at `rev`, if it was live then.
    pub fn kv_at(&self, rev: i64, key: &str) -> Option<Kv> {
        self.kvs_at(rev).into_iter().find(|kv| kv.key == key)
    }
}

/// The key-values of an `etcdctl get -w json` answer (none when `kvs` is absent, as etcdctl
/// prints an empty answer). Panics on a shape etcdctl does not print.
pub fn kvs(answer: &Value) -> Vec<Kv> {
    let Some(list) = answer.get("kvs") else {
        return Vec::new();
    };
    let list = list.as_array().expect("etcdctl's kvs is a list");
    list.iter()
        .map(|kv| {
            let num = |f: &str| kv.get(f).map_or(0, |v| v.as_i64().expect("an i64 field"));
            let bytes = |f: &str| {
                kv.get(f)
                    .map_or_else(Vec::new, |v| b64(v.as_str().expect("a base64 field")))
            };
            Kv {
                key: String::from_utf8(bytes("key")).expect("workload keys are UTF-8"),
                value: bytes("value"),
                create_revision: num("create_revision"),
                mod_revision: num("mod_revision"),
                version: num("version"),
                lease: num("lease"),
            }
        })
        .collect()
}

/// A golden storage encoding under `k8s-api/` of the shared test data (`v1.30.3/...` or
/// `head/...`).
pub fn golden(rel: &str) -> Vec<u8> {
    let path = fixtures::testdata().join("k8s-api").join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `k8s:enc:aescbc:v1:<key>:` + IV + AES-CBC(PKCS#7(plaintext)), as kube-apiserver's aescbc
/// transformer writes a value (k8s.io/apiserver `storage/value/encrypt/aes/aes.go`,
/// `cbcTransformer`; the prefix from `encryptionconfig`). `key_b64` is the config's
/// `secret`.
pub fn aescbc(key_name: &str, key_b64: &str, iv: [u8; 16], plaintext: &[u8]) -> Vec<u8> {
    use cbc::cipher::block_padding::Pkcs7;
    use cbc::cipher::{BlockEncryptMut, KeyIvInit};
    let key = b64(key_b64);
    let body = cbc::Encryptor::<aes::Aes256>::new_from_slices(&key, &iv)
        .expect("a 32-byte AES key and a 16-byte IV")
        .encrypt_padded_vec_mut::<Pkcs7>(plaintext);
    let mut out = format!("k8s:enc:aescbc:v1:{key_name}:").into_bytes();
    out.extend_from_slice(&iv);
    out.extend_from_slice(&body);
    out
}

/// `k8s:enc:secretbox:v1:<key>:` + nonce + NaCl secretbox (tag then ciphertext), as
/// kube-apiserver's secretbox transformer writes a value (k8s.io/apiserver
/// `storage/value/encrypt/secretbox/secretbox.go`).
pub fn secretbox(key_name: &str, key_b64: &str, nonce: [u8; 24], plaintext: &[u8]) -> Vec<u8> {
    use crypto_secretbox::aead::{Aead, KeyInit};
    let cipher = crypto_secretbox::XSalsa20Poly1305::new_from_slice(&b64(key_b64))
        .expect("a 32-byte secretbox key");
    let sealed = cipher
        .encrypt(crypto_secretbox::Nonce::from_slice(&nonce), plaintext)
        .expect("secretbox seals any plaintext");
    let mut out = format!("k8s:enc:secretbox:v1:{key_name}:").into_bytes();
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    out
}

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .unwrap_or_else(|e| panic!("base64 {s:?}: {e}"))
}

/// The EncryptionConfiguration the encrypted values decrypt under.
fn encryption_config_text() -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: {AESCBC_KEY_NAME}
              secret: {KEY_A}
      - secretbox:
          keys:
            - name: {SECRETBOX_KEY_NAME}
              secret: {KEY_B}
      - identity: {{}}
"
    )
}

/// Starts etcd, writes the workload, reads back every revision, saves and describes the
/// snapshot (see the module doc). Runs on a thread of its own, so it may be called from a
/// plain test or from inside a tokio runtime. Takes a few seconds. Panics (failing the test)
/// when etcd, etcdctl or the golden data is missing, or when etcd does not do what the
/// workload expects.
pub fn write_workload_and_snapshot() -> DbFixture {
    write_workload_and_snapshot_then(|_| ()).0
}

/// As [`write_workload_and_snapshot`], and `while_up` runs with etcd's endpoint after the
/// snapshot is saved, before etcd stops: what it returns comes back beside the fixture.
/// The fixture then checks that etcd's revision is still the head (`while_up` must only
/// read).
pub fn write_workload_and_snapshot_then<T: Send + 'static>(
    while_up: impl FnOnce(&str) -> T + Send + 'static,
) -> (DbFixture, T) {
    std::thread::Builder::new()
        .name("etcd-db-fixture".into())
        .spawn(move || build(while_up))
        .expect("spawn the fixture's thread")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

fn build<T>(while_up: impl FnOnce(&str) -> T) -> (DbFixture, T) {
    let dir = tempfile::Builder::new()
        .prefix("regscope-db-fixture-")
        .tempdir()
        .expect("temp dir for the db fixture");
    let encryption_config = dir.path().join("encryption-config.yaml");
    std::fs::write(&encryption_config, encryption_config_text()).expect("write the config");
    let etcd_version = etcd_version();

    // The etcd process is tied to this thread (PR_SET_PDEATHSIG), which outlives it.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (etcd, workload) = rt.block_on(async {
        let etcd = regscope::demo::PrivateEtcd::start()
            .await
            .expect("start etcd (scripts/setup.sh installs it)");
        let client = etcd.client().await.expect("etcd client");
        let workload = Workload::run(client).await;
        (etcd, workload)
    });
    let endpoint = etcd.endpoint();
    let (head, compacted) = (workload.head, workload.compacted);

    let mut at = BTreeMap::new();
    for rev in compacted..=head {
        let answer = get_registry(&endpoint, rev)
            .unwrap_or_else(|err| panic!("etcdctl get --rev {rev} (head {head}): {err}"));
        at.insert(rev, answer);
    }
    let below_compacted = (1..compacted)
        .map(|rev| (rev, get_registry(&endpoint, rev)))
        .collect();
    let all_keys_at_head = json(&etcdctl(&endpoint, &["get", "", "--prefix", "-w", "json"]));
    assert_eq!(
        all_keys_at_head["header"]["revision"].as_i64(),
        Some(head),
        "etcd's revision before the snapshot"
    );
    let leases = leases(&endpoint);

    let db = dir.path().join("snapshot.db");
    let db_arg = db.to_str().expect("temp paths are UTF-8");
    ok(&etcdctl(&endpoint, &["snapshot", "save", db_arg]));
    let seen = while_up(&endpoint);
    let after = json(&etcdctl(
        &endpoint,
        &[
            "get",
            "",
            "--prefix",
            "--keys-only",
            "--limit",
            "1",
            "-w",
            "json",
        ],
    ));
    assert_eq!(
        after["header"]["revision"].as_i64(),
        Some(head),
        "nothing may write while the fixture reads and saves, nor while it is up after"
    );
    drop(etcd);
    let status = json(&etcdctl_offline(&[
        "snapshot", "status", db_arg, "-w", "json",
    ]));

    let fixture = DbFixture {
        dir,
        db,
        etcd_version,
        head,
        compacted,
        at,
        below_compacted,
        all_keys_at_head,
        leases,
        status,
        encryption_config,
        steps: workload.steps,
    };
    (fixture, seen)
}

/// The workload, written through the etcd client; each step asserts the revision etcd
/// gives it, so the fixture is the same run after run.
struct Workload {
    client: Client,
    steps: Vec<Step>,
    head: i64,
    compacted: i64,
}

// The encodings values alternate between: two real writes of the same kind (Kubernetes
// v1.30.3 and a later serializer, as after an apiserver upgrade), never edited bytes.
const POD_A: &str = "v1.30.3/core.v1.Pod.pb";
const POD_B: &str = "head/core.v1.Pod.pb";
const LEASE_A: &str = "v1.30.3/coordination.k8s.io.v1.Lease.pb";
const LEASE_B: &str = "head/coordination.k8s.io.v1.Lease.pb";
const DEPLOY_A: &str = "v1.30.3/apps.v1.Deployment.pb";
const DEPLOY_B: &str = "head/apps.v1.Deployment.pb";
const CONFIGMAP: &str = "v1.30.3/core.v1.ConfigMap.pb";

const WEB: [&str; 3] = [
    "/registry/pods/default/web-0",
    "/registry/pods/default/web-1",
    "/registry/pods/default/web-2",
];
const NODE_LEASE: [&str; 3] = [
    "/registry/leases/kube-node-lease/node-0",
    "/registry/leases/kube-node-lease/node-1",
    "/registry/leases/kube-node-lease/node-2",
];
const APP_CONFIG: &str = "/registry/configmaps/default/app-config";
const DEPLOYMENT: &str = "/registry/deployments/default/web";
const EVENT: &str = "/registry/events/default/web-0.17f0a1b2c3d4e5f6";
const DB_PASSWORD: &str = "/registry/secrets/default/db-password";

impl Workload {
    async fn run(client: Client) -> Workload {
        let mut w = Workload {
            client,
            steps: Vec::new(),
            head: 1,
            compacted: 0,
        };
        // Before the compaction: history that it will drop.
        w.put(
            "/registry/namespaces/default",
            "v1.30.3/core.v1.Namespace.pb",
            0,
        )
        .await;
        w.put(
            "/registry/services/specs/default/kubernetes",
            "v1.30.3/core.v1.Service.pb",
            0,
        )
        .await;
        // Nodes are stored under their pre-1.0 name, `minions`.
        w.put("/registry/minions/node-0", "v1.30.3/core.v1.Node.pb", 0)
            .await;
        for key in WEB {
            w.put(key, POD_A, 0).await;
        }
        w.put(APP_CONFIG, CONFIGMAP, 0).await;
        w.put(DEPLOYMENT, DEPLOY_A, 0).await;
        w.put_text("/other/x", "a key outside the registry").await;
        let kept = w.grant().await;
        let revoked = w.grant().await;
        w.put(NODE_LEASE[0], LEASE_A, kept).await;
        w.put(NODE_LEASE[1], LEASE_A, kept).await;
        w.put(NODE_LEASE[2], LEASE_A, revoked).await;
        // kube-apiserver puts events on a lease of their TTL.
        w.put(EVENT, "v1.30.3/core.v1.Event.pb", revoked).await;
        w.put(WEB[0], POD_B, 0).await;
        w.put(NODE_LEASE[0], LEASE_B, kept).await;
        w.put(DEPLOYMENT, DEPLOY_B, 0).await;
        w.put(WEB[0], POD_A, 0).await;
        w.delete(WEB[1]).await;
        w.put_bytes(
            DB_PASSWORD,
            aescbc(AESCBC_KEY_NAME, KEY_A, iv(0x30), &golden(SECRET)),
            0,
            "aescbc key1 of v1.30.3/core.v1.Secret.pb",
        )
        .await;
        w.put(WEB[1], POD_B, 0).await; // again after its delete
        w.put(NODE_LEASE[1], LEASE_B, kept).await;
        w.put(NODE_LEASE[0], LEASE_A, kept).await;
        assert_eq!(w.head, 23, "the workload's revisions moved: {:#?}", w.steps);

        // As kube-apiserver's compactor does: note the revision in `compact_rev_key` (at
        // the root, outside the prefix), then compact to it.
        let compact_to = w.head;
        w.put_text("compact_rev_key", &compact_to.to_string()).await;
        w.client
            .compact(compact_to, Some(CompactionOptions::new().with_physical()))
            .await
            .expect("compact");
        w.compacted = compact_to;

        // After it: history the file still holds.
        w.put(WEB[0], POD_B, 0).await;
        w.put(NODE_LEASE[1], LEASE_A, kept).await;
        w.put_bytes(
            "/registry/secrets/default/api-token",
            secretbox(SECRETBOX_KEY_NAME, KEY_B, nonce(0x40), &golden(SECRET)),
            0,
            "secretbox key2 of v1.30.3/core.v1.Secret.pb",
        )
        .await;
        // Written by the identity provider (before encryption was on): plain.
        w.put("/registry/secrets/default/plain", SECRET, 0).await;
        w.delete(APP_CONFIG).await;
        w.put(APP_CONFIG, CONFIGMAP, 0).await; // again after its delete
        w.txn().await;
        w.revoke(revoked).await;
        w.put_text("/other/y", "another key outside").await;
        for i in 0..10 {
            let file = if i % 4 < 2 { LEASE_B } else { LEASE_A };
            w.put(NODE_LEASE[i % 2], file, kept).await;
        }
        w.put(DEPLOYMENT, DEPLOY_A, 0).await;
        w.delete("/registry/pods/kube-system/etcd-node-0").await;
        w.put(WEB[2], POD_A, 0).await; // again after the transaction deleted it
        w.put_bytes(
            DB_PASSWORD,
            aescbc(AESCBC_KEY_NAME, KEY_A, iv(0x50), &golden(SECRET)),
            0,
            "aescbc key1 of v1.30.3/core.v1.Secret.pb, another IV",
        )
        .await;
        assert_eq!(w.head, 47, "the workload's revisions moved: {:#?}", w.steps);
        w
    }

    /// Records a write that etcd gave `revision`, which must be the next one.
    fn step(&mut self, revision: i64, what: String) {
        assert_eq!(
            revision,
            self.head + 1,
            "{what}: etcd skipped or reused a revision"
        );
        self.head = revision;
        self.steps.push(Step { revision, what });
    }

    async fn put(&mut self, key: &str, file: &str, lease: i64) {
        self.put_bytes(key, golden(file), lease, file).await;
    }

    /// A plain text value, described by itself.
    async fn put_text(&mut self, key: &str, text: &str) {
        self.put_bytes(key, text.as_bytes().to_vec(), 0, &format!("{text:?}"))
            .await;
    }

    async fn put_bytes(&mut self, key: &str, value: Vec<u8>, lease: i64, what: &str) {
        let opts = (lease != 0).then(|| PutOptions::new().with_lease(lease));
        let resp = self
            .client
            .put(key, value, opts)
            .await
            .unwrap_or_else(|e| panic!("put {key}: {e}"));
        let rev = resp.header().expect("put header").revision();
        let on = if lease != 0 { " (on a lease)" } else { "" };
        self.step(rev, format!("put {key} = {what}{on}"));
    }

    async fn delete(&mut self, key: &str) {
        let resp = self
            .client
            .delete(key, None)
            .await
            .unwrap_or_else(|e| panic!("delete {key}: {e}"));
        assert_eq!(resp.deleted(), 1, "delete {key}: it was not there");
        let rev = resp.header().expect("delete header").revision();
        self.step(rev, format!("delete {key}"));
    }

    /// The one transaction: three puts and a delete at one revision, sub-revisions 0 to 3.
    async fn txn(&mut self) {
        let ops = vec![
            TxnOp::put(
                "/registry/configmaps/kube-system/extension-apiserver-authentication",
                golden(CONFIGMAP),
                None,
            ),
            TxnOp::put(
                "/registry/pods/kube-system/etcd-node-0",
                golden(POD_A),
                None,
            ),
            TxnOp::put(
                "/registry/pods/kube-system/kube-apiserver-node-0",
                golden(POD_B),
                None,
            ),
            TxnOp::delete(WEB[2], None),
        ];
        let resp = self
            .client
            .txn(Txn::new().and_then(ops))
            .await
            .expect("txn");
        assert!(resp.succeeded(), "a transaction without compares succeeds");
        let rev = resp.header().expect("txn header").revision();
        self.step(
            rev,
            "txn put configmaps/kube-system/extension-apiserver-authentication, \
             pods/kube-system/etcd-node-0, pods/kube-system/kube-apiserver-node-0; \
             delete pods/default/web-2"
                .into(),
        );
    }

    async fn grant(&mut self) -> i64 {
        self.client
            .lease_grant(LEASE_TTL, None)
            .await
            .expect("lease grant")
            .id()
    }

    /// Revokes a lease: etcd deletes its keys, all at one revision.
    async fn revoke(&mut self, id: i64) {
        let resp = self.client.lease_revoke(id).await.expect("lease revoke");
        let rev = resp.header().expect("revoke header").revision();
        self.step(
            rev,
            format!("revoke lease {id:x}: deletes {} and {EVENT}", NODE_LEASE[2]),
        );
    }
}

/// 16 bytes counting up from `first`: a fixed IV (kube-apiserver draws a random one).
fn iv(first: u8) -> [u8; 16] {
    std::array::from_fn(|i| first + i as u8)
}

/// 24 bytes counting up from `first`: a fixed nonce (kube-apiserver draws a random one).
fn nonce(first: u8) -> [u8; 24] {
    std::array::from_fn(|i| first + i as u8)
}

/// `etcd --version`'s `etcd Version:` line.
fn etcd_version() -> String {
    let out = super::output_within(Command::new("etcd").arg("--version"), ETCDCTL_LIMIT);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("etcd Version: "))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("etcd --version printed no version: {text:?}"))
}

/// `etcdctl --endpoints ENDPOINT ARGS` (API v3, which etcd 3.4's etcdctl needs asked for).
fn etcdctl(endpoint: &str, args: &[&str]) -> Output {
    let mut all = vec!["--endpoints", endpoint];
    all.extend_from_slice(args);
    etcdctl_offline(&all)
}

/// `etcdctl ARGS` with no `ETCDCTL_*` setting of the caller's environment (which would
/// point it elsewhere or clash with the flags) but `ETCDCTL_API=3`.
fn etcdctl_offline(args: &[&str]) -> Output {
    let mut cmd = Command::new("etcdctl");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("ETCDCTL_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("ETCDCTL_API", "3").args(args);
    super::output_within(&mut cmd, ETCDCTL_LIMIT)
}

/// Fails the test unless the run succeeded; gives its stdout.
fn ok(out: &Output) -> &[u8] {
    assert!(
        out.status.success(),
        "etcdctl failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    &out.stdout
}

fn json(out: &Output) -> Value {
    let stdout = ok(out);
    serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "etcdctl printed no JSON ({e}): {}",
            String::from_utf8_lossy(stdout)
        )
    })
}

/// `etcdctl get --prefix /registry --rev REV -w json`: the parsed answer, or etcdctl's
/// error (its stderr's `Error:` line, or all of it).
fn get_registry(endpoint: &str, rev: i64) -> Result<Value, String> {
    let rev = rev.to_string();
    let out = etcdctl(
        endpoint,
        &["get", "--prefix", "/registry", "--rev", &rev, "-w", "json"],
    );
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let line = err.lines().find(|l| l.starts_with("Error:"));
        return Err(line.map_or(err.clone(), str::to_string));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("not JSON: {e}"))
}

/// Every lease at head: `lease list`, then `lease timetolive --keys` of each.
fn leases(endpoint: &str) -> Vec<(i64, i64, Vec<String>)> {
    let list = json(&etcdctl(endpoint, &["lease", "list", "-w", "json"]));
    let ids: Vec<i64> = list["leases"].as_array().map_or_else(Vec::new, |l| {
        l.iter()
            .map(|x| x["id"].as_i64().expect("a lease id"))
            .collect()
    });
    let mut out = Vec::new();
    for id in ids {
        // etcdctl takes lease ids in hex.
        let hex = format!("{id:x}");
        let ttl = json(&etcdctl(
            endpoint,
            &["lease", "timetolive", &hex, "--keys", "-w", "json"],
        ));
        let granted = ttl["granted-ttl"].as_i64().expect("granted-ttl");
        let mut keys: Vec<String> = ttl["keys"].as_array().map_or_else(Vec::new, |k| {
            k.iter()
                .map(|x| {
                    String::from_utf8(b64(x.as_str().expect("a base64 key")))
                        .expect("workload keys are UTF-8")
                })
                .collect()
        });
        keys.sort();
        out.push((id, granted, keys));
    }
    out.sort();
    out
}

/// The page layout facts a test checks the db file against (etcd-io/bbolt `page.go`,
/// `db.go`, `internal/common/meta.go` in later releases): page 0 starts at offset 0 with
/// a 16-byte page header (`id` u64, `flags` u16, `count` u16, `overflow` u32, little
/// endian); a meta page has flags `0x04` and its `meta` follows the header (`magic` u32
/// `0xED0CDAED`, `version` u32 `2`, `pageSize` u32, `flags` u32, root bucket 16 bytes,
/// `freelist`, `pgid`, `txid` u64, then `checksum` u64: FNV-1a 64 of the 56 bytes before
/// it). Pages 0 and 1 are both meta pages.
pub mod bbolt {
    pub const PAGE_HEADER: usize = 16;
    pub const META_PAGE_FLAG: u16 = 0x04;
    pub const MAGIC: u32 = 0xED0C_DAED;
    pub const VERSION: u32 = 2;
    /// Bytes of `meta` covered by its checksum (everything before `checksum`).
    pub const META_SUMMED: usize = 56;

    /// FNV-1a, 64 bits (Go's `hash/fnv` `New64a`).
    pub fn fnv1a64(bytes: &[u8]) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }
}
