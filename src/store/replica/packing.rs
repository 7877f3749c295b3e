//! Values kept compressed in memory: each stored value is either the bytes etcd sent
//! ([`Form::Raw`]) or a zstd frame of them ([`Form::Dict`] with the dictionary of its
//! resource, [`Form::Plain`] without one); views get the bytes back whole, in about a
//! microsecond ([`unpack`]).
//!
//! Why: a replica of a million Kubernetes objects holds about 460 MiB of values that zstd,
//! with a dictionary trained on the first values of each resource, keeps in a quarter of
//! that (Events about 5×, Secrets and Leases about 4×, ConfigMaps with random data 2.5×;
//! `cargo bench --bench value_compression`), while regscope runs beside etcd and the
//! apiserver on a control-plane node.
//!
//! How, without slowing the apply: applying an event only marks its key's slot. A few
//! times a second the replica sweeps the slots marked since (`Replica::sweep`), hands
//! their raw values to a worker thread in batches ([`Codebook::add`]) and swaps the packed
//! bytes in when they come back ([`Codebook::poll`]), after checking that the version is
//! still held. The worker trains a dictionary per resource from its first values and runs
//! only on otherwise idle CPU. Compressing is about 2–3 µs a value, beyond the apply's
//! budget of 1 µs per event; this way the apply pays a bit per event and a lookup per
//! packed value, and a version superseded and dropped between two sweeps (a replay at full
//! speed) is never packed at all. Memory is bounded by the history budget either way.
//!
//! When the worker falls behind (a list faster than the idle CPU left to it), the
//! replica's own thread packs what waits beyond a bound ([`Codebook::pack_here`],
//! `VersionStore::assist` in `versions.rs`): it pays CPU for a fast list so that a list
//! never holds hundreds of MiB raw.
//!
//! What is never packed: values shorter than [`MIN_PACK_LEN`], values encrypted at rest
//! (`k8s:enc:…`: ciphertext does not compress, and the encryption summary reads their
//! prefix), and values whose frame would not be smaller. Sizes, statistics and the history
//! budget always count the raw length, so what a replica reports does not depend on how
//! far packing got.

use std::cell::RefCell;
use std::sync::{mpsc, Arc};

use bytes::Bytes;
use zstd::zstd_safe;

use crate::model::kubernetes::ENCRYPTED_PREFIX;

/// Values shorter than this stay as they are: a zstd frame's own header would eat most of
/// the gain.
pub(crate) const MIN_PACK_LEN: usize = 64;
/// A resource's dictionary is trained on its first this many values to be packed…
const TRAIN_SAMPLES: usize = 1_000;
/// …or on fewer when their bytes reach this…
const TRAIN_BYTES: usize = 4 << 20;
/// …or on at least `TRAIN_FEW` values of `TRAIN_FEW_BYTES` in all (a resource of few,
/// large objects: 200 Nodes never reach a thousand values).
const TRAIN_FEW: usize = 64;
const TRAIN_FEW_BYTES: usize = 512 << 10;
/// Dictionary size. 16 KiB gave 3.7–3.9× over the mixed key set; larger gained little.
const DICT_BYTES: usize = 16 << 10;
/// zstd level: 1 and 3 cost the same per value here, 3 packs a little tighter.
const LEVEL: i32 = 3;
/// A resource whose dictionary cannot be trained (too few or too uniform values) still
/// packs values from this size up, without a dictionary.
const PLAIN_MIN_LEN: usize = 1024;
/// Raw bytes handed to the worker and not yet answered, at most.
pub(super) const IN_FLIGHT_BYTES: usize = 16 << 20;
/// Raw bytes per request to the worker.
const BATCH_BYTES: usize = 256 << 10;

/// How a stored value is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Form {
    /// No value: the key was deleted at this version.
    Tombstone = 0,
    /// The bytes as etcd sent them.
    Raw = 1,
    /// A zstd frame made with the resource's dictionary.
    Dict = 2,
    /// A zstd frame made without a dictionary.
    Plain = 3,
}

impl Form {
    pub(crate) fn from_u8(b: u8) -> Option<Form> {
        Some(match b {
            0 => Form::Tombstone,
            1 => Form::Raw,
            2 => Form::Dict,
            3 => Form::Plain,
            _ => return None,
        })
    }
}

/// One stored value (or a tombstone). 40 bytes; the bytes themselves are shared
/// (`Bytes`) with the observation they came from until they are packed.
#[derive(Clone, Debug)]
pub(crate) struct Val {
    data: Bytes,
    /// Length of the value itself (of `data` unless packed).
    raw_len: u32,
    form: Form,
}

impl Val {
    /// The bytes held (packed or raw), for freeing elsewhere.
    pub(crate) fn into_data(self) -> Bytes {
        self.data
    }

    pub(crate) fn tombstone() -> Val {
        Val {
            data: Bytes::new(),
            raw_len: 0,
            form: Form::Tombstone,
        }
    }

    pub(crate) fn raw(data: Bytes) -> Val {
        Val {
            raw_len: u32::try_from(data.len()).unwrap_or(u32::MAX),
            data,
            form: Form::Raw,
        }
    }

    /// A value as a checkpoint holds it. `None` when the parts do not fit together.
    pub(crate) fn from_parts(form: Form, raw_len: u32, data: Bytes) -> Option<Val> {
        match form {
            Form::Tombstone if data.is_empty() && raw_len == 0 => Some(Val::tombstone()),
            Form::Raw if data.len() == raw_len as usize => Some(Val::raw(data)),
            Form::Dict | Form::Plain if !data.is_empty() => Some(Val {
                data,
                raw_len,
                form,
            }),
            _ => None,
        }
    }

    pub(crate) fn form(&self) -> Form {
        self.form
    }

    pub(crate) fn is_tombstone(&self) -> bool {
        self.form == Form::Tombstone
    }

    pub(crate) fn is_packed(&self) -> bool {
        matches!(self.form, Form::Dict | Form::Plain)
    }

    /// Length of the value itself, packed or not (0 for a tombstone).
    pub(crate) fn len(&self) -> usize {
        if self.form == Form::Raw {
            self.data.len()
        } else {
            self.raw_len as usize
        }
    }

    /// Bytes held in memory for it.
    pub(crate) fn held_len(&self) -> usize {
        self.data.len()
    }

    /// The bytes as held: the value when raw, the frame when packed.
    pub(crate) fn data(&self) -> &Bytes {
        &self.data
    }

    /// The value when it is held raw.
    pub(crate) fn raw_bytes(&self) -> Option<&Bytes> {
        (self.form == Form::Raw).then_some(&self.data)
    }
}

/// A trained dictionary: its bytes (for checkpoints and the worker) and the prepared
/// form decompression uses.
pub(crate) struct Dict {
    raw: Bytes,
    ddict: zstd_safe::DDict<'static>,
}

impl Dict {
    pub(crate) fn new(raw: Bytes) -> Dict {
        let ddict = zstd_safe::DDict::create(&raw);
        Dict { raw, ddict }
    }

    pub(crate) fn bytes(&self) -> &Bytes {
        &self.raw
    }
}

impl std::fmt::Debug for Dict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dict({} bytes)", self.raw.len())
    }
}

thread_local! {
    /// One decompression context per thread, reused (creating one costs more than a
    /// value's decompression).
    static DCTX: RefCell<zstd_safe::DCtx<'static>> = RefCell::new(zstd_safe::DCtx::create());
}

/// The value `v` held: its bytes as they are when raw, decompressed when packed (`dict`
/// is its resource's dictionary). `None` for a tombstone, and for a frame that does not
/// decompress to its recorded length (a damaged checkpoint that still passed its CRC).
pub(crate) fn unpack(v: &Val, dict: Option<&Dict>) -> Option<Bytes> {
    match v.form {
        Form::Tombstone => None,
        Form::Raw => Some(v.data.clone()),
        Form::Dict | Form::Plain => {
            let want = v.raw_len as usize;
            let mut out: Vec<u8> = Vec::with_capacity(want);
            let r = DCTX.with(|d| {
                let mut d = d.borrow_mut();
                match (v.form, dict) {
                    (Form::Dict, Some(dict)) => {
                        d.decompress_using_ddict(&mut out, &v.data, &dict.ddict)
                    }
                    (Form::Plain, _) => d.decompress(&mut out, &v.data),
                    _ => Err(0),
                }
            });
            match r {
                Ok(n) if n == want => Some(Bytes::from(out)),
                _ => None,
            }
        }
    }
}

/// Whether a value is worth offering to the packer at all.
fn packable(value: &[u8]) -> bool {
    Codebook::long_enough(value.len()) && !value.starts_with(ENCRYPTED_PREFIX)
}

/// A stored version to pack, named the way the replica finds it again: its slot, the
/// slot's generation (a slot is reused for another key after its key is forgotten) and
/// the version's mod_revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Job {
    pub(crate) slot: u32,
    pub(crate) gen: u32,
    pub(crate) mod_revision: i64,
}

/// What a resource's values are packed with.
enum Codec {
    /// Gathering the values to train a dictionary on; `parked` are the slots to look at
    /// again once it exists.
    Collecting {
        samples: Vec<Bytes>,
        bytes: usize,
        parked: Vec<u32>,
    },
    /// The worker is training on `samples`; slots wait for the dictionary.
    Training {
        parked: Vec<u32>,
        samples: Vec<Bytes>,
    },
    /// Packed with this dictionary.
    Dict(Arc<Dict>),
    /// No dictionary could be trained: large values are packed without one.
    Plain,
}

impl Default for Codec {
    fn default() -> Codec {
        Codec::Collecting {
            samples: Vec::new(),
            bytes: 0,
            parked: Vec::new(),
        }
    }
}

/// What to do with the raw values of a resource, as [`Codebook::codec`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Offer them ([`Codebook::add`]).
    Pack,
    /// Give them as samples ([`Codebook::sample`]), then park the slot
    /// ([`Codebook::park`]).
    Sample,
    /// Park the slot: the dictionary is being trained.
    Park,
    /// Leave them raw (packing is off).
    Skip,
}

/// Values for one request to the worker, each naming its codec by index into `codecs`
/// (a batch spans a few resources; one `Arc` clone per resource, not per value).
#[derive(Default)]
struct Batch {
    codecs: Vec<(u32, Option<Arc<Dict>>)>,
    items: Vec<(Job, u16, Bytes)>,
    bytes: usize,
}

/// The replica's side of packing: per resource, how its values are packed; a batch of
/// values for the worker; the worker itself (started on first use). See the module docs.
///
/// The replica finds raw values to pack itself (it sweeps the keys written since its last
/// sweep), so applying an event costs packing nothing but marking its key.
#[derive(Default)]
pub(crate) struct Codebook {
    codecs: Vec<Codec>,
    /// The batch being filled.
    open: Batch,
    /// Raw bytes handed to the worker and not yet answered.
    in_flight: usize,
    trainings: usize,
    worker: Option<Worker>,
    /// Contexts for packing on the replica's own thread ([`Codebook::pack_here`]),
    /// made on first use.
    here: Option<Packer>,
    /// Raw bytes of the slots parked per resource (a slot's bytes as parked).
    parked_bytes: Vec<u64>,
    /// Packing turned off (the worker failed to start, or [`Codebook::disable`]).
    off: bool,
}

impl Codebook {
    /// A codebook whose resources already have these dictionaries (a restored
    /// checkpoint's).
    pub(crate) fn with_dicts(dicts: impl IntoIterator<Item = (u32, Bytes)>) -> Codebook {
        let mut c = Codebook::default();
        for (r, raw) in dicts {
            let slot = c.codec_mut(r);
            *slot = Codec::Dict(Arc::new(Dict::new(raw)));
        }
        c
    }

    /// Stops packing: values stay raw from now on (what is packed stays packed).
    pub(crate) fn disable(&mut self) {
        self.off = true;
        self.open = Batch::default();
        self.parked_bytes = Vec::new();
        for c in &mut self.codecs {
            if let Codec::Collecting {
                samples, parked, ..
            } = c
            {
                *samples = Vec::new();
                *parked = Vec::new();
            }
        }
    }

    fn codec_mut(&mut self, resource: u32) -> &mut Codec {
        let i = resource as usize;
        if self.codecs.len() <= i {
            self.codecs.resize_with(i + 1, Codec::default);
        }
        &mut self.codecs[i]
    }

    /// The dictionary of `resource`, when it has one.
    pub(crate) fn dict(&self, resource: u32) -> Option<&Dict> {
        match self.codecs.get(resource as usize) {
            Some(Codec::Dict(d)) => Some(d),
            _ => None,
        }
    }

    /// Every dictionary, by resource id (for checkpoints).
    pub(crate) fn dicts(&self) -> impl Iterator<Item = (u32, &Dict)> + '_ {
        self.codecs.iter().enumerate().filter_map(|(i, c)| match c {
            Codec::Dict(d) => Some((i as u32, d.as_ref())),
            _ => None,
        })
    }

    /// What to do with the raw values of `resource` now.
    pub(crate) fn plan(&self, resource: u32) -> Plan {
        if self.off {
            return Plan::Skip;
        }
        match self.codecs.get(resource as usize) {
            None | Some(Codec::Collecting { .. }) => Plan::Sample,
            Some(Codec::Training { .. }) => Plan::Park,
            Some(Codec::Dict(_) | Codec::Plain) => Plan::Pack,
        }
    }

    /// Whether the worker has all it should hold for now: the sweep stops when so.
    pub(crate) fn full(&self) -> bool {
        self.off || self.in_flight + self.open.bytes >= IN_FLIGHT_BYTES
    }

    /// Whether `value` is worth packing at all.
    pub(crate) fn packable(value: &[u8]) -> bool {
        packable(value)
    }

    /// Whether a value of `len` bytes may be worth packing: [`Codebook::packable`] without
    /// reading the bytes (a value this long may still be ciphertext).
    pub(crate) fn long_enough(len: usize) -> bool {
        len >= MIN_PACK_LEN && u32::try_from(len).is_ok()
    }

    /// A raw value of a `Collecting` resource, as a sample to train its dictionary on.
    pub(crate) fn sample(&mut self, resource: u32, value: &Bytes) {
        if let Codec::Collecting { samples, bytes, .. } = self.codec_mut(resource) {
            if samples.len() < TRAIN_SAMPLES && *bytes < TRAIN_BYTES {
                samples.push(value.clone());
                *bytes += value.len();
            }
        }
    }

    /// Parks `slot` until `resource`'s dictionary exists; starts the training when enough
    /// samples are in.
    pub(crate) fn park(&mut self, resource: u32, slot: u32, bytes: u64) {
        let i = resource as usize;
        if self.parked_bytes.len() <= i {
            self.parked_bytes.resize(i + 1, 0);
        }
        self.parked_bytes[i] += bytes;
        let mut train = None;
        match self.codec_mut(resource) {
            Codec::Collecting {
                samples,
                bytes,
                parked,
            } => {
                parked.push(slot);
                if samples.len() >= TRAIN_SAMPLES
                    || *bytes >= TRAIN_BYTES
                    || (samples.len() >= TRAIN_FEW && *bytes >= TRAIN_FEW_BYTES)
                {
                    train = Some((std::mem::take(samples), std::mem::take(parked)));
                }
            }
            Codec::Training { parked, .. } => parked.push(slot),
            _ => {}
        }
        if let Some((samples, parked)) = train {
            let kept = samples.clone();
            match self
                .worker()
                .map(|w| w.send(Request::Train { resource, samples }))
            {
                Some(true) => {
                    self.trainings += 1;
                    *self.codec_mut(resource) = Codec::Training {
                        parked,
                        samples: kept,
                    };
                }
                _ => self.disable(),
            }
        }
    }

    /// Offers the raw value of version `job` of a key of `resource` (whose plan is
    /// [`Plan::Pack`]); hands the batch to the worker when it is full.
    pub(crate) fn add(&mut self, resource: u32, job: Job, value: &Bytes) {
        let codec = match self.codecs.get(resource as usize) {
            Some(Codec::Dict(d)) => Some(d),
            Some(Codec::Plain) if value.len() >= PLAIN_MIN_LEN => None,
            _ => return,
        };
        let b = &mut self.open;
        let i = match b.codecs.iter().position(|(r, _)| *r == resource) {
            Some(i) => i,
            None => {
                b.codecs.push((resource, codec.cloned()));
                b.codecs.len() - 1
            }
        };
        b.bytes += value.len();
        b.items.push((job, i as u16, value.clone()));
        if b.bytes >= BATCH_BYTES || b.codecs.len() == usize::from(u16::MAX) {
            self.hand_over();
        }
    }

    /// Hands the open batch to the worker.
    pub(crate) fn flush(&mut self) {
        self.hand_over();
    }

    fn hand_over(&mut self) {
        if self.open.items.is_empty() {
            return;
        }
        let b = std::mem::take(&mut self.open);
        self.in_flight += b.bytes;
        match self.worker() {
            Some(w) if w.send(Request::Pack(b)) => {}
            _ => self.disable(),
        }
    }

    fn worker(&mut self) -> Option<&Worker> {
        if self.worker.is_none() && !self.off {
            self.worker = Worker::start();
        }
        self.worker.as_ref()
    }

    /// Versions offered and not packed yet, and dictionaries being trained: 0 when
    /// packing has caught up with what the sweeps found.
    pub(crate) fn outstanding(&self) -> usize {
        self.open.items.len() + usize::from(self.in_flight > 0) + self.trainings
    }

    /// `value` of `resource` (whose plan is [`Plan::Pack`]) packed on the calling thread,
    /// when that makes it smaller: what the worker would answer for it. For when the
    /// worker cannot keep up (see `VersionStore::assist`).
    pub(crate) fn pack_here(&mut self, resource: u32, value: &[u8]) -> Option<(Form, Bytes)> {
        let dict = match self.codecs.get(resource as usize) {
            Some(Codec::Dict(d)) => Some(d),
            Some(Codec::Plain) if value.len() >= PLAIN_MIN_LEN => None,
            _ => return None,
        };
        self.here.get_or_insert_with(Packer::new).pack(dict, value)
    }

    /// Hands over the open batch, then takes the worker's answers: `swap(job, form,
    /// raw_len, packed)` for each packed value (the caller checks that the version is
    /// still held raw). Returns the slots parked for resources whose dictionary was
    /// trained (or found impossible) since: the caller looks at them again.
    pub(crate) fn poll(&mut self, mut swap: impl FnMut(Job, Form, u32, Bytes)) -> Vec<u32> {
        self.hand_over();
        let mut trained = Vec::new();
        if let Some(w) = self.worker.as_ref() {
            while let Ok(reply) = w.rx.try_recv() {
                match reply {
                    Reply::Packed { done, raw_bytes } => {
                        self.in_flight = self.in_flight.saturating_sub(raw_bytes);
                        for (job, form, raw_len, packed) in done {
                            swap(job, form, raw_len, packed);
                        }
                    }
                    Reply::Trained { resource, dict } => trained.push((resource, dict)),
                }
            }
        }
        let mut again = Vec::new();
        for (resource, dict) in trained {
            again.extend(self.trained(resource, dict));
        }
        again
    }

    /// A dictionary for `resource` (or `None`: none could be trained), when it is still
    /// waiting for one (else the answer came too late and is dropped). Returns the slots
    /// parked for it.
    fn trained(&mut self, resource: u32, dict: Option<Vec<u8>>) -> Vec<u32> {
        if !matches!(
            self.codecs.get(resource as usize),
            Some(Codec::Training { .. })
        ) {
            return Vec::new();
        }
        self.trainings = self.trainings.saturating_sub(1);
        if let Some(b) = self.parked_bytes.get_mut(resource as usize) {
            *b = 0;
        }
        let next = match dict {
            Some(d) => Codec::Dict(Arc::new(Dict::new(Bytes::from(d)))),
            None => Codec::Plain,
        };
        match std::mem::replace(self.codec_mut(resource), next) {
            Codec::Training { parked, .. } => parked,
            _ => Vec::new(),
        }
    }

    /// Raw bytes of the slots parked while their resource's dictionary is being trained
    /// (those parked while samples are gathered wait for values still to come, which
    /// packing here cannot hurry).
    pub(crate) fn parked_bytes(&self) -> u64 {
        self.parked_bytes
            .iter()
            .zip(&self.codecs)
            .filter(|(_, c)| matches!(c, Codec::Training { .. }))
            .map(|(b, _)| b)
            .sum()
    }

    /// A resource whose dictionary the worker is training, if any.
    pub(crate) fn training(&self) -> Option<u32> {
        self.codecs
            .iter()
            .position(|c| matches!(c, Codec::Training { .. }))
            .map(|i| i as u32)
    }

    /// Trains `resource`'s dictionary on the calling thread when it is waiting for the
    /// worker's (see `VersionStore::assist`); the worker's answer is dropped when it
    /// comes. Returns the slots parked for it.
    pub(crate) fn train_here(&mut self, resource: u32) -> Vec<u32> {
        let Some(Codec::Training { samples, .. }) = self.codecs.get(resource as usize) else {
            return Vec::new();
        };
        let dict = zstd::dict::from_samples(samples, DICT_BYTES).ok();
        self.trained(resource, dict)
    }
}

/// A request to the worker.
enum Request {
    Train {
        resource: u32,
        samples: Vec<Bytes>,
    },
    /// Values to pack.
    Pack(Batch),
}

/// The worker's answers.
enum Reply {
    Trained {
        resource: u32,
        dict: Option<Vec<u8>>,
    },
    Packed {
        done: Vec<(Job, Form, u32, Bytes)>,
        raw_bytes: usize,
    },
}

/// The packing thread and its two channels.
struct Worker {
    tx: mpsc::Sender<Request>,
    rx: mpsc::Receiver<Reply>,
}

impl Worker {
    fn start() -> Option<Worker> {
        let (tx, req_rx) = mpsc::channel();
        let (reply_tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("regscope-pack".into())
            .spawn(move || work(req_rx, reply_tx))
            .ok()?;
        Some(Worker { tx, rx })
    }

    fn send(&self, r: Request) -> bool {
        self.tx.send(r).is_ok()
    }
}

/// The worker's loop: answers requests until the replica (the sender) is gone.
fn work(rx: mpsc::Receiver<Request>, tx: mpsc::Sender<Reply>) {
    lower_priority();
    let mut packer = Packer::new();
    for req in rx {
        let reply = match req {
            Request::Train { resource, samples } => Reply::Trained {
                resource,
                dict: zstd::dict::from_samples(&samples, DICT_BYTES).ok(),
            },
            Request::Pack(batch) => {
                let done = batch
                    .items
                    .into_iter()
                    .filter_map(|(job, codec, value)| {
                        let dict = batch.codecs.get(usize::from(codec))?.1.as_ref();
                        let (form, packed) = packer.pack(dict, &value)?;
                        Some((job, form, value.len() as u32, packed))
                    })
                    .collect();
                Reply::Packed {
                    done,
                    raw_bytes: batch.bytes,
                }
            }
        };
        if tx.send(reply).is_err() {
            return;
        }
    }
}

/// Runs the calling thread under `SCHED_IDLE` (Linux): it gets a core only when nothing
/// else wants it, so packing never takes CPU from etcd, the apiserver or regscope's own
/// apply. At nice 10 it still took a quarter of a core from a replay's reader on two cores
/// and slowed the replay by half (`cargo bench --bench record -- events`). Under a CPU that
/// stays saturated, values wait raw up to a bound, beyond which the replica's thread packs
/// them (`versions::ASSIST_ABOVE`). Best effort: where the policy cannot be set, nice 19.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on the calling thread (pid 0: the caller; Linux sets the
    // policy and nice value per thread).
    unsafe {
        let p = libc::sched_param { sched_priority: 0 };
        if libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) != 0 {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, 19);
        }
    }
}

/// Compression contexts of the worker and the prepared dictionaries it has used.
struct Packer {
    with_dict: zstd_safe::CCtx<'static>,
    plain: zstd_safe::CCtx<'static>,
    /// Prepared dictionaries by the `Arc` they came in (kept alive here, so a pointer
    /// is never reused for another dictionary while cached).
    cdicts: Vec<(Arc<Dict>, zstd_safe::CDict<'static>)>,
    scratch: Vec<u8>,
}

impl Packer {
    fn new() -> Packer {
        let ctx = |level: i32| {
            let mut c = zstd_safe::CCtx::create();
            // Frames carry their content size (a check on decompression) and neither a
            // checksum nor the dictionary id: the replica knows which dictionary.
            for p in [
                zstd_safe::CParameter::CompressionLevel(level),
                zstd_safe::CParameter::ContentSizeFlag(true),
                zstd_safe::CParameter::ChecksumFlag(false),
                zstd_safe::CParameter::DictIdFlag(false),
            ] {
                let _ = c.set_parameter(p);
            }
            c
        };
        Packer {
            with_dict: ctx(LEVEL),
            plain: ctx(LEVEL),
            cdicts: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// `value` packed with `dict` (or without), when that makes it smaller.
    fn pack(&mut self, dict: Option<&Arc<Dict>>, value: &[u8]) -> Option<(Form, Bytes)> {
        self.scratch.clear();
        self.scratch
            .reserve(zstd_safe::compress_bound(value.len()).max(64));
        let (form, r) = match dict {
            Some(d) => {
                let i = match self.cdicts.iter().position(|(a, _)| Arc::ptr_eq(a, d)) {
                    Some(i) => i,
                    None => {
                        let cdict = zstd_safe::CDict::create(d.bytes(), LEVEL);
                        self.cdicts.push((d.clone(), cdict));
                        self.cdicts.len() - 1
                    }
                };
                let ctx = &mut self.with_dict;
                let r = ctx
                    .ref_cdict(&self.cdicts[i].1)
                    .and_then(|_| ctx.compress2(&mut self.scratch, value));
                (Form::Dict, r)
            }
            None => (Form::Plain, self.plain.compress2(&mut self.scratch, value)),
        };
        match r {
            // Worth it only when it saves at least an eighth.
            Ok(n) if n + n / 8 < value.len() => {
                Some((form, Bytes::copy_from_slice(&self.scratch[..n])))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_value(i: usize) -> Bytes {
        Bytes::from(format!(
            "k8s\0{{\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"cm-{i:05}\",\"namespace\":\"ns-{:02}\",\"uid\":\"{:032x}\"}},\"data\":{{\"key\":\"value {}\"}}}}",
            i % 17,
            (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            i * 7
        ))
    }

    #[test]
    fn values_pack_and_come_back_byte_for_byte() {
        let samples: Vec<Bytes> = (0..500).map(sample_value).collect();
        let raw = zstd::dict::from_samples(&samples, DICT_BYTES).expect("train");
        let dict = Arc::new(Dict::new(Bytes::from(raw)));
        let mut p = Packer::new();
        for i in [0, 499, 5000] {
            let v = sample_value(i);
            let (form, packed) = p.pack(Some(&dict), &v).expect("packs");
            assert_eq!(form, Form::Dict);
            assert!(
                packed.len() * 2 < v.len(),
                "{} of {}",
                packed.len(),
                v.len()
            );
            let val = Val::from_parts(form, v.len() as u32, packed).unwrap();
            assert_eq!(unpack(&val, Some(&dict)), Some(v.clone()));
            // Without its dictionary it does not decode to anything.
            assert_eq!(unpack(&val, None), None);
        }
        let big = Bytes::from("line of text\n".repeat(200));
        let (form, packed) = p.pack(None, &big).expect("packs plain");
        assert_eq!(form, Form::Plain);
        let val = Val::from_parts(form, big.len() as u32, packed).unwrap();
        assert_eq!(unpack(&val, None), Some(big));
    }

    #[test]
    fn incompressible_encrypted_and_tiny_values_stay_raw() {
        let mut p = Packer::new();
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let noise: Vec<u8> = (0..4096).map(|_| rng.random::<u8>()).collect();
        assert!(p.pack(None, &noise).is_none());
        assert!(!packable(b"k8s:enc:aescbc:v1:key1:0123456789012345678901234567890123456789012345678901234567890123"));
        assert!(!packable(b"short"));
        assert!(packable(&[b'x'; 64]));
    }

    #[test]
    fn a_codebook_trains_then_packs_through_its_worker() {
        let mut c = Codebook::default();
        let values: Vec<Bytes> = (0..TRAIN_SAMPLES + 200).map(sample_value).collect();
        // As a sweep does: samples and parked slots until the dictionary exists.
        for (i, v) in values.iter().enumerate() {
            assert_eq!(c.plan(0), Plan::Sample);
            c.sample(0, v);
            c.park(0, i as u32, v.len() as u64);
            if c.plan(0) != Plan::Sample {
                break;
            }
        }
        assert_eq!(c.plan(0), Plan::Park, "training started");
        let mut packed = vec![None; values.len()];
        let mut offered = false;
        // Bounded wait: the worker trains (tens of ms) then packs.
        for _ in 0..2_000 {
            let again = c.poll(|job, form, raw_len, data| {
                packed[job.slot as usize] = Val::from_parts(form, raw_len, data);
            });
            if !again.is_empty() || (!offered && c.plan(0) == Plan::Pack) {
                offered = true;
                for (i, v) in values.iter().enumerate() {
                    let job = Job {
                        slot: i as u32,
                        gen: 0,
                        mod_revision: i as i64,
                    };
                    c.add(0, job, v);
                }
            }
            if offered && c.outstanding() == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(c.outstanding(), 0);
        let dict = c.dict(0).expect("trained");
        let n = packed.iter().filter(|p| p.is_some()).count();
        assert_eq!(n, values.len(), "every value packed");
        for (v, p) in values.iter().zip(&packed) {
            assert_eq!(unpack(p.as_ref().unwrap(), Some(dict)).as_ref(), Some(v));
        }
    }
}
