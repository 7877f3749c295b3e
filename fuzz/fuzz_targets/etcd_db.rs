//! Arbitrary bytes as etcd's backend file: the bbolt walk, then etcd's schema over it (see
//! `regscope_fuzz::etcd_db`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    regscope_fuzz::etcd_db(data);
});
