//! Must show (issue 19): `kill -9` in the middle of many concurrent
//! matches. After a restart every acknowledged action is there (a retry of
//! its clientActionId gets the same answer, and the counters hold exactly
//! the accepted additions), every room's log replays clean to the state
//! hashes it holds, and play goes on.

mod common;
#[path = "common/serving.rs"]
mod serving;
#[path = "common/tally.rs"]
mod tally;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{run, scratch};
use serde_json::{json, Value};
use serving::{run_briefly, try_request, Client, Server};

/// Matches played at once (two seats each).
const MATCHES: usize = 16;
/// Acknowledged actions before the kill.
const ACKS_BEFORE_KILL: usize = 400;

fn add(seat: &str) -> Value {
    json!({"type": "counter.add", "payload": {"entityId": format!("score_{seat}"), "amount": 1}})
}

/// What one seat sent: clientActionId → the answer, when one came.
type Sent = BTreeMap<String, Option<Value>>;

fn submit(addr: &str, c: &Client, id: &str) -> Option<Value> {
    let body = json!({"clientActionId": id, "action": add(&c.seat)}).to_string();
    let path = format!("/matches/{}/actions", c.match_id);
    let r = try_request(
        addr,
        "POST",
        &path,
        c.token.as_deref(),
        Some(body.as_bytes()),
    )?;
    (r.status == 200).then(|| r.json())
}

/// Sends actions until the server stops answering.
fn hammer(addr: String, c: Client, acked: Arc<AtomicUsize>) -> (Client, Sent) {
    let mut sent = Sent::new();
    for i in 0..100_000 {
        let id = format!("{}-{i}", c.seat);
        let answer = submit(&addr, &c, &id);
        let stop = answer.is_none();
        if answer.is_some() {
            acked.fetch_add(1, Ordering::Relaxed);
        }
        sent.insert(id, answer);
        if stop {
            break;
        }
    }
    (c, sent)
}

#[test]
fn kill_9_mid_play_loses_no_acknowledged_action() {
    let data = scratch("server-fault");
    let dir = data.join("d");
    // The counters of examples/basics, without their ceiling.
    let game = tally::tally_game(&data);
    let games = [game];
    let mut server = Server::start(&games, &dir, &["--rate", "100000", "--burst", "100000"]);
    let mut seats = Vec::new();
    for i in 0..MATCHES * 2 {
        seats.push(Client::enqueue(
            &server.addr,
            "tally",
            &format!("player{i}"),
        ));
    }
    let acked = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = seats
        .into_iter()
        .map(|c| {
            let (addr, acked) = (server.addr.clone(), acked.clone());
            std::thread::spawn(move || hammer(addr, c, acked))
        })
        .collect();
    while acked.load(Ordering::Relaxed) < ACKS_BEFORE_KILL {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    server.kill();
    let results: Vec<(Client, Sent)> = workers
        .into_iter()
        .map(|w| w.join().expect("worker"))
        .collect();
    let server = Server::start(&games, &dir, &["--rate", "100000", "--burst", "100000"]);
    assert!(
        server
            .stderr()
            .contains(&format!("recovered {MATCHES} running matches")),
        "{}",
        server.stderr()
    );
    // Every seat's last request was in flight when the server died.
    assert!(results
        .iter()
        .all(|(_, sent)| sent.values().filter(|a| a.is_none()).count() == 1));
    let mut per_match: BTreeMap<String, usize> = BTreeMap::new();
    for (c, sent) in &results {
        let mut accepted = 0;
        for (id, answer) in sent {
            let again = submit(&server.addr, c, id).expect("the restarted server answers");
            if let Some(first) = answer {
                assert_eq!(
                    &again, first,
                    "{}: {id} was acknowledged, and is answered the same",
                    c.match_id
                );
            }
            if again["accepted"] == true {
                accepted += 1;
            }
        }
        // The counter holds exactly the accepted additions: none lost,
        // none doubled by a retry.
        let mut me = c.clone();
        me.addr = server.addr.clone();
        let obs = me.observe(None);
        let value =
            &obs["view"]["entities"][format!("score_{}", c.seat)]["components"]["counter"]["value"];
        assert_eq!(value, &json!(accepted), "{} {}", c.match_id, c.seat);
        // Play goes on.
        assert_eq!(
            submit(&server.addr, c, "after-restart").expect("answer")["accepted"],
            true
        );
        *per_match.entry(c.match_id.clone()).or_default() += accepted;
    }
    assert_eq!(per_match.len(), MATCHES);
    assert!(
        per_match.values().all(|n| *n > 0),
        "every match had traffic: {per_match:?}"
    );
    replay_every_log(&dir, &data);
}

/// Every match's log, written out as a record, replays with every state
/// hash matching (`digipology replay`).
fn replay_every_log(dir: &std::path::Path, scratch: &std::path::Path) {
    let db = rusqlite::Connection::open(dir.join("rooms.sqlite3")).expect("the log");
    let mut rows = db.prepare("SELECT id, header FROM matches").expect("query");
    let matches: Vec<(String, String)> = rows
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(matches.len(), MATCHES);
    for (id, header) in matches {
        let mut header: Value = serde_json::from_str(&header).expect("header");
        header["record"] = json!(2);
        let mut lines = db
            .prepare("SELECT lines FROM log WHERE match_id = ?1 ORDER BY rowid")
            .expect("query");
        let log: Vec<String> = lines
            .query_map([&id], |r| r.get::<_, String>(0))
            .expect("lines")
            .collect::<Result<Vec<_>, _>>()
            .expect("lines")
            .iter()
            .flat_map(|l| l.split('\n').map(str::to_owned))
            .collect();
        let mut text = header.to_string();
        for l in &log {
            text.push('\n');
            text.push_str(l);
        }
        let file = scratch.join(format!("{id}.jsonl"));
        std::fs::write(&file, text).expect("record");
        let out = run(&["replay", file.to_str().expect("path")], b"");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{id}: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            said.contains(&format!("verified {} actions", log.len())),
            "{id}: {said}"
        );
    }
}

/// A recovered room's clocks run on: a decision that was running when the
/// server died expires after the restart, into its safe default.
#[test]
fn a_recovered_room_rearms_its_match_clocks() {
    let data = scratch("server-fault-clocks");
    let dir = data.join("d");
    let rps = common::root().join("examples/rock-paper-scissors");
    let games = [rps.clone()];
    let mut server = Server::start(&games, &dir, &[]);
    let game: Value =
        serde_json::from_str(&std::fs::read_to_string(rps.join("game.json")).expect("game"))
            .expect("JSON");
    let mut config = game["match"].clone();
    // Ann acts well within it, even on a busy machine; Bob's runs out
    // after the restart.
    config["timing"]["decisionLimitMs"] = json!(5000);
    config["timing"]["phaseLimits"]["choose"]["ms"] = json!(600_000);
    let made = serving::request(
        &server.addr,
        "POST",
        "/games/rock-paper-scissors/matches",
        None,
        Some(json!({"match": config}).to_string().as_bytes()),
    )
    .json();
    let id = made["matchId"].as_str().expect("id");
    let mut ann = Client::join(&server.addr, id, "ann");
    let mut bob = Client::join(&server.addr, id, "bob");
    let choice = ann.observe(None)["legalActions"][0].clone();
    ann.act(&choice);
    let before_kill = bob.observe(None)["seq"].as_u64().expect("seq");
    server.kill();
    let server = Server::start(&games, &dir, &[]);
    bob.addr = server.addr.clone();
    let events: Vec<Value> = bob
        .stream(None, |m| {
            m.events()
                .iter()
                .any(|e| e["type"] == "match.host_event" && e["data"]["kind"] == "decision_expired")
        })
        .iter()
        .flat_map(|m| m.events())
        .collect();
    let expired = events
        .iter()
        .find(|e| e["type"] == "match.host_event" && e["data"]["seat"] == json!(bob.seat))
        .unwrap_or_else(|| panic!("{events:?}"));
    assert!(
        expired["seq"].as_u64().expect("seq") > before_kill,
        "the expiry came after the restart: {expired}"
    );
}

/// A match whose last seat was taken, marked running, but whose start never
/// reached the log (the server died in between) starts when recovered.
/// That state is made here by hand: Ann waits alone, the server is
/// killed, and her match's row is then written as the server writes it
/// when Bob takes the last seat (its log has no row of it, nor a span),
/// after Bob's seat token (which the server makes durable first).
#[test]
fn a_running_match_with_an_empty_log_starts_when_recovered() {
    let data = scratch("server-fault-empty");
    let dir = data.join("d");
    let games = [common::root().join("examples/rock-paper-scissors")];
    let mut server = Server::start(&games, &dir, &[]);
    let mut ann = Client::enqueue(&server.addr, "rock-paper-scissors", "ann");
    server.kill();
    let db = rusqlite::Connection::open(dir.join("rooms.sqlite3")).expect("the log");
    let marked = db
        .execute(
            "UPDATE matches SET status = 'running',
             seats = json_set(seats, '$[1].taken', json('true'), '$[1].name', 'bob')
             WHERE id = ?1 AND status = 'open'",
            [&ann.match_id],
        )
        .expect("update");
    assert_eq!(marked, 1);
    db.execute(
        "INSERT INTO tokens(digest, match_id, seat) VALUES ('bobs-token', ?1, 'b')",
        [&ann.match_id],
    )
    .expect("bob's token");
    drop(db);
    let server = Server::start(&games, &dir, &[]);
    ann.addr = server.addr.clone();
    let obs = ann.observe(None);
    assert_eq!(obs["phase"], "choose", "{obs}");
    assert_eq!(obs["participation"], "acting", "{obs}");
}

/// docs/server.md, `--data`: one server at a time uses a data folder. A
/// second one on it stops with an error before reading the log, and the
/// first plays on; once the first is killed (`kill -9`: the system lets go
/// of its lock) a new one starts on the folder. A bad address leaves no
/// data folder behind.
#[test]
fn a_second_server_on_the_same_data_folder_is_refused() {
    let data = scratch("server-fault-lock");
    let dir = data.join("d");
    let rps = common::root().join("examples/rock-paper-scissors");
    let games = [rps.clone()];
    let mut first = Server::start(&games, &dir, &[]);
    let ann = Client::enqueue(&first.addr, "rock-paper-scissors", "ann");
    let dir_arg = dir.to_str().expect("utf-8 path");
    let rps_arg = rps.to_str().expect("utf-8 path");
    let second = run_briefly(&["serve", rps_arg, "--addr", "127.0.0.1:0", "--data", dir_arg]);
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(err.contains("in use by another digipology serve"), "{err}");
    assert!(second.stdout.is_empty(), "the second server served");
    // The first one still seats players in the same match.
    let bob = Client::enqueue(&first.addr, "rock-paper-scissors", "bob");
    assert_eq!(bob.match_id, ann.match_id);
    first.kill();
    let again = Server::start(&games, &dir, &[]);
    let mut ann = ann;
    ann.addr = again.addr.clone();
    assert_eq!(ann.observe(None)["result"]["status"], "acting");
    // An address that cannot be bound: an error, and no folder made.
    let fresh = data.join("never");
    let bad = run_briefly(&[
        "serve",
        rps_arg,
        "--addr",
        "127.0.0.1:99999",
        "--data",
        fresh.to_str().expect("utf-8"),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(!fresh.exists(), "a failed start made {}", fresh.display());
}

/// A two-seat game without clocks whose button adds `step` to a counter;
/// both seats always act.
fn bump_game(dir: &std::path::Path, step: u32) -> std::path::PathBuf {
    let entities = vec![
        json!({"id": "n", "components": {"counter": {"value": 0}}}),
        json!({"id": "go", "components": {"button": {}}}),
    ];
    serving::two_seat_game(dir, "bump", entities, &bump_script(step))
}

fn bump_script(step: u32) -> String {
    format!("function on_button_pressed(e) game.entity(\"n\"):add({step}) end\nfunction participation(seat) return \"acting\" end\n")
}

/// docs/server.md, Recovery: the log keeps every version of a game's files
/// a match began with. A match whose game was edited while the server was
/// down recovers with its own version and plays on by its rules; a match
/// made after the restart plays by the edited ones.
#[test]
fn a_match_recovers_with_the_files_it_began_with() {
    let data = scratch("server-fault-edited");
    let game = bump_game(&data, 1);
    let main = game.join("scripts/main.lua");
    let dir = data.join("d");
    let games = [game.clone()];
    let mut server = Server::start(&games, &dir, &[]);
    let mut ann = Client::enqueue(&server.addr, "bump", "ann");
    let _bob = Client::enqueue(&server.addr, "bump", "bob");
    let press = json!({"type": "button.press", "payload": {"entityId": "go"}});
    assert_eq!(ann.act(&press)["accepted"], true);
    server.kill();
    std::fs::write(&main, bump_script(10)).expect("the edit");
    let server = Server::start(&games, &dir, &[]);
    ann.addr = server.addr.clone();
    assert_eq!(ann.act(&press)["accepted"], true, "{}", server.stderr());
    let counter = |c: &mut Client| {
        c.observe(None)["view"]["entities"]["n"]["components"]["counter"]["value"].clone()
    };
    assert_eq!(counter(&mut ann), json!(2), "the old match adds 1 a press");
    let mut cy = Client::enqueue(&server.addr, "bump", "cy");
    let _dan = Client::enqueue(&server.addr, "bump", "dan");
    assert_ne!(cy.match_id, ann.match_id);
    assert_eq!(cy.act(&press)["accepted"], true);
    assert_eq!(counter(&mut cy), json!(10), "a new match adds 10");
}

/// docs/server.md, `--abandon-after-ms`: a running match nothing entered
/// for that long is aborted (a logged input like any other), leaves the
/// rooms in use, and stays aborted after a restart.
#[test]
fn a_match_nobody_plays_is_abandoned() {
    let data = scratch("server-fault-abandoned");
    let dir = data.join("d");
    let games = [bump_game(&data, 1)];
    let mut server = Server::start(&games, &dir, &["--abandon-after-ms", "300"]);
    let mut ann = Client::enqueue(&server.addr, "bump", "ann");
    let _bob = Client::enqueue(&server.addr, "bump", "bob");
    let mut last = Value::Null;
    for _ in 0..200 {
        last = ann.observe(None);
        if last["result"]["status"] == "match_aborted" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(last["result"]["status"], "match_aborted", "{last}");
    let reason = last["result"]["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("abandoned"), "{reason}");
    server.kill();
    let server = Server::start(&games, &dir, &[]);
    ann.addr = server.addr.clone();
    assert_eq!(ann.observe(None)["result"]["status"], "match_aborted");
}

/// `--abandon-after-ms` against a game whose `on_match_aborted` fails:
/// the abort is refused (the server's log says so) and the match goes on.
#[test]
fn an_abandonment_the_game_refuses_leaves_the_match_running() {
    let data = scratch("server-fault-refused-abort");
    let script = bump_script(1) + "function on_match_aborted(e) error(\"refuse\") end\n";
    let entities = vec![json!({"id": "go", "components": {"button": {}}})];
    let game = serving::two_seat_game(&data, "stubborn", entities, &script);
    let server = Server::start(&[game], &data.join("d"), &["--abandon-after-ms", "100"]);
    let mut ann = Client::enqueue(&server.addr, "stubborn", "ann");
    let _bob = Client::enqueue(&server.addr, "stubborn", "bob");
    let mut seen = false;
    for _ in 0..200 {
        if server.stderr().contains("abandoning the match was refused") {
            seen = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(seen, "{}", server.stderr());
    assert_eq!(ann.observe(None)["result"]["status"], "acting");
}

/// `--abandon-after-ms` leaves a match with a clock running alone: the
/// clock, not the abandonment, ends it (here a player's total time runs
/// out long after the abandonment window).
#[test]
fn a_match_with_a_clock_running_is_not_abandoned() {
    let data = scratch("server-fault-clocked");
    let nim = common::root().join("examples/nim-clock");
    let server = Server::start(&[nim], &data.join("d"), &["--abandon-after-ms", "100"]);
    let made = serving::request(
        &server.addr,
        "POST",
        "/games/nim-clock/matches",
        None,
        Some(br#"{"match": {"timing": {"playerTotalMs": 800, "decisionLimitMs": null}}}"#),
    )
    .json();
    let id = made["matchId"].as_str().expect("id");
    let mut first = Client::join(&server.addr, id, "first");
    let _second = Client::join(&server.addr, id, "second");
    let mut last = Value::Null;
    for _ in 0..200 {
        last = first.observe(None);
        if last["result"]["status"] == "match_over" || last["result"]["status"] == "match_aborted" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(last["result"]["status"], "match_over", "{last}");
}

/// docs/server.md, Known limits: a read of one match's history searches
/// the log by rowid within the match's span (written at its first and
/// last append), not the whole table; a match the log has no span for
/// (an older log) is still read whole.
#[test]
fn one_match_is_read_from_its_span_of_the_log() {
    use digipology_server::store::{one_match_plan, Entry, RoomLog, SqliteLog};
    let data = scratch("server-fault-span");
    std::fs::create_dir_all(&data).expect("dir");
    let log = SqliteLog::open(&data.join("rooms.sqlite3")).expect("log");
    let put = |m: &str, first: u64, lines: &str, finished: Option<&str>| {
        let entry = Entry {
            match_id: m.into(),
            first,
            lines: lines.into(),
            ack: None,
            finished: finished.map(str::to_owned),
        };
        log.append(entry)
            .blocking_recv()
            .expect("answer")
            .expect("durable");
    };
    put("old", 5, "o5", None);
    put("m1", 0, "a0\na1", None);
    put("m2", 0, "b0", None);
    put("m1", 2, "a2", Some("{\"status\":\"match_over\"}"));
    put("m2", 1, "b1", None);
    put("old", 6, "o6", None);
    let lines = |m: &str| {
        let mut h = log.histories(&[m.to_owned()]).expect("read");
        h.remove(m).expect("history").lines
    };
    assert_eq!(lines("m1"), ["a0", "a1", "a2"]);
    assert_eq!(lines("m2"), ["b0", "b1"]);
    assert_eq!(lines("old"), ["o5", "o6"]);
    let plan = one_match_plan(&log).expect("plan");
    assert!(plan.contains("INTEGER PRIMARY KEY"), "{plan}");
    assert!(!plan.starts_with("SCAN log"), "{plan}");
}
