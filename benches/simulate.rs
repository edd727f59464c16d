//! `digipology simulate` throughput (docs/performance.md, Simulate):
//! tic-tac-toe with random bots, on 1 job and on 2, alternately twice in
//! one run, as matches a second and the 2-job / 1-job ratio — and beside
//! them the bare floor: tic-tac-toe's script alone in plain Lua (the same
//! Lua build, no sandbox, no budget), making the calls the engine makes
//! into it for the same kind of matches (`benches/simulate_bare/`), with
//! no engine at all. What the engine adds to a match is the ratio of the
//! two.
//!
//! A bench binary, not a criterion bench: each sample is one whole
//! `simulate` process (its report goes to a scratch folder), or one
//! replay of the bare driver's calls. `cargo bench --bench simulate` (env: `SIM_MATCHES`,
//! default 10000).
// Figures for a report: counts far below 2^52, read as doubles.
#![allow(clippy::cast_precision_loss)]

use std::process::Command;

use std::time::Instant;

use mlua::{Function, Lua};

// As in the engine's binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Tic-tac-toe's script in plain Lua: the bare driver plays `matches`
/// matches keeping every call it makes into the script (not timed), then
/// makes those calls again; the second pass, as matches a second.
fn bare_matches_per_second(matches: u64) -> f64 {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |path: &str| std::fs::read_to_string(root.join(path)).expect(path);
    let lua = Lua::new();
    for (name, path) in [
        ("mock", "benches/simulate_bare/mock.lua"),
        ("game", "examples/tic-tac-toe/scripts/main.lua"),
        ("driver", "benches/simulate_bare/driver.lua"),
    ] {
        lua.load(read(path)).set_name(name).exec().expect(path);
    }
    let record: Function = lua.globals().get("record").expect("record");
    let replay: Function = lua.globals().get("replay").expect("replay");
    let (x, o, draws): (u64, u64, u64) = record.call(matches).expect("bare matches");
    assert_eq!(x + o + draws, matches, "every bare match ends");
    let started = Instant::now();
    let calls: u64 = replay.call(()).expect("bare replay");
    let rate = matches as f64 / started.elapsed().as_secs_f64();
    assert!(calls > matches, "the replay made the matches' calls");
    rate
}

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
        let bare = bare_matches_per_second(matches);
        println!(
            "simulate tic-tac-toe, random bots, {matches} matches, round {round}: 1 job {one:.0} matches/s, 2 jobs {two:.0} matches/s (x{:.2}); the script alone in plain Lua {bare:.0} matches/s (x{:.1} the engine's 1 job)",
            two / one,
            bare / one
        );
    }
}
