//! The durable room log (docs/server.md, Durability): the [`RoomLog`]
//! trait the rooms write through, and [`SqliteLog`], its embedded
//! implementation: SQLite in WAL mode with `synchronous=FULL`, one writer
//! thread that commits every append waiting for it in one transaction (a
//! group commit) and answers each only once that commit is on disk.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc;
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};
use tokio::sync::oneshot;

use crate::folder::HighWater;

/// A store failure, as text for a log line or a 500 answer.
pub type StoreResult<T> = Result<T, String>;

/// A match as the store keeps it.
#[derive(Clone, Debug)]
pub struct MatchRow {
    /// Its id.
    pub id: String,
    /// The game's id.
    pub game_id: String,
    /// What the room was started from: the record header (game, seed,
    /// match config), JSON.
    pub header: String,
    /// The seats, JSON: `{seat: {"playerId", "name", "bot"}}`.
    pub seats: String,
    /// `open` (seats to fill), `running`, `finished`.
    pub status: String,
    /// The result once finished, JSON (`{"status":"match_over",…}`).
    pub result: Option<String>,
    /// When it was created (ms since the Unix epoch, for listings).
    pub created_ms: i64,
}

/// An idempotency key's answer: a seat's `clientActionId` and what the
/// server answered it.
#[derive(Clone, Debug)]
pub struct Ack {
    /// The seat.
    pub seat: String,
    /// The client's id for the attempt.
    pub client_id: String,
    /// A digest of the action it carried (a reused id with another action
    /// is refused).
    pub action_digest: String,
    /// The answer, JSON.
    pub answer: String,
}

/// One append: the record lines a room produced for one input, in order,
/// the answer to the client that sent it, and the match's new status when
/// this input ended it — all durable together or not at all.
#[derive(Debug, Default)]
pub struct Entry {
    /// The match.
    pub match_id: String,
    /// The number of the first line (lines are numbered from 0 per match).
    pub first: u64,
    /// Record lines (docs/formats.md, The record), separated by newlines
    /// (none after the last).
    pub lines: String,
    /// The answer to the client's attempt, if the input was one.
    pub ack: Option<Ack>,
    /// `finished` and the result, when the input ended the match.
    pub finished: Option<String>,
}

/// Where rooms keep what they did, so a restarted server can recover
/// them: the embedded [`SqliteLog`] now, a distributed log (one subject per
/// room, expected-sequence appends) later.
pub trait RoomLog: Send + Sync {
    /// Appends `entry`; the answer comes once it is durable.
    fn append(&self, entry: Entry) -> oneshot::Receiver<StoreResult<()>>;
    /// Creates or replaces a match's row, durably.
    fn put_match(&self, row: MatchRow) -> oneshot::Receiver<StoreResult<()>>;
    /// Keeps a seat token's digest for a match's seat, durably.
    fn put_token(
        &self,
        digest: String,
        match_id: String,
        seat: String,
    ) -> oneshot::Receiver<StoreResult<()>>;
    /// Every match, oldest first.
    fn matches(&self) -> StoreResult<Vec<MatchRow>>;
    /// Every token digest with its match and seat.
    fn tokens(&self) -> StoreResult<Vec<(String, String, String)>>;
    /// These matches' histories: each one's record lines in order and its
    /// answered attempts (one pass over the log for all of them).
    fn histories(&self, match_ids: &[String]) -> StoreResult<HashMap<String, History>>;
    /// Keeps a version of a game's files (its game.json and scripts, as
    /// JSON) under its digest, durably; a version kept already stays.
    fn put_game(&self, version: String, files: String) -> oneshot::Receiver<StoreResult<()>>;
    /// A version of a game's files kept by [`RoomLog::put_game`].
    fn game_files(&self, version: &str) -> StoreResult<Option<String>>;
    /// Answers once everything handed to the log before it is durable
    /// (the server's stop waits for it: docs/server.md, Stopping).
    fn flush(&self) -> oneshot::Receiver<StoreResult<()>>;
}

/// What the log holds of one match.
#[derive(Debug, Default)]
pub struct History {
    /// Its record lines, in order.
    pub lines: Vec<String>,
    /// Its answered attempts.
    pub acks: Vec<Ack>,
}

enum Job {
    Append(Entry, oneshot::Sender<StoreResult<()>>),
    Match(MatchRow, oneshot::Sender<StoreResult<()>>),
    Token(String, String, String, oneshot::Sender<StoreResult<()>>),
    Game(String, String, oneshot::Sender<StoreResult<()>>),
    /// Writes nothing: answered with the commit of the group it is in,
    /// after every job handed over before it.
    Flush(oneshot::Sender<StoreResult<()>>),
}

/// The embedded log: a SQLite database file under the data folder
/// (`crate::folder` opens the server's, after checking it).
pub struct SqliteLog {
    jobs: Mutex<mpsc::Sender<Job>>,
    reader: Mutex<Connection>,
}

/// The log's tables. Rows are only ever added to them (or, for `matches`
/// and `tokens`, replaced by `INSERT OR REPLACE`, which never lowers a
/// table's highest rowid; `spans` rows gain their end): the high-water
/// check at start (`crate::audit::Tops`) relies on it.
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS matches(
    id TEXT PRIMARY KEY, game_id TEXT NOT NULL, header TEXT NOT NULL,
    seats TEXT NOT NULL, status TEXT NOT NULL, result TEXT,
    created_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tokens(
    digest TEXT PRIMARY KEY, match_id TEXT NOT NULL, seat TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS spans(
    match_id TEXT PRIMARY KEY, first_row INTEGER NOT NULL, last_row INTEGER);
CREATE TABLE IF NOT EXISTS games(
    version TEXT PRIMARY KEY, files TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS log(
    match_id TEXT NOT NULL, first INTEGER NOT NULL, lines TEXT NOT NULL,
    seat TEXT, client_id TEXT, action_digest TEXT, answer TEXT);
CREATE TABLE IF NOT EXISTS meta(
    key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

/// One match's rows of the log, between two rowids.
const ONE_MATCH: &str = "WHERE rowid >= ?2 AND rowid <= ?3 AND match_id = ?1 ORDER BY rowid";

/// The rowids one match's rows lie between: its span, or the whole log for
/// a match the log has none for (written before spans were kept).
fn span(c: &Connection, match_id: &str) -> rusqlite::Result<(i64, i64)> {
    let found: Option<(i64, Option<i64>)> = c
        .prepare_cached("SELECT first_row, last_row FROM spans WHERE match_id = ?1")?
        .query_row([match_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(found.map_or((i64::MIN, i64::MAX), |(first, last)| {
        (first, last.unwrap_or(i64::MAX))
    }))
}

/// The query plan SQLite makes for reading one match's rows (for tests:
/// it should search the table by rowid, not scan it).
///
/// # Errors
/// The log cannot be read.
pub fn one_match_plan(log: &SqliteLog) -> StoreResult<String> {
    log.read(|c| {
        let mut s = c.prepare(&format!(
            "EXPLAIN QUERY PLAN SELECT lines FROM log {ONE_MATCH}"
        ))?;
        let rows = s.query_map(params!["m", 1, 2], |r| r.get::<_, String>(3))?;
        rows.collect::<rusqlite::Result<Vec<String>>>()
            .map(|v| v.join("; "))
    })
}

/// Most appends committed in one transaction.
const GROUP_MAX: usize = 4096;

/// A connection to the log at `path`: WAL, `synchronous=FULL`.
///
/// # Errors
/// The database cannot be opened or set up.
pub(crate) fn open(path: &Path) -> StoreResult<Connection> {
    let c = Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    c.pragma_update(None, "journal_mode", "WAL")
        .and_then(|()| c.pragma_update(None, "synchronous", "FULL"))
        .and_then(|()| c.busy_timeout(std::time::Duration::from_secs(5)))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(c)
}

impl SqliteLog {
    /// Opens (or creates) the log at `path`, with no checks, and starts
    /// its writer thread: for tools and tests. The server opens its data
    /// folder's log through `folder::open_log`, which refuses a damaged
    /// one.
    ///
    /// # Errors
    /// The database cannot be opened or its tables made.
    pub fn open(path: &Path) -> StoreResult<SqliteLog> {
        let writer = open(path)?;
        writer
            .execute_batch(SCHEMA)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        SqliteLog::start(path, writer, None)
    }

    /// Starts the log over `writer`, a connection to the database at
    /// `path` (a second one is opened to read), noting what each commit
    /// wrote in `high` when given.
    ///
    /// # Errors
    /// The reader cannot be opened, or the writer thread started.
    pub(crate) fn start(
        path: &Path,
        writer: Connection,
        high: Option<HighWater>,
    ) -> StoreResult<SqliteLog> {
        let reader = open(path)?;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("room-log".into())
            .spawn(move || write_loop(writer, &rx, high))
            .map_err(|e| format!("cannot start the log's writer: {e}"))?;
        Ok(SqliteLog {
            jobs: Mutex::new(tx),
            reader: Mutex::new(reader),
        })
    }

    fn send(&self, job: Job) {
        // A send fails only once the writer has stopped; the job's answer
        // channel is then dropped, which its waiter reads as a failure.
        if let Ok(tx) = self.jobs.lock() {
            let _ = tx.send(job);
        }
    }

    fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> StoreResult<T> {
        let c = self
            .reader
            .lock()
            .map_err(|_| "the log's reader failed earlier".to_owned())?;
        f(&c).map_err(|e| format!("reading the room log: {e}"))
    }
}

/// The writer: waits for a job, takes every job already waiting too, runs
/// them in one transaction, commits (fsync), notes how far the tables
/// now reach in the high-water file, then answers them all.
fn write_loop(mut c: Connection, rx: &mpsc::Receiver<Job>, mut high: Option<HighWater>) {
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        while group.len() < GROUP_MAX {
            match rx.try_recv() {
                Ok(j) => group.push(j),
                Err(_) => break,
            }
        }
        let outcome = commit(&mut c, &group);
        if outcome.is_ok() {
            // synchronous=FULL: each commit syncs the WAL once.
            metrics::counter!("digipology_log_commits_total").increment(1);
        }
        if let (Ok(()), Some(h)) = (&outcome, high.as_mut()) {
            h.note(&c);
        }
        // A group holds at most GROUP_MAX jobs: exact as a double.
        metrics::histogram!("digipology_log_group_size")
            .record(f64::from(u32::try_from(group.len()).unwrap_or(u32::MAX)));
        for job in group {
            let done = match job {
                Job::Append(_, d)
                | Job::Match(_, d)
                | Job::Token(_, _, _, d)
                | Job::Game(_, _, d)
                | Job::Flush(d) => d,
            };
            let _ = done.send(outcome.clone());
        }
    }
}

fn commit(c: &mut Connection, group: &[Job]) -> StoreResult<()> {
    let fail = |e: rusqlite::Error| format!("writing the room log: {e}");
    let tx = c.transaction().map_err(fail)?;
    for job in group {
        match job {
            Job::Append(e, _) => append_in(&tx, e).map_err(fail)?,
            Job::Match(m, _) => {
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO matches(id, game_id, header, seats, status, result, created_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        m.id, m.game_id, m.header, m.seats, m.status, m.result, m.created_ms
                    ])
                })
                .map_err(fail)?;
            }
            Job::Game(v, files, _) => {
                tx.prepare_cached("INSERT OR IGNORE INTO games(version, files) VALUES (?1, ?2)")
                    .and_then(|mut st| st.execute(params![v, files]))
                    .map_err(fail)?;
            }
            Job::Token(d, m, s, _) => {
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO tokens(digest, match_id, seat) VALUES (?1, ?2, ?3)",
                )
                .and_then(|mut st| st.execute(params![d, m, s]))
                .map_err(fail)?;
            }
            Job::Flush(_) => {}
        }
    }
    tx.commit().map_err(fail)
}

/// One row per append, in a plain rowid table: a group's rows land on the
/// table's last pages, so a commit writes what it adds, not a page per
/// room (an index per room would scatter every commit over the rooms).
fn append_in(tx: &rusqlite::Transaction<'_>, e: &Entry) -> rusqlite::Result<()> {
    let a = e.ack.as_ref();
    tx.prepare_cached(
        "INSERT INTO log(match_id, first, lines, seat, client_id, action_digest, answer)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        e.match_id,
        i64::try_from(e.first).unwrap_or(i64::MAX),
        e.lines,
        a.map(|a| &a.seat),
        a.map(|a| &a.client_id),
        a.map(|a| &a.action_digest),
        a.map(|a| &a.answer),
    ])?;
    // Where the match's rows begin and, once it is over, end: a read of
    // one match scans that span, not the whole log (one small row per
    // match, written at its first and last append only).
    let row = tx.last_insert_rowid();
    if e.first == 0 {
        tx.prepare_cached("INSERT OR IGNORE INTO spans(match_id, first_row) VALUES (?1, ?2)")?
            .execute(params![e.match_id, row])?;
    }
    if let Some(result) = &e.finished {
        tx.prepare_cached("UPDATE matches SET status = 'finished', result = ?2 WHERE id = ?1")?
            .execute(params![e.match_id, result])?;
        tx.prepare_cached("UPDATE spans SET last_row = ?2 WHERE match_id = ?1")?
            .execute(params![e.match_id, row])?;
    }
    Ok(())
}

impl RoomLog for SqliteLog {
    fn append(&self, entry: Entry) -> oneshot::Receiver<StoreResult<()>> {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Append(entry, tx));
        rx
    }

    fn put_match(&self, row: MatchRow) -> oneshot::Receiver<StoreResult<()>> {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Match(row, tx));
        rx
    }

    fn put_token(
        &self,
        digest: String,
        match_id: String,
        seat: String,
    ) -> oneshot::Receiver<StoreResult<()>> {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Token(digest, match_id, seat, tx));
        rx
    }

    fn matches(&self) -> StoreResult<Vec<MatchRow>> {
        self.read(|c| {
            let mut s = c.prepare(
                "SELECT id, game_id, header, seats, status, result, created_ms FROM matches
                 ORDER BY created_ms, id",
            )?;
            let rows = s.query_map([], |r| {
                Ok(MatchRow {
                    id: r.get(0)?,
                    game_id: r.get(1)?,
                    header: r.get(2)?,
                    seats: r.get(3)?,
                    status: r.get(4)?,
                    result: r.get(5)?,
                    created_ms: r.get(6)?,
                })
            })?;
            rows.collect()
        })
    }

    fn put_game(&self, version: String, files: String) -> oneshot::Receiver<StoreResult<()>> {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Game(version, files, tx));
        rx
    }

    fn game_files(&self, version: &str) -> StoreResult<Option<String>> {
        self.read(|c| {
            c.prepare_cached("SELECT files FROM games WHERE version = ?1")?
                .query_row([version], |r| r.get(0))
                .optional()
        })
    }

    fn flush(&self) -> oneshot::Receiver<StoreResult<()>> {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Flush(tx));
        rx
    }

    fn tokens(&self) -> StoreResult<Vec<(String, String, String)>> {
        self.read(|c| {
            let mut s = c.prepare("SELECT digest, match_id, seat FROM tokens")?;
            let rows = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect()
        })
    }

    fn histories(&self, match_ids: &[String]) -> StoreResult<HashMap<String, History>> {
        let mut out: HashMap<String, History> = match_ids
            .iter()
            .map(|m| (m.clone(), History::default()))
            .collect();
        if match_ids.is_empty() {
            return Ok(out);
        }
        self.read(|c| {
            // One match: its rows only, within its span when the log has
            // one for it (else a scan of the table, as the log has no
            // index per match); several: one pass over the rows from the
            // first of the earliest one's (every row, when one has no
            // span).
            let cols = "SELECT match_id, lines, seat, client_id, action_digest, answer FROM log";
            let (mut s, arg) = match match_ids {
                [one] => (c.prepare(&format!("{cols} {ONE_MATCH}"))?, Some(one)),
                _ => (
                    c.prepare(&format!("{cols} WHERE rowid >= ?1 ORDER BY rowid"))?,
                    None,
                ),
            };
            let mut rows = match arg {
                Some(id) => {
                    let (first, last) = span(c, id)?;
                    s.query(params![id, first, last])?
                }
                None => {
                    let mut from = i64::MAX;
                    for id in match_ids {
                        from = from.min(span(c, id)?.0);
                    }
                    s.query([from])?
                }
            };
            while let Some(r) = rows.next()? {
                let id: String = r.get(0)?;
                let Some(h) = out.get_mut(&id) else { continue };
                let lines: String = r.get(1)?;
                h.lines.extend(lines.split('\n').map(str::to_owned));
                let seat: Option<String> = r.get(2)?;
                if let Some(seat) = seat {
                    h.acks.push(Ack {
                        seat,
                        client_id: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                        action_digest: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                        answer: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                    });
                }
            }
            Ok(())
        })?;
        Ok(out)
    }
}
