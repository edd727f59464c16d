//! A real `digipology serve` on a loopback port, and a small HTTP client
//! that keeps every byte it received (for the canary scans).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

/// A server process; killed when dropped.
pub struct Server {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Its data folder.
    pub data: PathBuf,
    /// Its stderr log.
    pub log: PathBuf,
}

impl Server {
    /// Starts `digipology serve GAMES… --addr 127.0.0.1:0 --data DATA
    /// EXTRA…` and waits for the line naming its address.
    pub fn start(games: &[PathBuf], data: &Path, extra: &[&str]) -> Server {
        Server::start_on(games, data, "127.0.0.1:0", extra)
    }

    /// [`Server::start`] listening on `addr` (a port of its own, to be
    /// started again on the same one).
    pub fn start_on(games: &[PathBuf], data: &Path, addr: &str, extra: &[&str]) -> Server {
        Server::start_with(crate::common::bin(), games, data, addr, extra)
    }

    /// [`Server::start`] under an address-space limit of `bytes` (through
    /// util-linux's `prlimit --as`): an allocation past it fails, and a
    /// server that did not bound what it holds would abort.
    pub fn start_limited(games: &[PathBuf], data: &Path, extra: &[&str], bytes: u64) -> Server {
        let mut cmd = std::process::Command::new("prlimit");
        cmd.arg(format!("--as={bytes}"))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_digipology"));
        Server::start_with(cmd, games, data, "127.0.0.1:0", extra)
    }

    fn start_with(
        mut cmd: std::process::Command,
        games: &[PathBuf],
        data: &Path,
        addr: &str,
        extra: &[&str],
    ) -> Server {
        let log = data.with_extension(format!("{}.log", std::process::id()));
        cmd.arg("serve");
        for g in games {
            cmd.arg(g);
        }
        cmd.current_dir(crate::common::root())
            .args(["--addr", addr, "--data"])
            .arg(data)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("server log"));
        let mut child = cmd.spawn().expect("server starts");
        let out = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(out)
            .read_line(&mut line)
            .expect("the server's first line");
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| {
                panic!(
                    "no address in {line:?}: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            })
            .to_owned();
        Server {
            child,
            addr,
            data: data.to_path_buf(),
            log,
        }
    }

    /// Whether the process is still running (it did not abort or exit).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// `kill -9`: the process ends at once, whatever it was doing.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `kill -TERM` (what a service manager sends): the server stops as
    /// at Ctrl-C (docs/server.md, Stopping), and this waits until it has.
    pub fn terminate(&mut self) {
        self.signal("TERM");
        let _ = self.child.wait();
    }

    /// Sends `kill -NAME` (`TERM`, `INT`) to the server.
    pub fn signal(&self, name: &str) {
        let sent = std::process::Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill -{name} failed");
    }

    /// Waits for the process to end by itself and answers how it ended;
    /// `None` when it still runs after two minutes (a bound that only
    /// keeps a server that never stops from hanging the suite: nothing
    /// measures how long it took).
    pub fn wait_exit(&mut self) -> Option<std::process::ExitStatus> {
        for _ in 0..2400 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// The server's stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON (panics with the body when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}), status {}: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// Sends one HTTP/1.0 request (the server then closes the connection
/// after the answer) and reads the whole answer. `None` when the
/// connection failed (a killed server).
pub fn try_request(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
) -> Option<Reply> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let mut head = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\n");
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    let body = body.unwrap_or_default();
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).ok()?;
    // A server refusing a big body may answer and close before it is all
    // sent: the answer is read all the same.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse(&raw)
}

fn parse(raw: &[u8]) -> Option<Reply> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some(Reply {
        status,
        head,
        body: raw[split + 4..].to_vec(),
    })
}

/// [`try_request`] that must get an answer.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
) -> Reply {
    try_request(addr, method, path, token, body)
        .unwrap_or_else(|| panic!("{method} {path}: no answer from {addr}"))
}

/// `GET path`, answered 200 with JSON.
pub fn get_json(addr: &str, path: &str) -> Value {
    let r = request(addr, "GET", path, None, None);
    assert_eq!(
        r.status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&r.body)
    );
    r.json()
}

/// A seat (or a spectator, without a token) that keeps every byte the
/// server sent it.
#[derive(Clone)]
pub struct Client {
    pub addr: String,
    pub match_id: String,
    pub seat: String,
    pub token: Option<String>,
    /// Everything received, in order.
    pub seen: Vec<u8>,
    next_id: u64,
}

impl Client {
    /// Enqueues for `game` under `name`.
    pub fn enqueue(addr: &str, game: &str, name: &str) -> Client {
        Client::enqueue_with(addr, game, &json!({"name": name}))
    }

    /// Joins the game's queue with the request `body` (`{name?, bots?}`).
    pub fn enqueue_with(addr: &str, game: &str, body: &Value) -> Client {
        let r = request(
            addr,
            "POST",
            &format!("/games/{game}/enqueue"),
            None,
            Some(body.to_string().as_bytes()),
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        Client::from_join(addr, &r)
    }

    /// Joins a match by its id.
    pub fn join(addr: &str, match_id: &str, name: &str) -> Client {
        let r = request(
            addr,
            "POST",
            &format!("/matches/{match_id}/join"),
            None,
            Some(json!({"name": name}).to_string().as_bytes()),
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        Client::from_join(addr, &r)
    }

    fn from_join(addr: &str, r: &Reply) -> Client {
        let v = r.json();
        Client {
            addr: addr.to_owned(),
            match_id: v["matchId"].as_str().expect("matchId").to_owned(),
            seat: v["seat"].as_str().expect("seat").to_owned(),
            token: Some(v["token"].as_str().expect("token").to_owned()),
            seen: r.body.clone(),
            next_id: 0,
        }
    }

    /// A spectator of a match.
    pub fn spectator(addr: &str, match_id: &str) -> Client {
        Client {
            addr: addr.to_owned(),
            match_id: match_id.to_owned(),
            seat: String::new(),
            token: None,
            seen: Vec::new(),
            next_id: 0,
        }
    }

    /// Sends a request as this client, keeping the answer's bytes.
    pub fn call(&mut self, method: &str, path: &str, body: Option<&[u8]>) -> Reply {
        let r = request(&self.addr, method, path, self.token.as_deref(), body);
        self.seen.extend_from_slice(r.head.as_bytes());
        self.seen.extend_from_slice(&r.body);
        r
    }

    /// The seat's observation (the spectators' without a token), after
    /// sequence `after` when given.
    pub fn observe(&mut self, after: Option<u64>) -> Value {
        let what = if self.token.is_some() {
            "observation"
        } else {
            "spectate"
        };
        let q = after
            .map(|a| format!("?after={a}&wait_ms=5000"))
            .unwrap_or_default();
        let path = format!("/matches/{}/{what}{q}", self.match_id);
        let r = self.call("GET", &path, None);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()
    }

    /// Submits an action with a fresh clientActionId; the answer's JSON.
    pub fn act(&mut self, action: &Value) -> Value {
        self.next_id += 1;
        let id = format!("{}-{}", self.seat, self.next_id);
        self.act_as(&id, action)
    }

    /// Submits an action under a given clientActionId.
    pub fn act_as(&mut self, client_id: &str, action: &Value) -> Value {
        let body = json!({"clientActionId": client_id, "action": action}).to_string();
        let path = format!("/matches/{}/actions", self.match_id);
        let r = self.call("POST", &path, Some(body.as_bytes()));
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()
    }

    /// The event stream's messages from after `last_id` until `until`
    /// says stop or the stream ends (a match that is over ends it), each as
    /// (id, event, data); the bytes are kept.
    pub fn stream(
        &mut self,
        last_id: Option<u64>,
        mut until: impl FnMut(&SseMessage) -> bool,
    ) -> Vec<SseMessage> {
        let path = if self.token.is_some() {
            format!("/matches/{}/events", self.match_id)
        } else {
            format!("/matches/{}/spectate/events", self.match_id)
        };
        let mut s = TcpStream::connect(&self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let mut head = format!("GET {path} HTTP/1.0\r\nHost: {}\r\n", self.addr);
        if let Some(t) = &self.token {
            head.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        if let Some(id) = last_id {
            head.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes()).expect("send");
        let mut raw = Vec::new();
        let mut messages = Vec::new();
        let mut buf = [0u8; 8192];
        let mut done = 0;
        loop {
            let n = match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            raw.extend_from_slice(&buf[..n]);
            let Some(start) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let body = &raw[start + 4..];
            let text = String::from_utf8_lossy(body);
            let complete: Vec<&str> = text.split("\n\n").collect();
            let mut stop = false;
            // The last piece may be a message still arriving.
            for m in &complete[..complete.len() - 1][done..] {
                done += 1;
                if let Some(msg) = SseMessage::parse(m) {
                    stop = until(&msg);
                    messages.push(msg);
                    if stop {
                        break;
                    }
                }
            }
            if stop {
                break;
            }
        }
        self.seen.extend_from_slice(&raw);
        messages
    }
}

/// One server-sent event.
#[derive(Clone, Debug)]
pub struct SseMessage {
    pub id: Option<u64>,
    pub event: String,
    pub data: String,
}

impl SseMessage {
    fn parse(text: &str) -> Option<SseMessage> {
        let mut m = SseMessage {
            id: None,
            event: "message".into(),
            data: String::new(),
        };
        let mut any = false;
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                m.id = v.trim().parse().ok();
                any = true;
            } else if let Some(v) = line.strip_prefix("event:") {
                m.event = v.trim().to_owned();
                any = true;
            } else if let Some(v) = line.strip_prefix("data:") {
                if !m.data.is_empty() {
                    m.data.push('\n');
                }
                m.data.push_str(v.strip_prefix(' ').unwrap_or(v));
                any = true;
            }
        }
        any.then_some(m)
    }

    /// The events it carries (an `events` message's data is JSON lines).
    pub fn events(&self) -> Vec<Value> {
        if self.event != "events" {
            return Vec::new();
        }
        self.data
            .lines()
            .map(|l| serde_json::from_str(l).expect("event JSON"))
            .collect()
    }
}

/// Writes a two-seat game (`a`, `b`) with no clocks under `dir/id`: its
/// `entities`, and `script` as its one global script; answers its folder.
pub fn two_seat_game(dir: &Path, id: &str, entities: Vec<Value>, script: &str) -> PathBuf {
    let game = dir.join(id);
    std::fs::create_dir_all(game.join("scripts")).expect("dirs");
    let manifest = json!({
        "id": id, "name": id, "version": "1.0.0", "kernelVersion": 1,
        "seats": ["a", "b"], "entities": entities,
        "scripts": [{"id": "main", "file": "scripts/main.lua", "bindings": [{"id": "global"}]}],
        "match": {"timing": {"playerTotalMs": null, "decisionLimitMs": null}}
    });
    std::fs::write(game.join("game.json"), manifest.to_string()).expect("game.json");
    std::fs::write(game.join("scripts/main.lua"), script).expect("main.lua");
    game
}

/// Runs the binary with `args`, which must end by itself within 30 s (a
/// server that started instead is killed, and the test fails).
pub fn run_briefly(args: &[&str]) -> std::process::Output {
    let mut child = crate::common::bin()
        .args(args)
        .current_dir(crate::common::root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary starts");
    for _ in 0..600 {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    panic!(
        "{args:?} did not stop by itself: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
