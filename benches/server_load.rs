//! The room service under load (docs/performance.md, The room service):
//! many concurrent rooms with two clients each, every action through the
//! whole HTTP path and acknowledged only once durable in the room log.
//!
//! A bench binary, not a criterion bench: it starts `digipology serve` on
//! a loopback port with a fresh log, plays for a bounded time and count,
//! prints actions/s, latency percentiles and the log's fsyncs a second,
//! and stops the server. The clients are `tests/common/load.rs`.
//!
//! Phase 1: every client sends its next action as soon as the last one is
//! acknowledged (the most the server takes). Phase 2: the same clients
//! paced to half that rate, latency measured from when each action was
//! due (so a slow answer cannot hide the ones queued behind it). Each
//! phase sends fresh `clientActionId`s, and the bench refuses to report a
//! phase the server answered any of from its retry cache: every figure is
//! of durable actions.
//!
//! `cargo bench --bench server_load` (env: `LOAD_ROOMS`, default 64;
//! `LOAD_SECS` per phase, default 5).
// Figures for a report: counts far below 2^52, read as doubles.
#![allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[path = "../tests/common/load.rs"]
mod load;
#[path = "../tests/common/tally.rs"]
mod tally;
use load::{Measured, Phase};
use tally::tally_game;

/// Most actions one client sends in a phase (a bound besides the time).
const PER_CLIENT_MAX: usize = 1_000_000;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The phase's line, after checking it measured durable actions only.
fn report(what: &str, m: &Measured) -> String {
    assert_eq!(
        m.replayed, 0,
        "{what}: {} requests were answered from the retry cache, not processed: the figures would not be durable actions",
        m.replayed
    );
    // At least: a match's set-up, logged as the phase began, may count too.
    assert!(
        m.logged as usize >= m.acknowledged,
        "{what}: {} acknowledged but {} logged",
        m.acknowledged,
        m.logged
    );
    format!(
        "{what}: {} actions = {:.0} acknowledged durable actions/s, p50 {:.2} ms, p99 {:.2} ms; {:.0} fsyncs/s ({:.1} actions a commit)",
        m.acknowledged,
        m.rate,
        m.p50,
        m.p99,
        m.commits as f64 / m.secs,
        m.acknowledged as f64 / m.commits.max(1) as f64
    )
}

/// The server, stopped however the bench ends (a failed check included).
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that is not ours skips us.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"server_load".contains(a.as_str()))
    {
        return;
    }
    let rooms = env_num("LOAD_ROOMS", 64);
    let secs = env_num("LOAD_SECS", 5).clamp(1, 60);
    let dir = std::env::temp_dir().join(format!("digipology-load-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let game = tally_game(&dir);
    let server = Command::new(env!("CARGO_BIN_EXE_digipology"))
        .arg("serve")
        .arg(&game)
        .args([
            "--addr",
            "127.0.0.1:0",
            "--rate",
            "1000000",
            "--burst",
            "1000000",
        ])
        .arg("--data")
        .arg(dir.join("data"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("server");
    let mut server = Running(server);
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("address");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("address")
        .to_owned();
    let seats = load::seats(&addr, rooms * 2);
    let full = load::run(
        &addr,
        &seats,
        &Phase {
            number: 1,
            secs: Some(secs),
            per_client_max: PER_CLIENT_MAX,
            rate: None,
        },
    );
    println!(
        "server_load: {rooms} rooms, {} clients, {}",
        seats.len(),
        report("as fast as acknowledged", &full)
    );
    let half = full.rate / 2.0;
    let paced = load::run(
        &addr,
        &seats,
        &Phase {
            number: 2,
            secs: Some(secs),
            per_client_max: PER_CLIENT_MAX,
            rate: Some(half),
        },
    );
    println!(
        "server_load: {}",
        report(&format!("paced at {half:.0}/s (half)"), &paced)
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
