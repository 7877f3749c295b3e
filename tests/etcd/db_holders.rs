//! A db file an etcd process has open is said to be: `open_by::holders` finds the running
//! member holding its own `member/snap/db`, a copy of the file has no holder (not even this
//! process, which has it open to read it), and once etcd is gone the file has none either.

use crate::common::require;

use regscope::demo::PrivateEtcd;
use regscope::source::etcd_db::open_by::{check, holders, Holder};
use regscope::source::etcd_db::EtcdDb;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_db_of_a_running_etcd_is_said_to_be_open_by_it() {
    require!(ETCD);
    let mut etcd = PrivateEtcd::start().await.expect("etcd");
    let mut c = etcd.client().await.unwrap();
    for i in 0..10 {
        c.put(format!("/registry/configmaps/default/cm-{i}"), "x", None)
            .await
            .unwrap();
    }
    let db = etcd.data_dir().join("member/snap/db");
    let pid = etcd.pid().unwrap();
    let found = holders(&db);
    assert!(
        found.contains(&Holder {
            pid,
            comm: "etcd".into()
        }),
        "etcd (pid {pid}) not among {found:?}"
    );
    let said = check(&db).unwrap();
    assert_eq!(
        said,
        format!(
            "{} is open by etcd (pid {pid}): it changes while it is read, so what regscope \
             reads may mix two moments or look corrupt; read a copy instead: `etcdctl \
             snapshot save copy.db` (or copy the file while etcd is stopped)",
            db.display()
        )
    );

    // A copy: nobody holds it, not even this process while it reads it.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    std::fs::copy(&db, &copy).unwrap();
    let open = EtcdDb::open(&copy).expect("the copy reads as etcd's backend");
    // (etcd commits its backend every 100 ms: the copy may not hold the last puts yet.)
    assert!(open.versions_from(0).all(|v| v.is_ok()));
    assert_eq!(holders(&copy), []);
    assert_eq!(check(&copy), None);
    drop(open);

    // The member gone, its file has no holder.
    etcd.kill().unwrap();
    assert_eq!(holders(&db), []);
}
