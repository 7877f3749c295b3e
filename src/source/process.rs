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
        // The measure is the whole process's, and other tests run on other threads and
        // free memory meanwhile: one of a few tries must see the growth.
        let mut seen = Vec::new();
        for _ in 0..5 {
            let before = super::resident_bytes().expect("statm on Linux");
            let touched = vec![1u8; 64 << 20];
            let after = super::resident_bytes().unwrap();
            drop(touched);
            if after >= before + (48 << 20) {
                return;
            }
            seen.push(format!("{before} -> {after}"));
        }
        panic!("64 MiB touched never showed: {seen:?}");
    }
}
