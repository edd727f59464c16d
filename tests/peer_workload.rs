//! The peer workload (docs/performance.md): both variants
//! reproduce the published `seq_checksum` and `neutral_digest` at N = 1,000
//! and 20,000 for every workload, and memory stays flat.

#[path = "../benches/peer/driver.rs"]
mod driver;

use driver::{moves, neutral_digest, room, seq_checksum, Move, Variant, Workload};

/// (workload, N, seq_checksum, neutral_digest) from the workload file.
const EXPECTED: &[(Workload, usize, u32, u32)] = &[
    (Workload::CounterAdd, 1000, 0x65f13fb7, 0xaef6cea4),
    (Workload::CounterAdd, 20000, 0x94bcf7d3, 0x6125a4f1),
    (Workload::Flip, 1000, 0x9e78e3da, 0xbf845ceb),
    (Workload::Flip, 20000, 0x0e477190, 0x40bedb87),
    (Workload::Mixed, 1000, 0x1e3fe3b7, 0x01158b25),
    (Workload::Mixed, 20000, 0xd7a63193, 0x92605ee1),
    (Workload::Reject50, 1000, 0x9c4ba29a, 0x05114957),
    (Workload::Reject50, 20000, 0x8b3103b7, 0x83be1b93),
    (Workload::Shuffle, 1000, 0x5b0e99c5, 0xddd4be8b),
    (Workload::Roll, 1000, 0xa406b8eb, 0xddd4be8b),
    (Workload::Draw, 1000, 0xeb734506, 0x85b5d29d),
];

#[test]
fn the_driver_matches_the_published_first_moves() {
    let m = moves(Workload::Mixed, 6);
    assert_eq!(
        m,
        vec![
            Move::Shuffle,
            Move::Flip(72),
            Move::CounterAdd(87, -4),
            Move::CounterAdd(87, 1),
            Move::Flip(147),
            Move::CounterAdd(20, -1)
        ]
    );
}

fn check(variant: Variant) {
    for &(w, n, seq, neutral) in EXPECTED {
        let stream = moves(w, n);
        assert_eq!(
            seq_checksum(&stream),
            seq,
            "{} N={n}: seq_checksum",
            w.name()
        );
        let (mut k, mut host) = room(variant, 1);
        let mut rejected = 0;
        for m in &stream {
            if !k.process(&driver::action(*m), host.as_mut()).accepted() {
                rejected += 1;
            }
        }
        let expected_rejections = if w == Workload::Reject50 { n / 2 } else { 0 };
        assert_eq!(
            rejected,
            expected_rejections,
            "{} N={n} ({variant:?}): rejections",
            w.name()
        );
        assert_eq!(
            neutral_digest(k.state()),
            neutral,
            "{} N={n} ({variant:?}): neutral_digest",
            w.name()
        );
    }
}

#[test]
fn kernel_only_reproduces_every_digest() {
    check(Variant::KernelOnly);
}

#[test]
fn scripted_reproduces_every_digest() {
    check(Variant::Scripted);
}

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

#[test]
fn memory_stays_flat_from_20k_to_100k_moves() {
    for variant in [Variant::KernelOnly, Variant::Scripted] {
        let stream = moves(Workload::Mixed, 100_000);
        let (mut k, mut host) = room(variant, 1);
        let mut at_20k = 0;
        for (i, m) in stream.iter().enumerate() {
            let _ = k.process(&driver::action(*m), host.as_mut());
            if i + 1 == 20_000 {
                at_20k = resident_bytes();
            }
        }
        let at_100k = resident_bytes();
        // 80,000 more moves (events discarded) may not grow the process by
        // more than a constant: 8 MiB, i.e. ~100 bytes per move at most.
        let growth = at_100k.saturating_sub(at_20k);
        eprintln!("{variant:?}: resident {at_20k} bytes at 20k moves, {at_100k} at 100k");
        assert!(
            growth < 8 * 1024 * 1024,
            "{variant:?}: resident memory grew by {growth} bytes from 20k to 100k moves"
        );
    }
}
