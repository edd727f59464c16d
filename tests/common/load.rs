//! Closed-loop load on a real server (benches/server_load.rs, and the
//! test that the bench's measured phases are fresh actions): seats of
//! `tally` matches, each a client thread on one keep-alive connection
//! sending `counter.add` with a `clientActionId` of its own — fresh in
//! every phase, so no measured request is answered from the retry cache
//! (`Phase::id`); `/metrics` read before and after tells what a phase did.
#![allow(dead_code)]
// Figures for a report: counts and microseconds far below 2^52, read as
// doubles; a percentile's index is a rounded fraction of the last index.
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// One keep-alive HTTP/1.1 connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    pub fn open(addr: &str) -> Conn {
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
    pub fn call(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: &str,
    ) -> (u16, String) {
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

/// A seat the load plays.
pub struct Seat {
    pub match_id: String,
    pub seat: String,
    pub token: String,
}

/// Enqueues `n` seats of `tally` (two to a match).
pub fn seats(addr: &str, n: u64) -> Vec<Seat> {
    let mut lobby = Conn::open(addr);
    (0..n)
        .map(|i| {
            let (status, body) = lobby.call(
                "POST",
                "/games/tally/enqueue",
                None,
                &json!({"name": format!("c{i}")}).to_string(),
            );
            assert_eq!(status, 200, "{body}");
            let v: Value = serde_json::from_str(&body).expect("json");
            Seat {
                match_id: v["matchId"].as_str().expect("id").to_owned(),
                seat: v["seat"].as_str().expect("seat").to_owned(),
                token: v["token"].as_str().expect("token").to_owned(),
            }
        })
        .collect()
}

/// One measured phase: its number (in every `clientActionId` it sends),
/// how long it runs (`None`: until each client has sent `per_client_max`
/// — what a test uses, so its outcome never depends on the clock), at
/// most how many actions each client sends, and the pace (actions a
/// second over all clients; `None`: each client sends as soon as its last
/// action is acknowledged).
pub struct Phase {
    pub number: u32,
    pub secs: Option<u64>,
    pub per_client_max: usize,
    pub rate: Option<f64>,
}

impl Phase {
    /// The `clientActionId` of a seat's `i`-th action in this phase: never
    /// one an earlier phase sent, so the server processes and logs each
    /// (a repeated id is answered from the retry cache, no durable work).
    pub fn id(&self, seat: &str, i: usize) -> String {
        format!("{seat}-p{}-{i}", self.number)
    }
}

/// What a phase measured: acknowledged actions, the rate, latency
/// percentiles (ms), and what the server's metrics say it did meanwhile.
pub struct Measured {
    pub acknowledged: usize,
    pub rate: f64,
    pub p50: f64,
    pub p99: f64,
    /// Inputs the server logged, commits (fsyncs) of its log, and retries
    /// it answered from the cache, during the phase.
    pub logged: u64,
    pub commits: u64,
    pub replayed: u64,
    pub secs: f64,
}

/// One client: plays `seat` through the phase; latencies in µs.
fn client(
    addr: &str,
    seat: &Seat,
    phase: &Phase,
    gap: Option<Duration>,
    stop: &AtomicBool,
) -> Vec<u64> {
    let mut conn = Conn::open(addr);
    let path = format!("/matches/{}/actions", seat.match_id);
    let mut lat = Vec::new();
    let start = Instant::now();
    let end = phase.secs.map(|s| start + Duration::from_secs(s));
    let mut due = start;
    for i in 0..phase.per_client_max {
        if let Some(g) = gap {
            due += g;
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        } else {
            due = Instant::now();
        }
        if end.is_some_and(|e| Instant::now() >= e) || stop.load(Ordering::Relaxed) {
            break;
        }
        let body = format!(
            r#"{{"clientActionId":"{}","action":{{"type":"counter.add","payload":{{"entityId":"score_{}","amount":1}}}}}}"#,
            phase.id(&seat.seat, i),
            seat.seat
        );
        let (status, answer) = conn.call("POST", &path, Some(&seat.token), &body);
        assert_eq!(status, 200, "{answer}");
        lat.push(u64::try_from(due.elapsed().as_micros()).unwrap_or(u64::MAX));
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

/// A counter of the server's `/metrics` (0 before it first counts).
pub fn metric(addr: &str, name: &str) -> u64 {
    let (status, text) = Conn::open(addr).call("GET", "/metrics", None, "");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse::<f64>().ok())?
        })
        .map_or(0, |v| v as u64)
}

/// Runs `phase` with every seat's client at once.
pub fn run(addr: &str, seats: &[Seat], phase: &Phase) -> Measured {
    let stop = Arc::new(AtomicBool::new(false));
    let gap = phase
        .rate
        .map(|r| Duration::from_secs_f64(seats.len() as f64 / r));
    let before = [
        metric(addr, "digipology_inputs_logged_total"),
        metric(addr, "digipology_log_commits_total"),
        metric(addr, "digipology_actions_replayed_total"),
    ];
    let started = Instant::now();
    let all: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = seats
            .iter()
            .map(|seat| {
                let stop = stop.clone();
                s.spawn(move || client(addr, seat, phase, gap, &stop))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client"))
            .collect()
    });
    let secs = started.elapsed().as_secs_f64();
    let mut lat: Vec<u64> = all.into_iter().flatten().collect();
    lat.sort_unstable();
    let after = [
        metric(addr, "digipology_inputs_logged_total"),
        metric(addr, "digipology_log_commits_total"),
        metric(addr, "digipology_actions_replayed_total"),
    ];
    Measured {
        acknowledged: lat.len(),
        rate: lat.len() as f64 / secs,
        p50: percentile(&lat, 0.50),
        p99: percentile(&lat, 0.99),
        logged: after[0] - before[0],
        commits: after[1] - before[1],
        replayed: after[2] - before[2],
        secs,
    }
}
