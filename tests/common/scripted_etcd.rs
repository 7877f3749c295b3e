//! A scripted etcd: a gRPC server on loopback speaking etcd's v3 API (the server stubs that
//! the etcd-client crate builds from etcd's `.proto` files with its `build-server` feature)
//! that plays an exact sequence of watch responses, so that tests can send what real etcds
//! have been seen to send and a healthy etcd never does on cue.
//!
//! It answers `Status` (with the version the script names, which decides how regscope
//! treats progress notifications), `Range` from a small MVCC history (every version the
//! script writes, so a read at any revision, as `verify` makes, gets what etcd would have
//! held then) and `Watch`: the first watch created on the prefix gets the script, in order,
//! with `Pause` steps between; the head revision moves as the steps are played. Every other
//! RPC answers `Unimplemented` (regscope only reads).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::proto::{
    PbAlarmRequest, PbAlarmResponse, PbCompactionRequest, PbCompactionResponse,
    PbDefragmentRequest, PbDefragmentResponse, PbDeleteRequest, PbDeleteResponse,
    PbDowngradeRequest, PbDowngradeResponse, PbEvent, PbHashKvRequest, PbHashKvResponse,
    PbHashRequest, PbHashResponse, PbKeyValue, PbKvServer, PbKvService, PbMaintenanceServer,
    PbMaintenanceService, PbMoveLeaderRequest, PbMoveLeaderResponse, PbPutRequest, PbPutResponse,
    PbRangeRequest, PbRangeResponse, PbRangeStreamResponse, PbResponseHeader, PbSnapshotRequest,
    PbSnapshotResponse, PbStatusRequest, PbStatusResponse, PbTxnRequest, PbTxnResponse,
    PbWatchRequest, PbWatchRequestUnion, PbWatchResponse, PbWatchServer, PbWatchService,
};
use futures::Stream;
use tokio::sync::mpsc;
use tonic::{Request, Response, Status, Streaming};

/// etcd's `mvccpb.Event.EventType` values.
const PUT: i32 = 0;
const DELETE: i32 = 1;
const CLUSTER_ID: u64 = 0x5c1e_d0e7_cd00_0001;

/// One step of the watch script, sent on the prefix's watch (watch id 0).
#[derive(Clone, Debug)]
pub enum Step {
    /// A watch response with these events; the response header carries the newest event's
    /// revision. Each `(key, value)` is a PUT (create or update), `(key, None)` a DELETE.
    Events(Vec<(String, Option<String>, i64)>),
    /// A progress notification (a response without events) with this header revision.
    Progress(i64),
    /// Moves the head without an event on the prefix (a write elsewhere in etcd).
    WriteElsewhere(i64),
    /// Waits before the next step.
    Pause(Duration),
}

#[derive(Clone, Debug)]
struct Version {
    create_revision: i64,
    mod_revision: i64,
    version: i64,
    value: Option<Vec<u8>>,
}

#[derive(Default)]
struct State {
    head: i64,
    /// Every version of every key, oldest first; `value: None` is a tombstone.
    history: BTreeMap<Vec<u8>, Vec<Version>>,
    script: Option<Vec<Step>>,
    /// Steps sent so far.
    played: usize,
    /// The whole script was played.
    finished: bool,
}

impl State {
    fn write(&mut self, key: &str, value: Option<&str>, rev: i64) {
        let versions = self.history.entry(key.as_bytes().to_vec()).or_default();
        let live = versions.last().filter(|v| v.value.is_some()).cloned();
        versions.push(Version {
            create_revision: live.as_ref().map_or(rev, |l| l.create_revision),
            mod_revision: rev,
            version: live.as_ref().map_or(1, |l| l.version + 1),
            value: value.map(|v| v.as_bytes().to_vec()),
        });
        self.head = self.head.max(rev);
    }

    /// The live version of every key at `rev`.
    fn at(&self, rev: i64) -> Vec<PbKeyValue> {
        self.history
            .iter()
            .filter_map(|(k, vs)| {
                let v = vs.iter().rev().find(|v| v.mod_revision <= rev)?;
                Some(PbKeyValue {
                    key: k.clone(),
                    create_revision: v.create_revision,
                    mod_revision: v.mod_revision,
                    version: v.version,
                    value: v.value.clone()?,
                    lease: 0,
                })
            })
            .collect()
    }

    fn header(&self, revision: i64) -> Option<PbResponseHeader> {
        Some(PbResponseHeader {
            cluster_id: CLUSTER_ID,
            member_id: 1,
            revision,
            raft_term: 2,
        })
    }
}

/// The scripted server. Cheap to clone (shared state).
#[derive(Clone)]
pub struct ScriptedEtcd {
    version: String,
    state: Arc<Mutex<State>>,
}

impl ScriptedEtcd {
    /// A server that says it is etcd `version`, holding `initial` (key, value, revision)
    /// before the watch starts, and playing `script` on the first watch of the prefix.
    pub fn new(version: &str, initial: &[(&str, &str, i64)], script: Vec<Step>) -> Self {
        let mut state = State::default();
        for (k, v, rev) in initial {
            state.write(k, Some(v), *rev);
        }
        state.script = Some(script);
        ScriptedEtcd {
            version: version.to_string(),
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// Serves on a random loopback port; returns the endpoint URL.
    pub async fn serve(self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(PbKvServer::new(self.clone()))
                .add_service(PbWatchServer::new(self.clone()))
                .add_service(PbMaintenanceServer::new(self))
                .serve_with_incoming(incoming),
        );
        format!("http://{addr}")
    }

    /// Whether the whole script was played.
    pub fn finished(&self) -> bool {
        self.state.lock().unwrap().finished
    }
}

type Boxed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

fn unimplemented<T>(what: &str) -> Result<T, Status> {
    Err(Status::unimplemented(format!(
        "the scripted etcd does not serve {what}"
    )))
}

#[tonic::async_trait]
impl PbKvService for ScriptedEtcd {
    async fn range(
        &self,
        req: Request<PbRangeRequest>,
    ) -> Result<Response<PbRangeResponse>, Status> {
        let r = req.into_inner();
        let s = self.state.lock().unwrap();
        let rev = if r.revision > 0 { r.revision } else { s.head };
        if rev > s.head {
            return Err(Status::out_of_range(
                "etcdserver: mvcc: required revision is a future revision",
            ));
        }
        let in_range = |k: &[u8]| {
            if r.range_end.is_empty() {
                k == r.key.as_slice()
            } else if r.range_end == [0] {
                k >= r.key.as_slice()
            } else {
                k >= r.key.as_slice() && k < r.range_end.as_slice()
            }
        };
        let all: Vec<PbKeyValue> = s
            .at(rev)
            .into_iter()
            .filter(|kv| in_range(&kv.key))
            .filter(|kv| r.min_mod_revision == 0 || kv.mod_revision >= r.min_mod_revision)
            .collect();
        let count = all.len() as i64;
        let limit = if r.limit > 0 {
            r.limit as usize
        } else {
            usize::MAX
        };
        let more = all.len() > limit;
        let kvs = if r.count_only {
            Vec::new()
        } else {
            all.into_iter()
                .take(limit)
                .map(|mut kv| {
                    if r.keys_only {
                        kv.value.clear();
                    }
                    kv
                })
                .collect()
        };
        Ok(Response::new(PbRangeResponse {
            header: s.header(rev),
            kvs,
            more,
            count,
        }))
    }

    type RangeStreamStream = Boxed<PbRangeStreamResponse>;

    async fn range_stream(
        &self,
        _: Request<PbRangeRequest>,
    ) -> Result<Response<Self::RangeStreamStream>, Status> {
        unimplemented("RangeStream")
    }

    async fn put(&self, _: Request<PbPutRequest>) -> Result<Response<PbPutResponse>, Status> {
        unimplemented("Put")
    }

    async fn delete_range(
        &self,
        _: Request<PbDeleteRequest>,
    ) -> Result<Response<PbDeleteResponse>, Status> {
        unimplemented("DeleteRange")
    }

    async fn txn(&self, _: Request<PbTxnRequest>) -> Result<Response<PbTxnResponse>, Status> {
        unimplemented("Txn")
    }

    async fn compact(
        &self,
        _: Request<PbCompactionRequest>,
    ) -> Result<Response<PbCompactionResponse>, Status> {
        unimplemented("Compact")
    }
}

#[tonic::async_trait]
impl PbMaintenanceService for ScriptedEtcd {
    async fn alarm(&self, _: Request<PbAlarmRequest>) -> Result<Response<PbAlarmResponse>, Status> {
        unimplemented("Alarm")
    }

    async fn status(
        &self,
        _: Request<PbStatusRequest>,
    ) -> Result<Response<PbStatusResponse>, Status> {
        let s = self.state.lock().unwrap();
        Ok(Response::new(PbStatusResponse {
            header: s.header(s.head),
            version: self.version.clone(),
            leader: 1,
            raft_index: 10,
            raft_term: 2,
            ..Default::default()
        }))
    }

    async fn defragment(
        &self,
        _: Request<PbDefragmentRequest>,
    ) -> Result<Response<PbDefragmentResponse>, Status> {
        unimplemented("Defragment")
    }

    async fn hash(&self, _: Request<PbHashRequest>) -> Result<Response<PbHashResponse>, Status> {
        unimplemented("Hash")
    }

    async fn hash_kv(
        &self,
        _: Request<PbHashKvRequest>,
    ) -> Result<Response<PbHashKvResponse>, Status> {
        unimplemented("HashKV")
    }

    type SnapshotStream = Boxed<PbSnapshotResponse>;

    async fn snapshot(
        &self,
        _: Request<PbSnapshotRequest>,
    ) -> Result<Response<Self::SnapshotStream>, Status> {
        unimplemented("Snapshot")
    }

    async fn move_leader(
        &self,
        _: Request<PbMoveLeaderRequest>,
    ) -> Result<Response<PbMoveLeaderResponse>, Status> {
        unimplemented("MoveLeader")
    }

    async fn downgrade(
        &self,
        _: Request<PbDowngradeRequest>,
    ) -> Result<Response<PbDowngradeResponse>, Status> {
        unimplemented("Downgrade")
    }
}

#[tonic::async_trait]
impl PbWatchService for ScriptedEtcd {
    type WatchStream = Boxed<PbWatchResponse>;

    async fn watch(
        &self,
        req: Request<Streaming<PbWatchRequest>>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let mut requests = req.into_inner();
        let (tx, rx) = mpsc::channel::<Result<PbWatchResponse, Status>>(64);
        let state = self.state.clone();
        tokio::spawn(async move {
            let mut next_id = 0i64;
            while let Ok(Some(r)) = requests.message().await {
                let head = state.lock().unwrap().head;
                let header = state.lock().unwrap().header(head);
                match r.request_union {
                    Some(PbWatchRequestUnion::CreateRequest(c)) => {
                        let id = next_id;
                        next_id += 1;
                        let created = PbWatchResponse {
                            header,
                            watch_id: id,
                            created: true,
                            ..Default::default()
                        };
                        if tx.send(Ok(created)).await.is_err() {
                            return;
                        }
                        // The script goes to the first watch on a range (the prefix), once.
                        let script = if c.range_end.is_empty() {
                            None
                        } else {
                            state.lock().unwrap().script.take()
                        };
                        if let Some(script) = script {
                            let (tx, state) = (tx.clone(), state.clone());
                            tokio::spawn(play(script, id, tx, state));
                        }
                    }
                    // After the script, a progress request is answered at the head, as a
                    // healthy etcd answers it.
                    Some(PbWatchRequestUnion::ProgressRequest(_)) => {
                        let finished = state.lock().unwrap().finished;
                        if finished {
                            let progress = PbWatchResponse {
                                header,
                                watch_id: 0,
                                ..Default::default()
                            };
                            if tx.send(Ok(progress)).await.is_err() {
                                return;
                            }
                        }
                    }
                    _ => {}
                }
            }
        });
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        Ok(Response::new(Box::pin(stream)))
    }
}

async fn play(
    script: Vec<Step>,
    watch_id: i64,
    tx: mpsc::Sender<Result<PbWatchResponse, Status>>,
    state: Arc<Mutex<State>>,
) {
    for step in script {
        let resp = {
            let mut s = state.lock().unwrap();
            s.played += 1;
            match &step {
                Step::Pause(_) => None,
                Step::WriteElsewhere(rev) => {
                    s.head = s.head.max(*rev);
                    None
                }
                Step::Progress(rev) => {
                    s.head = s.head.max(*rev);
                    Some(PbWatchResponse {
                        header: s.header(*rev),
                        watch_id,
                        ..Default::default()
                    })
                }
                Step::Events(evs) => {
                    let mut events = Vec::new();
                    let mut newest = 0;
                    for (k, v, rev) in evs {
                        s.write(k, v.as_deref(), *rev);
                        newest = newest.max(*rev);
                        let kv = s.history[k.as_bytes()].last().cloned().expect("written");
                        events.push(PbEvent {
                            r#type: if v.is_some() { PUT } else { DELETE },
                            kv: Some(PbKeyValue {
                                key: k.as_bytes().to_vec(),
                                create_revision: if v.is_some() { kv.create_revision } else { 0 },
                                mod_revision: *rev,
                                version: if v.is_some() { kv.version } else { 0 },
                                value: kv.value.unwrap_or_default(),
                                lease: 0,
                            }),
                            // Never sent: regscope's watch does not ask for prev_kv, and a
                            // DELETE without it is what etcd sends when a compaction raced
                            // the delete.
                            prev_kv: None,
                        });
                    }
                    Some(PbWatchResponse {
                        header: s.header(newest),
                        watch_id,
                        events,
                        ..Default::default()
                    })
                }
            }
        };
        if let Step::Pause(d) = step {
            tokio::time::sleep(d).await;
        }
        if let Some(r) = resp {
            if tx.send(Ok(r)).await.is_err() {
                return;
            }
        }
    }
    state.lock().unwrap().finished = true;
}
