//! Arbitrary bytes as a bbolt file: opened and walked whole (see `regscope_fuzz::bbolt_pages`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    regscope_fuzz::bbolt_pages(data);
});
