//! The room service under load (docs/performance.md, The server): many
//! concurrent rooms with two clients each, every action through the whole
//! HTTP path and acknowledged only once durable in the room log.
//!
//! A bench binary, not a criterion bench: it starts `digipology serve` on
//! a loopback port with a fresh log, plays for a bounded time and count,
//! prints actions/s and latency percentiles, and stops the server.
//!
//! Phase 1: every client sends its next action as soon as the last one is
//! acknowledged (the most the server takes). Phase 2: the same clients
//! paced to half that rate, latency measured from when each action was
//! due (so a slow answer cannot hide the ones queued behind it).
//!
//! `cargo bench --bench server_load` (env: `LOAD_ROOMS`, default 64;
//! `LOAD_SECS` per phase, default 5).
// Figures for a report: counts and microseconds far below 2^52, read as
// doubles; a percentile's index is a rounded fraction of the last index.
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "../tests/common/tally.rs"]
mod tally;
use tally::tally_game;

/// Most actions one client sends in a phase (a bound besides the time).
const PER_CLIENT_MAX: usize = 1_000_000;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One keep-alive HTTP/1.1 connection.
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    fn open(addr: &str) -> Conn {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).expect("nodelay");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        Conn {
            reader: BufReader::new(s.try_clone().expect("clone")),
            writer: s,
        }
    }

    /// Sends a request and reads the answer: (status, body).
    fn call(&mut self, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        );
        if let Some(t) = token {
            req.push_str("Authorization: Bearer ");
            req.push_str(t);
            req.push_str("\r\n");
        }
        req.push_str("\r\n");
        req.push_str(body);
        self.writer.write_all(req.as_bytes()).expect("send");
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status");
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut len = 0;
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("header");
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body).expect("body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }
}

struct Seat {
    match_id: String,
    seat: String,
    token: String,
}

/// What one client measured: latencies (µs) of acknowledged actions.
type Latencies = Vec<u64>;

/// Plays one seat for `secs`: as fast as acknowledged, or one action
/// every `gap` when paced.
fn client(
    addr: &str,
    seat: &Seat,
    secs: u64,
    gap: Option<Duration>,
    stop: &AtomicBool,
) -> Latencies {
    let mut conn = Conn::open(addr);
    let path = format!("/matches/{}/actions", seat.match_id);
    let mut lat = Vec::new();
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let mut due = start;
    for i in 0..PER_CLIENT_MAX {
        if let Some(g) = gap {
            due += g;
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        } else {
            due = Instant::now();
        }
        if Instant::now() >= end || stop.load(Ordering::Relaxed) {
            break;
        }
        let body = format!(
            r#"{{"clientActionId":"{}-{i}","action":{{"type":"counter.add","payload":{{"entityId":"score_{}","amount":1}}}}}}"#,
            seat.seat, seat.seat
        );
        let (status, answer) = conn.call("POST", &path, Some(&seat.token), &body);
        assert_eq!(status, 200, "{answer}");
        let took = due.elapsed();
        lat.push(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
    }
    lat
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let last = sorted.len() - 1;
    let at = ((last as f64) * p).round() as usize;
    sorted[at.min(last)] as f64 / 1000.0
}

fn phase(addr: &str, seats: &[Seat], secs: u64, rate: Option<f64>) -> (f64, f64, f64, usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let gap = rate.map(|r| Duration::from_secs_f64(seats.len() as f64 / r));
    let started = Instant::now();
    let all: Vec<Latencies> = std::thread::scope(|s| {
        let handles: Vec<_> = seats
            .iter()
            .map(|seat| {
                let stop = stop.clone();
                s.spawn(move || client(addr, seat, secs, gap, &stop))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client"))
            .collect()
    });
    let took = started.elapsed().as_secs_f64();
    let mut lat: Vec<u64> = all.into_iter().flatten().collect();
    lat.sort_unstable();
    let n = lat.len();
    (
        n as f64 / took,
        percentile(&lat, 0.50),
        percentile(&lat, 0.99),
        n,
    )
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
    let mut server = Command::new(env!("CARGO_BIN_EXE_digipology"))
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
    let mut line = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("address");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("address")
        .to_owned();
    let mut lobby = Conn::open(&addr);
    let mut seats = Vec::new();
    for i in 0..rooms * 2 {
        let (status, body) = lobby.call(
            "POST",
            "/games/tally/enqueue",
            None,
            &json!({"name": format!("c{i}")}).to_string(),
        );
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).expect("json");
        seats.push(Seat {
            match_id: v["matchId"].as_str().expect("id").to_owned(),
            seat: v["seat"].as_str().expect("seat").to_owned(),
            token: v["token"].as_str().expect("token").to_owned(),
        });
    }
    let (rate, p50, p99, n) = phase(&addr, &seats, secs, None);
    println!(
        "server_load: {rooms} rooms, {} clients, as fast as acknowledged: {n} actions in {secs} s = {rate:.0} acknowledged actions/s, p50 {p50:.2} ms, p99 {p99:.2} ms",
        seats.len()
    );
    let half = rate / 2.0;
    let (rate2, p50b, p99b, n2) = phase(&addr, &seats, secs, Some(half));
    println!(
        "server_load: paced at {half:.0}/s (half): {n2} actions = {rate2:.0}/s, p50 {p50b:.2} ms, p99 {p99b:.2} ms"
    );
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
