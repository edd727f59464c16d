//! docs/server.md, Log damage (issue 36, finding 7): a data folder that
//! held matches and lost its database, its write-ahead log, tables, rows
//! or seat tokens never starts silently empty. The real `digipology serve`
//! is started on a folder, plays, is killed (`kill -9`), the folder is
//! damaged with a real SQLite, and the next start must stop before
//! serving, exit 2, say what is missing and what to do, and leave the
//! folder as it found it — while a fresh folder (warned about when it was
//! there already), a folder of the previous version, a removed `-shm`, a
//! stop by SIGTERM, a write-ahead log SQLite itself checkpointed away, a
//! full disk and `kill -9` in the middle of concurrent play all start,
//! with every acknowledged clientActionId answered as before and
//! processed once.

mod common;
#[path = "common/serving.rs"]
mod serving;

use std::path::{Path, PathBuf};

use common::scratch;
use serde_json::{json, Value};
use serving::{get_json, request, run_briefly, try_request, Client, Server};

/// Presses each seat makes before the kill.
const PRESSES: usize = 6;

const PRESS: &str = r#"{"type": "button.press", "payload": {"entityId": "go"}}"#;

fn press() -> Value {
    serde_json::from_str(PRESS).expect("JSON")
}

/// Presses that end a match of `short`.
const SHORT: usize = 4;

/// Two two-seat games without clocks whose button adds 1 to a counter:
/// `bump`, which never ends, and `short`, which ends after [`SHORT`]
/// presses.
fn bump(dir: &Path) -> Vec<PathBuf> {
    let entities = || {
        vec![
            json!({"id": "n", "components": {"counter": {"value": 0}}}),
            json!({"id": "go", "components": {"button": {}}}),
        ]
    };
    let script = "function on_button_pressed(e) game.entity(\"n\"):add(1) end\nfunction participation(seat) return \"acting\" end\n";
    let short = format!(
        "local function over() return (storage.n or 0) >= {SHORT} end
function on_button_pressed(e) game.entity(\"n\"):add(1) storage.n = (storage.n or 0) + 1 end
function participation(seat) if over() then return \"finished\" end return \"acting\" end
function is_terminal() return over() end
function score() return {{ a = 1, b = 0 }} end
"
    );
    vec![
        serving::two_seat_game(dir, "bump", entities(), script),
        serving::two_seat_game(dir, "short", entities(), &short),
    ]
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
    play_game(addr, "bump", tag, n)
}

/// [`play`] for the game `game`.
fn play_game(addr: &str, game: &str, tag: &str, n: usize) -> Played {
    let a = Client::enqueue(addr, game, &format!("{tag}-a"));
    let b = Client::enqueue(addr, game, &format!("{tag}-b"));
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

/// The highest row of `table` the high-water file of `dir` notes.
fn noted_top(dir: &Path, table: &str) -> i64 {
    let high = std::fs::read_to_string(dir.join("rooms.highwater")).expect("high water");
    high.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{table}=")))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {table}= in {high}"))
}

/// The folder's files, each with its size (`-shm` without: SQLite's
/// index of the `-wal`, rewritten by whoever opens the database).
fn files(dir: &Path) -> Vec<(String, Option<u64>)> {
    let mut out: Vec<(String, Option<u64>)> = std::fs::read_dir(dir)
        .expect("dir")
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let len = e.metadata().expect("metadata").len();
            let len = (!name.ends_with("-shm")).then_some(len);
            (name, len)
        })
        .collect();
    out.sort();
    out
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
    let before = files(&dir);
    let line = refused(&games, &dir);
    assert!(
        line.contains("rooms.sqlite3-wal is missing while"),
        "{line}"
    );
    assert!(line.contains("lacks rows the server wrote"), "{line}");
    assert!(line.contains(&format!("reached row {with_wal}")), "{line}");
    // A refusal leaves the folder as it found it (no empty -wal made by
    // the check's opening of the database): the next one says the same.
    assert_eq!(files(&dir), before, "the refused start changed the folder");
    assert_eq!(
        refused(&games, &dir),
        line,
        "a second refusal says the same"
    );
    assert_eq!(files(&dir), before);

    // The -wal and the -shm both gone: no trace but the high-water file.
    remove(&dir, "rooms.sqlite3-shm");
    let before = files(&dir);
    let line = refused(&games, &dir);
    assert_eq!(files(&dir), before, "the refused start changed the folder");
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
        let before = files(&damaged);
        let line = refused(&games, &damaged);
        assert_eq!(
            files(&damaged),
            before,
            "{table}: the refusal changed the folder"
        );
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

    // The last row the high-water file noted (a commit the server made
    // on its own after the last acknowledgement, a timer's, may lie past
    // the last acknowledged one), and any after it.
    let last = copy(&dir, &data.join("last"));
    let noted = noted_top(&last, "log");
    sql(&last, &format!("DELETE FROM log WHERE rowid >= {noted}"));
    let line = refused(&games, &last);
    assert!(
        line.contains(&format!("its log table reached row {noted}")),
        "{line}"
    );

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

/// A finished match is checked at its two ends only (its first row and
/// the row its end was written in): those deleted are refused, while a
/// row deleted between them is left to its replay when the match is
/// loaded, which stops the room (`503 room_unavailable`) — the start
/// does not read every finished match's rows.
#[test]
fn finished_matches_are_checked_at_their_ends() {
    let data = scratch("log-damage-finished");
    let games = bump(&data);
    let dir = data.join("d");
    let mut server = Server::start(&games, &dir, &[]);
    let over = play_game(&server.addr, "short", "f", SHORT / 2);
    let mut running = play(&server.addr, "r", 1);
    let status = get_json(&server.addr, &format!("/matches/{}", over.id()));
    assert_eq!(status["status"], "finished", "{status}");
    server.kill();
    let f = over.id().to_owned();
    let rows = |dir: &Path| -> Vec<i64> {
        let db = rusqlite::Connection::open(dir.join("rooms.sqlite3")).expect("the log");
        let mut s = db
            .prepare("SELECT rowid FROM log WHERE match_id = ?1 ORDER BY rowid")
            .expect("query");
        let rows = s.query_map([&f], |r| r.get(0)).expect("rows");
        rows.collect::<Result<_, _>>().expect("rows")
    };
    let mine = rows(&dir);
    assert!(mine.len() >= 3, "{mine:?}");

    for (name, row, words) in [
        (
            "first",
            mine[0],
            format!("match {f}: its log rows from row {} are gone", mine[0]),
        ),
        (
            "end",
            mine[mine.len() - 1],
            format!("match {f}: its last log rows are gone"),
        ),
    ] {
        let damaged = copy(&dir, &data.join(name));
        sql(&damaged, &format!("DELETE FROM log WHERE rowid = {row}"));
        let line = refused(&games, &damaged);
        assert!(line.contains(&words), "{name}: {line}");
    }

    let middle = copy(&dir, &data.join("middle"));
    sql(
        &middle,
        &format!("DELETE FROM log WHERE rowid = {}", mine[1]),
    );
    let server = Server::start(&games, &middle, &[]);
    acks_hold(&mut running, &server.addr);
    let r = request(
        &server.addr,
        "GET",
        &format!("/matches/{f}/spectate"),
        None,
        None,
    );
    assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["code"], "room_unavailable");
}

/// A malformed row (a value of the wrong type where recovery reads it)
/// is refused as that, naming the table and the row, not as a database
/// SQLite cannot read.
#[test]
fn a_malformed_row_is_named() {
    let data = scratch("log-damage-malformed");
    let games = bump(&data);
    let dir = data.join("d");
    let mut server = Server::start(&games, &dir, &[]);
    let p = play(&server.addr, "m", 2);
    server.kill();
    let m = p.id().to_owned();
    for (name, change, words) in [
        (
            "first",
            format!("UPDATE log SET first = 'x' WHERE rowid = (SELECT max(rowid) FROM log WHERE match_id = '{m}')"),
            "of its log table holds text where an integer belongs in its first column",
        ),
        (
            "lines",
            format!("UPDATE log SET lines = x'0a' WHERE rowid = (SELECT max(rowid) FROM log WHERE match_id = '{m}')"),
            "of its log table holds a blob where text belongs in its lines column",
        ),
        (
            "seats",
            format!("UPDATE matches SET seats = 'not json' WHERE id = '{m}'"),
            "of its matches table holds text that is not a list of seats (JSON) in its seats column",
        ),
    ] {
        let damaged = copy(&dir, &data.join(name));
        sql(&damaged, &change);
        let line = refused(&games, &damaged);
        assert!(line.contains("rooms.sqlite3 holds a malformed row: row "), "{name}: {line}");
        assert!(line.contains(words), "{name}: {line}");
        assert!(!line.contains("cannot be read as a SQLite database"), "{name}: {line}");
    }
}

/// Seat tokens deleted (a running match's, then one of them, neither
/// the newest rows of their table, which the high-water file would
/// catch): refused, naming the match and seat, where starting would
/// answer those seats 401. A log this version never opened, whose seat lost its token (a
/// server before it wrote the seat before the token, and was killed in
/// between), starts with a warning naming the seat, and is checked from
/// then on.
#[test]
fn deleted_seat_tokens_are_refused() {
    let data = scratch("log-damage-tokens");
    let games = bump(&data);
    let dir = data.join("d");
    let mut server = Server::start(&games, &dir, &[]);
    let mut p = play(&server.addr, "m", 2);
    play(&server.addr, "k", 1);
    server.kill();
    let m = p.id().to_owned();
    let (a, b) = (p.seats[0].seat.clone(), p.seats[1].seat.clone());

    let all = copy(&dir, &data.join("all"));
    sql(&all, &format!("DELETE FROM tokens WHERE match_id = '{m}'"));
    let line = refused(&games, &all);
    assert!(
        line.contains("has lost rows or seat tokens of its matches"),
        "{line}"
    );
    for seat in [&a, &b] {
        assert!(
            line.contains(&format!(
                "match {m}: its seat {seat} was taken, but its seat token is gone"
            )),
            "{line}"
        );
    }
    let one = copy(&dir, &data.join("one"));
    sql(
        &one,
        &format!("DELETE FROM tokens WHERE match_id = '{m}' AND seat = '{b}'"),
    );
    let line = refused(&games, &one);
    assert!(line.contains(&format!("its seat {b} was taken")), "{line}");
    assert!(!line.contains(&format!("its seat {a} was taken")), "{line}");

    // As a server before this version could leave it: no note yet.
    sql(&one, "DELETE FROM meta WHERE key = 'tokenless_seats'");
    let mut server = Server::start(&games, &one, &[]);
    assert!(
        server.stderr().contains(&format!(
            "match {m}: its seat {b} was taken, but the log holds no seat token for it"
        )),
        "{}",
        server.stderr()
    );
    for s in &mut p.seats {
        s.addr = server.addr.clone();
    }
    assert_eq!(counter(&mut p), json!(4));
    server.kill();
    let server = Server::start(&games, &one, &[]);
    drop(server);
    sql(
        &one,
        &format!("DELETE FROM tokens WHERE match_id = '{m}' AND seat = '{a}'"),
    );
    let line = refused(&games, &one);
    assert!(line.contains(&format!("its seat {a} was taken")), "{line}");
    assert!(!line.contains(&format!("its seat {b} was taken")), "{line}");
}

/// A `--data` folder that was there already, empty (or holding other
/// things), gets a new log with a warning naming it; a folder the server
/// makes gets an info line only.
#[test]
fn an_existing_folder_without_a_log_is_warned_about() {
    let data = scratch("log-damage-empty");
    let games = bump(&data);
    let made = data.join("made");
    let server = Server::start(&games, &made, &[]);
    let err = server.stderr();
    assert!(err.contains("made a new log in"), "{err}");
    assert!(!err.contains("WARN"), "{err}");
    drop(server);

    for (name, other) in [("empty", None), ("other", Some("notes.txt"))] {
        let dir = data.join(name);
        std::fs::create_dir_all(&dir).expect("dir");
        if let Some(file) = other {
            std::fs::write(dir.join(file), "x").expect("file");
        }
        let server = Server::start(&games, &dir, &[]);
        let err = server.stderr();
        let line = err
            .lines()
            .find(|l| l.contains("WARN") && l.contains("a new, empty log"))
            .unwrap_or_else(|| panic!("{name}: no warning in {err}"));
        let what = if other.is_some() {
            "was there already, without a log"
        } else {
            "was there already, empty"
        };
        assert!(
            line.contains(&format!("{} {what}", dir.display())),
            "{line}"
        );
        assert!(line.contains("no matches from before are here"), "{line}");
        assert!(line.contains("check the path or the mount"), "{line}");
        play(&server.addr, "m", 1);
    }
}

/// A full disk does not keep a server from starting (the start rewrites
/// `rooms.highwater` through a new file, which a full disk refuses): it is
/// rewritten in place instead, or, when that fails too, the server warns
/// and runs without noting; no temporary file is left. The full disk is
/// `/dev/full`, which answers every write "No space left on device":
/// `rooms.highwater.tmp` (then `rooms.highwater` too) made a link to it.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_does_not_keep_the_server_from_starting() {
    let data = scratch("log-damage-full");
    let games = bump(&data);
    let dir = data.join("d");
    let mut server = Server::start(&games, &dir, &[]);
    let mut p = play(&server.addr, "m", 2);
    server.kill();
    let tmp = dir.join("rooms.highwater.tmp");
    let was = noted_top(&dir, "log");

    std::os::unix::fs::symlink("/dev/full", &tmp).expect("link");
    let mut server = Server::start(&games, &dir, &[]);
    let err = server.stderr();
    assert!(
        err.contains("No space left on device") && err.contains("in place instead"),
        "{err}"
    );
    assert!(
        std::fs::symlink_metadata(&tmp).is_err(),
        "the temporary file is left"
    );
    acks_hold(&mut p, &server.addr);
    more(&mut p, "in-place", 1);
    server.kill();
    assert!(noted_top(&dir, "log") > was, "the in-place file notes on");

    // Neither a new file nor the file there can be written.
    remove(&dir, "rooms.highwater");
    std::os::unix::fs::symlink("/dev/full", dir.join("rooms.highwater")).expect("link");
    std::os::unix::fs::symlink("/dev/full", &tmp).expect("link");
    let server = Server::start(&games, &dir, &[]);
    let err = server.stderr();
    assert!(
        err.contains("nor can it be rewritten in place")
            && err.contains("the server runs without noting"),
        "{err}"
    );
    assert!(
        std::fs::symlink_metadata(&tmp).is_err(),
        "the temporary file is left"
    );
    acks_hold(&mut p, &server.addr);
}

/// `kill -9` in the middle of play — three matches pressing at once from
/// six threads, players joining new matches meanwhile, the kill once a
/// number of presses (another each round) were acknowledged — never
/// leaves a folder the next start refuses; each start keeps every
/// acknowledged press once (a match's counter is at least its
/// acknowledged presses and at most those sent) and answers every
/// acknowledged id as before. Bounded: six rounds, at most 30 presses per
/// thread and 6 joins each.
#[test]
fn kill_9_during_concurrent_play_always_restarts() {
    use std::sync::{Arc, Mutex};
    const ROUNDS: u64 = 6;
    const PER_SEAT: usize = 30;
    const FLAGS: [&str; 4] = ["--rate", "100000", "--burst", "100000"];
    let data = scratch("log-damage-storm");
    let games = bump(&data);
    let dir = data.join("d");
    let mut server = Server::start(&games, &dir, &FLAGS);
    let mut matches: Vec<Played> = (0..3)
        .map(|k| play(&server.addr, &format!("s{k}"), 1))
        .collect();
    let mut sent: Vec<usize> = matches.iter().map(|p| p.acks.len()).collect();
    for round in 0..ROUNDS {
        let acked = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for (k, p) in matches.iter().enumerate() {
            for (s, seat) in p.seats.iter().enumerate() {
                let (addr, seat, acked) = (server.addr.clone(), seat.clone(), acked.clone());
                threads.push(std::thread::spawn(move || {
                    let mut tried = 0;
                    for i in 0..PER_SEAT {
                        let id = format!("r{round}-{k}-{s}-{i}");
                        let body = json!({"clientActionId": id, "action": press()}).to_string();
                        let path = format!("/matches/{}/actions", seat.match_id);
                        tried += 1;
                        // No answer, or one cut short: the server was killed.
                        let answer = try_request(
                            &addr,
                            "POST",
                            &path,
                            seat.token.as_deref(),
                            Some(body.as_bytes()),
                        )
                        .filter(|r| r.status == 200)
                        .and_then(|r| serde_json::from_slice::<Value>(&r.body).ok());
                        let Some(answer) = answer else {
                            break;
                        };
                        assert_eq!(answer["accepted"], true, "{answer}");
                        if let Ok(mut a) = acked.lock() {
                            a.push((k, s, id, answer));
                        }
                    }
                    (k, tried)
                }));
            }
        }
        let addr = server.addr.clone();
        let joiner = std::thread::spawn(move || {
            for i in 0..6 {
                let body = json!({"name": format!("j{round}-{i}")}).to_string();
                if try_request(
                    &addr,
                    "POST",
                    "/games/bump/enqueue",
                    None,
                    Some(body.as_bytes()),
                )
                .is_none()
                {
                    break;
                }
            }
        });
        // The kill: once `target` presses of this round were acknowledged
        // (or every thread is done; the deadline only keeps a broken
        // server from hanging the test).
        let target = 6 + usize::try_from(round).expect("small") * 17;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while acked.lock().map_or(0, |a| a.len()) < target
            && !threads.iter().all(std::thread::JoinHandle::is_finished)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        server.kill();
        for t in threads {
            let (k, tried) = t.join().expect("a seat's thread");
            sent[k] += tried;
        }
        joiner.join().expect("the joiner");
        let acked = Arc::try_unwrap(acked)
            .expect("joined")
            .into_inner()
            .expect("acks");
        for (k, s, id, answer) in acked {
            matches[k].acks.push((s, id, answer));
        }
        server = Server::start(&games, &dir, &FLAGS);
        assert!(
            !server.stderr().contains("is damaged"),
            "round {round}: {}",
            server.stderr()
        );
        for (k, p) in matches.iter_mut().enumerate() {
            for seat in &mut p.seats {
                seat.addr = server.addr.clone();
            }
            let n = counter(p).as_u64().expect("a count");
            let n = usize::try_from(n).expect("small");
            assert!(
                p.acks.len() <= n && n <= sent[k],
                "round {round}, match {k}: {n} counted, {} acknowledged, {} sent",
                p.acks.len(),
                sent[k]
            );
        }
    }
    for p in &mut matches {
        let n = counter(p);
        for (s, id, answer) in p.acks.clone() {
            assert_eq!(
                p.seats[s].act_as(&id, &press()),
                answer,
                "{id} was acknowledged"
            );
        }
        assert_eq!(
            counter(p),
            n,
            "retried acknowledged ids are not counted again"
        );
    }
}
