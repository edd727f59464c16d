//! `digipology simulate` throughput (docs/performance.md, Simulate):
//! tic-tac-toe with random bots, on 1 job and on 2, alternately twice in
//! one run, as matches a second and the 2-job / 1-job ratio.
//!
//! A bench binary, not a criterion bench: each sample is one whole
//! `simulate` process (its report goes to a scratch folder).
//! `cargo bench --bench simulate` (env: `SIM_MATCHES`, default 10000).
// Figures for a report: counts far below 2^52, read as doubles.
#![allow(clippy::cast_precision_loss)]

use std::process::Command;

use std::time::Instant;

fn matches_per_second(matches: u64, jobs: u32) -> f64 {
    let out = std::env::temp_dir().join(format!("digipology-bench-simulate-{jobs}"));
    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_digipology"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["simulate", "examples/tic-tac-toe", "--matches"])
        .arg(matches.to_string())
        .arg("--jobs")
        .arg(jobs.to_string())
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("simulate runs");
    assert!(status.success(), "simulate failed");
    matches as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let matches: u64 = std::env::var("SIM_MATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    for round in 1..=2 {
        let one = matches_per_second(matches, 1);
        let two = matches_per_second(matches, 2);
        println!(
            "simulate tic-tac-toe, random bots, {matches} matches, round {round}: 1 job {one:.0} matches/s, 2 jobs {two:.0} matches/s (x{:.2})",
            two / one
        );
    }
}
