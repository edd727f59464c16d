//! Many storage writes in one handler cost what they change: the
//! transaction keeps one rollback copy of a script's storage, not one per
//! write (5,000 writes used to peak at 1.6 GB, outside the VM's limit).
//! Its own test binary, so the peak resident size is this test's alone.

mod common;

use common::*;
use serde_json::json;

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

#[test]
fn twenty_thousand_storage_writes_stay_within_a_memory_bound() {
    let (mut k, mut host) = global(
        "function on_button_pressed(e)\n  for i = 1, 20000 do storage['k' .. i] = i end\nend\n",
    );
    start(&mut k, &mut host);
    let before = peak_rss_kib();
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    let grew = peak_rss_kib().saturating_sub(before);
    // 20,000 small entries are a few MiB; a copy per write would be
    // 20,000 × 10,000 entries on average — tens of GiB.
    assert!(grew < 64 * 1024, "peak resident size grew by {grew} KiB");
    assert_eq!(storage(&k, "main")["k20000"], json!(20000));
    // And the rollback copy is still exact: a failing action after it
    // leaves storage as it was.
    let (mut k2, mut host2) = global(
        "function on_button_pressed(e)\n  for i = 1, 1000 do storage['k' .. i] = -i end\n  error('no')\nend\nfunction on_start(e) storage.k1 = 1 end\n",
    );
    start(&mut k2, &mut host2);
    let out = k2.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host2,
    );
    assert!(!out.accepted());
    assert_eq!(storage(&k2, "main"), json!({"k1": 1}));
}
