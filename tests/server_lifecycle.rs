//! docs/server.md, A folder of games and Stopping: `digipology serve DIR`
//! serves every game of a folder of games (a broken one named on stderr
//! and left out, the others served), and SIGTERM or Ctrl-C stops the
//! server by itself: the requests in flight answered, exit status 0, a
//! line saying it stopped and why, and every acknowledged action in the
//! log when it starts again. The real binary, on a loopback port.

mod common;
#[path = "common/serving.rs"]
mod serving;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{copy_dir, root, scratch};
use serde_json::{json, Value};
use serving::{get_json, request, run_briefly, try_request, Client, Server};

/// A folder of games holding copies of these examples.
fn folder_of(dir: &Path, games: &[&str]) -> PathBuf {
    let folder = dir.join("games");
    for g in games {
        copy_dir(&root().join("examples").join(g), &folder.join(g));
    }
    folder
}

/// The ids of the games the server offers.
fn game_ids(addr: &str) -> Vec<String> {
    get_json(addr, "/games")
        .as_array()
        .expect("a list")
        .iter()
        .map(|g| g["id"].as_str().expect("id").to_owned())
        .collect()
}

/// A match of `game` being played: its seats and what they were answered.
struct Played {
    seats: Vec<Client>,
    /// (seat index, clientActionId, the action, the answer).
    acks: Vec<(usize, String, Value, Value)>,
}

fn start_match(addr: &str, game: &str) -> Played {
    let a = Client::enqueue(addr, game, "ann");
    let b = Client::enqueue(addr, game, "bob");
    assert_eq!(a.match_id, b.match_id, "the second fills the first's match");
    Played {
        seats: vec![a, b],
        acks: Vec::new(),
    }
}

/// `passes` times, every seat acting now plays its first legal action.
fn play(p: &mut Played, tag: &str, passes: usize) {
    for _ in 0..passes {
        for s in 0..p.seats.len() {
            let obs = p.seats[s].observe(None);
            assert_ne!(
                obs["result"]["status"], "match_over",
                "the match ended early"
            );
            if obs["participation"] != "acting" {
                continue;
            }
            let Some(action) = obs["legalActions"].as_array().and_then(|l| l.first()) else {
                continue;
            };
            let id = format!("{tag}-{}", p.acks.len());
            let answer = p.seats[s].act_as(&id, action);
            assert!(answer["seq"].is_u64(), "{answer}");
            p.acks.push((s, id, action.clone(), answer));
        }
    }
}

/// On the server at `addr`: every acknowledged clientActionId is answered
/// as before (it is in the log, and is not processed again).
fn acks_hold(p: &mut Played, addr: &str) {
    for s in &mut p.seats {
        s.addr = addr.to_owned();
    }
    for (s, id, action, answer) in p.acks.clone() {
        let again = p.seats[s].act_as(&id, &action);
        assert_eq!(again, answer, "{id} was acknowledged: the same answer");
    }
}

/// Must show (issue 37): `serve DIR` on a folder of two example games
/// serves both under their ids; a match is played in each; after a stop
/// by SIGTERM the next start recovers both matches, every acknowledged
/// action answered as before, and both go on.
#[test]
fn a_folder_of_games_serves_each_and_both_survive_a_restart() {
    let dir = scratch("serve-folder-restart");
    let games = folder_of(&dir, &["rock-paper-scissors", "tic-tac-toe"]);
    let data = dir.join("d");
    let mut server = Server::start(std::slice::from_ref(&games), &data, &[]);
    assert_eq!(
        game_ids(&server.addr),
        ["rock-paper-scissors", "tic-tac-toe"]
    );
    let mut rps = start_match(&server.addr, "rock-paper-scissors");
    let mut ttt = start_match(&server.addr, "tic-tac-toe");
    play(&mut rps, "rps", 1);
    play(&mut ttt, "ttt", 2);
    assert!(rps.acks.len() >= 2 && ttt.acks.len() >= 2);
    // Tic-tac-toe has no clock: its table after the restart is the one
    // before, move for move.
    let board = ttt.seats[0].observe(None);
    server.terminate();
    let server = Server::start(std::slice::from_ref(&games), &data, &[]);
    assert_eq!(
        game_ids(&server.addr),
        ["rock-paper-scissors", "tic-tac-toe"]
    );
    assert!(
        server.stderr().contains("recovered 2 running matches"),
        "{}",
        server.stderr()
    );
    acks_hold(&mut rps, &server.addr);
    acks_hold(&mut ttt, &server.addr);
    let again = ttt.seats[0].observe(None);
    assert_eq!(again["seq"], board["seq"]);
    assert_eq!(again["view"], board["view"]);
    // Both rooms run: each takes a move.
    let (r, t) = (rps.acks.len(), ttt.acks.len());
    play(&mut rps, "rps-after", 1);
    play(&mut ttt, "ttt-after", 1);
    assert!(rps.acks.len() > r && ttt.acks.len() > t);
}

/// Must show (issue 37): in a folder of games, a game that does not load,
/// a second game with an id served already, and a folder that is no game
/// are each named on stderr with why; the other game is served and plays.
/// A folder whose every game is broken, an empty folder and a broken game
/// named on its own stop the start (exit status 2).
#[test]
fn a_broken_game_in_a_folder_is_named_and_the_others_are_served() {
    let dir = scratch("serve-folder-broken");
    let games = folder_of(&dir, &["tic-tac-toe"]);
    let broken = games.join("broken");
    std::fs::create_dir_all(&broken).expect("mkdir");
    std::fs::write(broken.join("game.json"), "{\"id\": \"broken\",\n").expect("write");
    copy_dir(&games.join("tic-tac-toe"), &games.join("twin"));
    std::fs::create_dir_all(games.join("notes")).expect("mkdir");
    std::fs::create_dir_all(games.join(".cache")).expect("mkdir");
    let server = Server::start(std::slice::from_ref(&games), &dir.join("d"), &[]);
    assert_eq!(game_ids(&server.addr), ["tic-tac-toe"]);
    let log = server.stderr();
    let broken_line = log
        .lines()
        .find(|l| l.contains("broken: not served"))
        .unwrap_or_else(|| panic!("the broken game is not named: {log}"));
    assert!(broken_line.contains("broken/game.json"), "{broken_line}");
    let twin_line = log
        .lines()
        .find(|l| l.contains("twin: not served"))
        .unwrap_or_else(|| panic!("the second tic-tac-toe is not named: {log}"));
    assert!(
        twin_line.contains("\"tic-tac-toe\"") && twin_line.contains("served already"),
        "{twin_line}"
    );
    assert!(log.contains("notes: no game.json in it"), "{log}");
    assert!(!log.contains(".cache"), "{log}");
    let refused = request(&server.addr, "POST", "/games/broken/enqueue", None, None);
    assert_eq!(refused.status, 404);
    let mut ttt = start_match(&server.addr, "tic-tac-toe");
    play(&mut ttt, "t", 1);
    assert!(!ttt.acks.is_empty());
    drop(server);

    let refused = |paths: &[&Path], needle: &str| {
        let mut args = vec!["serve".to_owned()];
        args.extend(paths.iter().map(|p| p.display().to_string()));
        args.extend(["--addr", "127.0.0.1:0", "--data"].map(str::to_owned));
        args.push(dir.join("refused").display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_briefly(&args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} served: {err}");
        common::assert_no_panic(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
        err
    };
    let only_broken = dir.join("only-broken");
    copy_dir(&broken, &only_broken.join("broken"));
    let err = refused(&[&only_broken], "no game to serve");
    assert!(err.contains("broken/game.json"), "{err}");
    let empty = dir.join("empty");
    std::fs::create_dir_all(empty.join("notes")).expect("mkdir");
    refused(&[&empty], "no game here");
    // Named on its own, a game must load, as before.
    refused(&[&broken, &games.join("tic-tac-toe")], "broken/game.json");
}

/// Sends a long poll of `client`'s observation after `seq` that only a
/// stop answers, and makes sure the server took it: its connection is
/// accepted before a later one the server answered (a listener accepts in
/// order), and its request was sent before. A thread reads its answer.
fn long_poll(client: &Client, seq: u64) -> std::thread::JoinHandle<Option<u16>> {
    use std::io::{Read, Write};
    let path = format!(
        "/matches/{}/observation?after={seq}&wait_ms=100000",
        client.match_id
    );
    let mut s = std::net::TcpStream::connect(&client.addr).expect("connect");
    let token = client.token.clone().expect("a seat");
    let head = format!(
        "GET {path} HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\r\n",
        client.addr
    );
    s.write_all(head.as_bytes()).expect("send");
    let health = request(&client.addr, "GET", "/health", None, None);
    assert_eq!(health.status, 200);
    std::thread::spawn(move || {
        s.set_read_timeout(Some(std::time::Duration::from_secs(120)))
            .expect("timeout");
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw).into_owned();
        text.split_whitespace().nth(1).and_then(|c| c.parse().ok())
    })
}

/// Opens `client`'s event stream and waits until its first message came:
/// a thread reads it to its end.
fn open_stream(client: &Client) -> std::thread::JoinHandle<()> {
    let mut c = client.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        c.stream(None, |_| {
            let _ = tx.send(());
            false
        });
    });
    rx.recv_timeout(std::time::Duration::from_secs(120))
        .expect("the stream's first message");
    reader
}

/// A two-seat game whose button adds 1 to a counter, forever.
fn bump(dir: &Path) -> PathBuf {
    let entities = vec![
        json!({"id": "n", "components": {"counter": {"value": 0}}}),
        json!({"id": "go", "components": {"button": {}}}),
    ];
    let script = "function on_button_pressed(e) game.entity(\"n\"):add(1) end\nfunction participation(seat) return \"acting\" end\n";
    serving::two_seat_game(dir, "bump", entities, script)
}

fn press() -> Value {
    json!({"type": "button.press", "payload": {"entityId": "go"}})
}

/// One seat pressing as fast as it is answered, until the server stops
/// answering; what it was answered (clientActionId, answer).
fn presser(
    addr: String,
    match_id: String,
    token: String,
    tag: &'static str,
    count: Arc<AtomicUsize>,
) -> Vec<(String, Value)> {
    let mut acks = Vec::new();
    for i in 0.. {
        let id = format!("{tag}-{i}");
        let body = json!({"clientActionId": id, "action": press()}).to_string();
        let path = format!("/matches/{match_id}/actions");
        match try_request(&addr, "POST", &path, Some(&token), Some(body.as_bytes())) {
            Some(r) if r.status == 200 => {
                acks.push((id, r.json()));
                count.fetch_add(1, Ordering::SeqCst);
            }
            _ => break,
        }
    }
    acks
}

/// The server's log rows of a match, read with SQLite (the server stopped).
fn logged(data: &Path, match_id: &str) -> (Vec<String>, Vec<String>) {
    let db = rusqlite::Connection::open(data.join("rooms.sqlite3")).expect("the log opens");
    let mut lines = Vec::new();
    let mut ids = Vec::new();
    let mut s = db
        .prepare("SELECT lines, client_id FROM log WHERE match_id = ?1 ORDER BY rowid")
        .expect("query");
    let rows = s
        .query_map([match_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .expect("rows");
    for row in rows {
        let (l, id) = row.expect("row");
        lines.push(l);
        ids.extend(id);
    }
    (lines, ids)
}

/// Must show (issue 37): SIGTERM while two seats press as fast as they
/// are answered, a long poll waits and an event stream is open. The
/// server stops by itself with exit status 0 and a line saying it stopped
/// on SIGTERM; the long poll is answered and the stream ends (no seat is
/// disconnected for it); every acknowledged action is in the log, and
/// after a restart each is answered as before and counted once.
#[test]
fn sigterm_while_seats_act_stops_cleanly_and_keeps_every_acknowledged_action() {
    let dir = scratch("serve-sigterm");
    let game = bump(&dir);
    let data = dir.join("d");
    // A grace of 1 ms: a stream closed by the stop would be a seat
    // leaving at once, if the stop counted as one.
    let mut server = Server::start(std::slice::from_ref(&game), &data, &["--grace-ms", "1"]);
    let busy = start_match(&server.addr, "bump");
    let idle = start_match(&server.addr, "bump");
    let seq = idle.seats[0].clone().observe(None)["seq"]
        .as_u64()
        .expect("seq");
    let poll = long_poll(&idle.seats[0], seq);
    let stream = open_stream(&idle.seats[1]);
    let count = Arc::new(AtomicUsize::new(0));
    let pressers: Vec<_> = busy
        .seats
        .iter()
        .zip(["a", "b"])
        .map(|(c, tag)| {
            let (addr, m, t) = (
                c.addr.clone(),
                c.match_id.clone(),
                c.token.clone().expect("token"),
            );
            let count = count.clone();
            std::thread::spawn(move || presser(addr, m, t, tag, count))
        })
        .collect();
    while count.load(Ordering::SeqCst) < 20 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    server.signal("TERM");
    let status = server.wait_exit().expect("the server stops by itself");
    assert_eq!(status.code(), Some(0), "{}", server.stderr());
    let log = server.stderr();
    assert!(
        log.lines()
            .any(|l| l.starts_with("digipology: serve: stopped on SIGTERM")),
        "{log}"
    );
    common::assert_no_panic(&std::process::Output {
        status,
        stdout: Vec::new(),
        stderr: log.clone().into_bytes(),
    });
    assert_eq!(
        poll.join().expect("poll thread"),
        Some(200),
        "the long poll is answered"
    );
    stream.join().expect("the stream ends");
    let acks: Vec<(String, Value)> = pressers
        .into_iter()
        .flat_map(|p| p.join().expect("presser"))
        .collect();
    assert!(acks.len() >= 20);
    // In the log, as the server left it.
    let (_, ids) = logged(&data, &busy.seats[0].match_id);
    for (id, _) in &acks {
        assert!(
            ids.contains(id),
            "{id} was acknowledged but is not in the log"
        );
    }
    let (lines, _) = logged(&data, &idle.seats[0].match_id);
    assert!(
        !lines.iter().any(|l| l.contains("player_disconnected")),
        "the stop disconnected a seat: {lines:?}"
    );
    // After a restart: each answered as before, each counted once.
    let server = Server::start(std::slice::from_ref(&game), &data, &[]);
    let mut seats = [busy.seats[0].clone(), busy.seats[1].clone()];
    for s in &mut seats {
        s.addr = server.addr.clone();
    }
    for (id, answer) in &acks {
        let s = usize::from(id.starts_with('b'));
        assert_eq!(&seats[s].act_as(id, &press()), answer, "{id}");
    }
    let n =
        seats[0].observe(None)["view"]["entities"]["n"]["components"]["counter"]["value"].clone();
    assert_eq!(
        n,
        json!(acks.len()),
        "each acknowledged press counted once, none more"
    );
}

/// Must show (issue 37): Ctrl-C (SIGINT) stops the server as SIGTERM
/// does: a long poll in flight answered, exit status 0, the line naming
/// SIGINT, and the match there when it starts again.
#[test]
fn ctrl_c_stops_the_server_as_sigterm_does() {
    let dir = scratch("serve-sigint");
    let games = folder_of(&dir, &["tic-tac-toe"]);
    let data = dir.join("d");
    let mut server = Server::start(std::slice::from_ref(&games), &data, &[]);
    let mut ttt = start_match(&server.addr, "tic-tac-toe");
    play(&mut ttt, "t", 1);
    let seq = ttt.seats[0].observe(None)["seq"].as_u64().expect("seq");
    let poll = long_poll(&ttt.seats[0], seq);
    server.signal("INT");
    let status = server.wait_exit().expect("the server stops by itself");
    assert_eq!(status.code(), Some(0), "{}", server.stderr());
    assert!(
        server
            .stderr()
            .lines()
            .any(|l| l.starts_with("digipology: serve: stopped on SIGINT")),
        "{}",
        server.stderr()
    );
    assert_eq!(
        poll.join().expect("poll thread"),
        Some(200),
        "the long poll is answered"
    );
    let server = Server::start(std::slice::from_ref(&games), &data, &[]);
    acks_hold(&mut ttt, &server.addr);
}
