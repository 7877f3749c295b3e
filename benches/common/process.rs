//! What a benchmark reads of another process: its CPU time and resident memory.

/// The CPU time, in seconds, process `pid` has used (every thread, living and exited): its
/// CPU-time clock (clock_getcpuclockid(3)), nanosecond-grained; `/proc/PID/stat`'s utime +
/// stime (clock ticks) where that clock cannot be read.
pub fn process_cpu(pid: u32) -> f64 {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `clock` is a live local the call writes the clock id into.
    if unsafe { libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) } == 0 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a live local the call writes into.
        if unsafe { libc::clock_gettime(clock, &mut ts) } == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9;
        }
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let f: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|i| f.get(*i)?.parse::<f64>().ok())
        .sum();
    // SAFETY: sysconf has no preconditions.
    ticks / (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

/// Resident memory of process `pid` in MiB (`/proc/PID/statm`, 4 KiB pages).
pub fn rss_mib(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap_or_default();
    let pages: f64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / 1048576.0
}
