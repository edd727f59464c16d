//! docs/server.md, Log damage (issue 36, finding 7): a data folder that
//! held matches and lost its database, its write-ahead log, tables or rows
//! never starts silently empty. The real `digipology serve` is started on
//! a folder, plays, is killed (`kill -9`), the folder is damaged with a
//! real SQLite, and the next start must stop before serving, exit 2 and
//! say what is missing and what to do — while a fresh folder, a folder of
//! the previous version, a removed `-shm`, a stop by SIGTERM and a
//! write-ahead log SQLite itself checkpointed away all start, with every
//! acknowledged clientActionId answered as before and processed once.

mod common;
#[path = "common/serving.rs"]
mod serving;

use std::path::{Path, PathBuf};

use common::scratch;
use serde_json::{json, Value};
use serving::{run_briefly, Client, Server};

/// Presses each seat makes before the kill.
const PRESSES: usize = 6;

const PRESS: &str = r#"{"type": "button.press", "payload": {"entityId": "go"}}"#;

fn press() -> Value {
    serde_json::from_str(PRESS).expect("JSON")
}

/// A two-seat game without clocks whose button adds 1 to a counter.
fn bump(dir: &Path) -> Vec<PathBuf> {
    let entities = vec![
        json!({"id": "n", "components": {"counter": {"value": 0}}}),
        json!({"id": "go", "components": {"button": {}}}),
    ];
    let script = "function on_button_pressed(e) game.entity(\"n\"):add(1) end\nfunction participation(seat) return \"acting\" end\n";
    vec![serving::two_seat_game(dir, "bump", entities, script)]
}

/// A match being played: its two seats and the answers they were given.
struct Played {
    seats: Vec<Client>,
    /// (seat index, clientActionId, the answer).
    acks: Vec<(usize, String, Value)>,
}

impl Played {
    fn id(&self) -> &str {
        &self.seats[0].match_id
    }
}

/// Seats two players in a new match of `bump` and has each press `n`
/// times, each press acknowledged.
fn play(addr: &str, tag: &str, n: usize) -> Played {
    let a = Client::enqueue(addr, "bump", &format!("{tag}-a"));
    let b = Client::enqueue(addr, "bump", &format!("{tag}-b"));
    assert_eq!(a.match_id, b.match_id);
    let mut played = Played {
        seats: vec![a, b],
        acks: Vec::new(),
    };
    more(&mut played, tag, n);
    played
}

/// `n` more acknowledged presses per seat.
fn more(p: &mut Played, tag: &str, n: usize) {
    let start = p.acks.len();
    for i in 0..n {
        for (s, seat) in p.seats.iter_mut().enumerate() {
            let id = format!("{tag}-{s}-{}", start + i);
            let answer = seat.act_as(&id, &press());
            assert_eq!(answer["accepted"], true, "{answer}");
            p.acks.push((s, id, answer));
        }
    }
}

/// The match's counter, as its first seat sees it.
fn counter(p: &mut Played) -> Value {
    p.seats[0].observe(None)["view"]["entities"]["n"]["components"]["counter"]["value"].clone()
}

/// After a restart on `addr`: every acknowledged id is answered as before
/// and processed once (the counter holds one per press, no more).
fn acks_hold(p: &mut Played, addr: &str) {
    for s in &mut p.seats {
        s.addr = addr.to_owned();
    }
    for (s, id, answer) in p.acks.clone() {
        let again = p.seats[s].act_as(&id, &press());
        assert_eq!(again, answer, "{id} was acknowledged: the same answer");
    }
    let n = p.acks.len();
    assert_eq!(counter(p), json!(n), "each acknowledged press counted once");
}

/// Starts the binary on `dir`, which must refuse: exit status 2 before
/// serving, no panic, and one line (one paragraph) that says the log is
/// damaged and what an operator can do. Answers that line.
fn refused(games: &[PathBuf], dir: &Path) -> String {
    let mut args = vec!["serve".to_owned()];
    args.extend(games.iter().map(|g| g.display().to_string()));
    args.extend(["--addr", "127.0.0.1:0", "--data"].map(str::to_owned));
    args.push(dir.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_briefly(&args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "it served: {err}");
    common::assert_no_panic(&out);
    let line = err
        .lines()
        .find(|l| l.starts_with("digipology: serve: the log in"))
        .unwrap_or_else(|| panic!("no refusal in: {err}"))
        .to_owned();
    for words in [
        "is damaged, so the server does not start",
        "Restore the whole folder from a backup",
        "move it away",
        "docs/server.md, Log damage",
    ] {
        assert!(line.contains(words), "{words:?} not in: {line}");
    }
    line
}

/// A copy of a stopped server's folder (database, write-ahead log and
/// all) for one kind of damage.
fn copy(dir: &Path, to: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(to);
    common::copy_dir(dir, to);
    to.to_path_buf()
}

/// Runs SQL on a stopped server's log (the connection's close
/// checkpoints the write-ahead log into the database, as any SQLite
/// client's does).
fn sql(dir: &Path, text: &str) {
    let db = rusqlite::Connection::open(dir.join("rooms.sqlite3")).expect("the log");
    db.execute_batch(text).expect(text);
}

/// Rows of the `log` table of the database at `db` (0 when it has none).
fn log_rows(db: &Path) -> i64 {
    rusqlite::Connection::open(db)
        .and_then(|c| c.query_row("SELECT count(*) FROM log", [], |r| r.get(0)))
        .unwrap_or(0)
}

fn remove(dir: &Path, name: &str) {
    std::fs::remove_file(dir.join(name)).expect(name);
}

/// A fresh folder starts, and gets its marker (the log's id, which the
/// database keeps too) and its high-water file; so does one with an empty
/// database, but not one whose database holds other tables.
#[test]
fn a_fresh_folder_starts_with_a_marked_log() {
    let data = scratch("log-damage-fresh");
    let games = bump(&data);
    let dir = data.join("d");
    let server = Server::start(&games, &dir, &[]);
    let mut p = play(&server.addr, "m", 1);
    assert_eq!(counter(&mut p), json!(2));
    let marker: Value =
        serde_json::from_slice(&std::fs::read(dir.join("rooms.id")).expect("rooms.id"))
            .expect("JSON");
    let db = rusqlite::Connection::open_with_flags(
        dir.join("rooms.sqlite3"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("the log");
    let id: String = db
        .query_row("SELECT value FROM meta WHERE key = 'log_id'", [], |r| {
            r.get(0)
        })
        .expect("the log's id");
    assert_eq!(marker["logId"], json!(id));
    let high = std::fs::read_to_string(dir.join("rooms.highwater")).expect("high water");
    assert!(high.contains(&id) && high.contains(" log="), "{high}");

    // A folder whose database is empty (0 bytes, or no table at all) and
    // that holds nothing else of a log gets a new log too.
    for (name, setup) in [("zero", ""), ("bare", "PRAGMA journal_mode=WAL")] {
        let bare = data.join(name);
        std::fs::create_dir_all(&bare).expect("dir");
        std::fs::File::create(bare.join("rooms.sqlite3")).expect("db");
        if !setup.is_empty() {
            sql(&bare, setup);
        }
        let server = Server::start(&games, &bare, &[]);
        play(&server.addr, "m", 1);
        assert!(bare.join("rooms.id").exists(), "{name}");
    }
    // A database of something else is left alone.
    let other = data.join("other");
    std::fs::create_dir_all(&other).expect("dir");
    std::fs::File::create(other.join("rooms.sqlite3")).expect("db");
    sql(&other, "CREATE TABLE notes(x)");
    let line = refused(&games, &other);
    assert!(line.contains("holds none of the log's tables"), "{line}");
}

/// The database truncated to 0 bytes, or deleted (alone, then with its
/// write-ahead log and index): refused, naming the file; the refusal
/// leaves the folder as it found it.
#[test]
fn a_database_emptied_or_deleted_is_refused() {
    let data = scratch("log-damage-db");
    let games = bump(&data);
    let dir = data.join("d");
    let mut server = Server::start(&games, &dir, &[]);
    play(&server.addr, "m", PRESSES);
    server.kill();

    let empty = copy(&dir, &data.join("empty"));
    std::fs::File::create(empty.join("rooms.sqlite3")).expect("truncate");
    let line = refused(&games, &empty);
    assert!(
        line.contains("rooms.sqlite3, its log database, is empty (0 bytes)"),
        "{line}"
    );
    let len = std::fs::metadata(empty.join("rooms.sqlite3"))
        .expect("db")
        .len();
    assert_eq!(len, 0, "the refused start left the database alone");

    let gone = copy(&dir, &data.join("gone"));
    remove(&gone, "rooms.sqlite3");
    let line = refused(&games, &gone);
    assert!(
        line.contains("rooms.sqlite3, its log database, is missing"),
        "{line}"
    );
    assert!(!gone.join("rooms.sqlite3").exists(), "no database was made");
    remove(&gone, "rooms.sqlite3-wal");
    remove(&gone, "rooms.sqlite3-shm");
    let line = refused(&games, &gone);
    assert!(
        line.contains("is missing (") && line.contains("rooms.id says"),
        "{line}"
    );
}

/// The write-ahead log deleted after `kill -9`, while it held
/// acknowledged actions the database file lacks: refused, naming it; with
/// its index deleted too, the high-water file still catches it. Before
/// that, a write-ahead log SQLite itself folded into the database (a
/// client's clean close removes it) starts as it should. Deleting
/// `rooms.highwater` takes the database as it is (the documented way out).
#[test]
fn a_write_ahead_log_deleted_after_kill_9_is_refused() {
    let data = scratch("log-damage-wal");
    let games = bump(&data);
    let dir = data.join("d");
    let mut server = Server::start(&games, &dir, &[]);
    let mut first = play(&server.addr, "m", PRESSES);
    server.kill();
    // A clean close of another client checkpoints and removes the -wal
    // and -shm: nothing is lost, and the server starts.
    sql(&dir, "SELECT count(*) FROM log");
    assert!(!dir.join("rooms.sqlite3-wal").exists());
    let server = Server::start(&games, &dir, &[]);
    acks_hold(&mut first, &server.addr);
    play(&server.addr, "k", PRESSES);
    let mut server = server;
    server.kill();

    // The -wal holds acknowledged rows the database file alone lacks.
    let wal_len = std::fs::metadata(dir.join("rooms.sqlite3-wal"))
        .expect("wal")
        .len();
    assert!(wal_len > 0);
    let whole = copy(&dir, &data.join("whole"));
    let alone = data.join("alone");
    std::fs::create_dir_all(&alone).expect("dir");
    std::fs::copy(dir.join("rooms.sqlite3"), alone.join("rooms.sqlite3")).expect("copy");
    let (with_wal, without) = (
        log_rows(&whole.join("rooms.sqlite3")),
        log_rows(&alone.join("rooms.sqlite3")),
    );
    assert!(
        without > 0 && with_wal > without,
        "{with_wal} rows, {without} without the -wal"
    );

    remove(&dir, "rooms.sqlite3-wal");
    let line = refused(&games, &dir);
    assert!(
        line.contains("rooms.sqlite3-wal is missing while"),
        "{line}"
    );
    assert!(line.contains("lacks rows the server wrote"), "{line}");
    assert!(line.contains(&format!("reached row {with_wal}")), "{line}");

    // The -wal and the -shm both gone: no trace but the high-water file.
    let _ = std::fs::remove_file(dir.join("rooms.sqlite3-wal"));
    let _ = std::fs::remove_file(dir.join("rooms.sqlite3-shm"));
    let line = refused(&games, &dir);
    assert!(
        line.contains("rooms.highwater notes that its log table reached row"),
        "{line}"
    );
    assert!(
        line.contains("delete ") && line.contains("rooms.highwater"),
        "{line}"
    );

    // The operator's choice: take the database as it is.
    remove(&dir, "rooms.highwater");
    let server = Server::start(&games, &dir, &[]);
    assert!(
        server
            .stderr()
            .contains("is missing: the log is taken as it is"),
        "{}",
        server.stderr()
    );
    for s in &mut first.seats {
        s.addr = server.addr.clone();
    }
    assert_eq!(counter(&mut first), json!(first.acks.len()));
}

/// A table of the log dropped (each of them in turn): refused, naming the
/// table.
#[test]
fn a_dropped_table_is_refused() {
    let data = scratch("log-damage-tables");
    let games = bump(&data);
    let dir = data.join("d");
    let mut server = Server::start(&games, &dir, &[]);
    play(&server.addr, "m", PRESSES);
    server.kill();
    for table in ["log", "matches", "tokens", "spans", "games", "meta"] {
        let damaged = copy(&dir, &data.join(table));
        sql(&damaged, &format!("DROP TABLE {table}"));
        let line = refused(&games, &damaged);
        assert!(
            line.contains(&format!("lacks its {table} table")),
            "{table}: {line}"
        );
    }
    let none = copy(&dir, &data.join("none"));
    sql(
        &none,
        "DROP TABLE log; DROP TABLE matches; DROP TABLE tokens; DROP TABLE spans; DROP TABLE games; DROP TABLE meta",
    );
    let line = refused(&games, &none);
    assert!(line.contains("holds none of the log's tables"), "{line}");
}

/// Rows of one match missing: all of them, two in the middle, the last
/// one written; and a match's own row missing while its rows remain.
#[test]
fn missing_rows_of_a_match_are_refused() {
    let data = scratch("log-damage-rows");
    let games = bump(&data);
    let dir = data.join("d");
    let mut server = Server::start(&games, &dir, &[]);
    let older = play(&server.addr, "m", PRESSES);
    let newer = play(&server.addr, "k", PRESSES);
    server.kill();
    let (m1, m2) = (older.id().to_owned(), newer.id().to_owned());

    let all = copy(&dir, &data.join("all"));
    sql(&all, &format!("DELETE FROM log WHERE match_id = '{m1}'"));
    let line = refused(&games, &all);
    assert!(
        line.contains(&format!("match {m1}: its log rows are gone")),
        "{line}"
    );

    let middle = copy(&dir, &data.join("middle"));
    sql(
        &middle,
        &format!(
            "DELETE FROM log WHERE rowid IN (SELECT rowid FROM log WHERE match_id = '{m2}' AND first > 0 ORDER BY rowid LIMIT 2 OFFSET 2)"
        ),
    );
    let line = refused(&games, &middle);
    assert!(
        line.contains(&format!("match {m2}: lines ")) && line.contains("of its log are gone"),
        "{line}"
    );

    let last = copy(&dir, &data.join("last"));
    sql(
        &last,
        "DELETE FROM log WHERE rowid = (SELECT max(rowid) FROM log)",
    );
    let line = refused(&games, &last);
    assert!(line.contains("its log table reached row"), "{line}");

    let orphan = copy(&dir, &data.join("orphan"));
    sql(&orphan, &format!("DELETE FROM matches WHERE id = '{m1}'"));
    let line = refused(&games, &orphan);
    assert!(
        line.contains(&format!(
            "match {m1}, but the matches table has no row for it"
        )),
        "{line}"
    );
}

/// Another server's database put in the folder: refused (the log ids
/// differ); deleting the marker and the high-water file, as the message
/// says, makes it the folder's log.
#[test]
fn another_servers_database_is_refused() {
    let data = scratch("log-damage-other");
    let games = bump(&data);
    let (mine, theirs) = (data.join("mine"), data.join("theirs"));
    let mut server = Server::start(&games, &mine, &[]);
    play(&server.addr, "m", 1);
    server.kill();
    let mut server = Server::start(&games, &theirs, &[]);
    let mut other = play(&server.addr, "t", 1);
    server.kill();
    for name in ["rooms.sqlite3", "rooms.sqlite3-wal", "rooms.sqlite3-shm"] {
        std::fs::copy(theirs.join(name), mine.join(name)).expect(name);
    }
    let line = refused(&games, &mine);
    assert!(line.contains("is the log of another data folder"), "{line}");
    remove(&mine, "rooms.id");
    remove(&mine, "rooms.highwater");
    let server = Server::start(&games, &mine, &[]);
    acks_hold(&mut other, &server.addr);
}

/// What must start: a removed `-shm` (SQLite rebuilds it), a stop by
/// SIGTERM, a stop by `kill -9`, a torn `rooms.highwater`; each time every
/// acknowledged id is answered as before and processed once, and play goes
/// on.
#[test]
fn harmless_changes_start_and_keep_every_acknowledgement() {
    let data = scratch("log-damage-harmless");
    let games = bump(&data);
    let dir = data.join("d");
    let mut server = Server::start(&games, &dir, &[]);
    let mut p = play(&server.addr, "m", PRESSES);
    server.kill();
    remove(&dir, "rooms.sqlite3-shm");
    let mut server = Server::start(&games, &dir, &[]);
    acks_hold(&mut p, &server.addr);
    more(&mut p, "after-shm", 1);
    server.terminate();
    let mut server = Server::start(&games, &dir, &[]);
    acks_hold(&mut p, &server.addr);
    more(&mut p, "after-term", 1);
    server.kill();
    let mut server = Server::start(&games, &dir, &[]);
    acks_hold(&mut p, &server.addr);
    more(&mut p, "after-kill", 1);
    server.kill();
    // A torn high-water file (it is not synced while the server runs): a
    // warning, and the log is taken as it is.
    std::fs::write(dir.join("rooms.highwater"), b"digipology-highwater 1 ab").expect("torn");
    let server = Server::start(&games, &dir, &[]);
    assert!(
        server.stderr().contains("rooms.highwater cannot be read"),
        "{}",
        server.stderr()
    );
    acks_hold(&mut p, &server.addr);
}

/// A folder the previous version wrote (no marker, no high-water file, no
/// `meta` table) is taken in: it starts with its matches, gets a marker,
/// and from then on its damage is caught. (One whose database is gone
/// but whose `-wal` is there is refused all the same.)
#[test]
fn a_folder_from_before_the_marker_is_taken_in() {
    let data = scratch("log-damage-adopt");
    let games = bump(&data);
    let dir = data.join("d");
    let mut server = Server::start(&games, &dir, &[]);
    let mut p = play(&server.addr, "m", PRESSES);
    server.kill();
    remove(&dir, "rooms.id");
    remove(&dir, "rooms.highwater");
    sql(&dir, "DROP TABLE meta");
    // Such a folder whose database is gone, with its write-ahead log
    // still there, held a log: refused too.
    let gone = copy(&dir, &data.join("gone"));
    std::fs::write(gone.join("rooms.sqlite3-wal"), b"").expect("wal");
    remove(&gone, "rooms.sqlite3");
    let line = refused(&games, &gone);
    assert!(
        line.contains("is missing or empty, but")
            && line.contains("rooms.sqlite3-wal is still here"),
        "{line}"
    );
    let mut server = Server::start(&games, &dir, &[]);
    assert!(
        server.stderr().contains("took in the log"),
        "{}",
        server.stderr()
    );
    acks_hold(&mut p, &server.addr);
    assert!(dir.join("rooms.id").exists() && dir.join("rooms.highwater").exists());
    more(&mut p, "after", 1);
    server.kill();
    // Its only match's rows deleted: the last ones the server wrote.
    sql(
        &dir,
        &format!("DELETE FROM log WHERE match_id = '{}'", p.id()),
    );
    let line = refused(&games, &dir);
    assert!(line.contains("lacks rows the server wrote"), "{line}");
}
