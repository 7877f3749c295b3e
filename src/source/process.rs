//! regscope's own resource use, read from the kernel: what the header shows and what
//! `--memory-limit` is checked against.

/// Resident set size of this process in bytes (`/proc/self/statm`, second field, times the
/// page size; Linux `proc(5)`). `None` where that file cannot be read.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok().filter(|p| *p > 0).unwrap_or(4096))
}

#[cfg(test)]
mod tests {
    #[test]
    fn resident_size_grows_with_touched_memory() {
        // Pages of a fresh anonymous mapping, not the allocator's: it keeps freed memory
        // resident and hands it out again, so a Vec can grow the process by less than its
        // size when other tests ran before.
        // Other tests run on other threads and free memory meanwhile, so one measure can
        // show less than was touched: most of it must show in one of five tries.
        const LEN: usize = 64 << 20;
        let mut seen = Vec::new();
        for _ in 0..5 {
            let before = super::resident_bytes().expect("statm on Linux");
            // SAFETY: a private anonymous mapping of LEN bytes, written only within it and
            // unmapped below.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    LEN,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            // SAFETY: p is LEN writable bytes.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 1, LEN) };
            let after = super::resident_bytes().unwrap();
            // SAFETY: the mapping made above.
            unsafe { libc::munmap(p, LEN) };
            if after >= before + (48 << 20) {
                return;
            }
            seen.push((before, after));
        }
        panic!("resident size before -> after 64 MiB touched, five tries: {seen:?}");
    }
}
