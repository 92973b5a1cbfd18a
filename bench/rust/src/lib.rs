//! Timing and allocation counting shared by the benchmark binaries. Nothing here asserts a
//! time: the binaries print ns/call and ratios.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// CPU time of the calling thread in ns (CLOCK_THREAD_CPUTIME_ID), the clock Google Benchmark's
/// cpu_time uses: on a shared machine, time the thread spent descheduled is not counted.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: plain out-parameter; clock 3 is CLOCK_THREAD_CPUTIME_ID on Linux.
    unsafe { clock_gettime(3, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Counts every allocation (and reallocation) made through Rust's global allocator.
pub struct CountingAlloc;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Repetitions per case; the median is reported.
pub const REPS: usize = 7;

/// Median CPU ns per call over REPS repetitions of `iters` bodies, each body making
/// `calls_per_body` calls; plus Rust heap allocations per call (over one extra repetition).
pub fn measure(iters: u64, calls_per_body: u64, mut body: impl FnMut()) -> (f64, f64) {
    for _ in 0..(iters / 10).max(1) {
        body();
    }
    let mut samples: Vec<f64> = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let start = thread_cpu_ns();
        for _ in 0..iters {
            body();
        }
        samples.push((thread_cpu_ns() - start) as f64 / (iters * calls_per_body) as f64);
    }
    let before = allocations();
    for _ in 0..iters {
        body();
    }
    let allocs = (allocations() - before) as f64 / (iters * calls_per_body) as f64;
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (samples[REPS / 2], allocs)
}

/// Resident set size of this process in KiB (Linux /proc).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The 16-byte string of the string-echo case (bench/calls/common_inputs.h's kStr16).
pub const STR16: &str = "0123456789abcdef";
/// Callbacks per call_n measurement.
pub const CALL_N: i64 = 1_000_000;
