//! The data folder (docs/server.md, Log damage): the log database
//! (`rooms.sqlite3`, with SQLite's `-wal` and `-shm` beside it), the
//! marker naming the log (`rooms.id`), the high-water file noting how far
//! the server wrote (`rooms.highwater`), and the checks that refuse a
//! folder whose log lost something before the server serves from it.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};

use crate::audit::{self, Fault, Tops};
use crate::store::{self, SqliteLog};

/// The log database.
pub const DATABASE: &str = "rooms.sqlite3";
/// SQLite's write-ahead log of it: the newest commits, until SQLite
/// copies them into the database (a checkpoint).
pub const WAL: &str = "rooms.sqlite3-wal";
/// SQLite's index of the write-ahead log: rebuilt when missing.
pub const SHM: &str = "rooms.sqlite3-shm";
/// The marker: the id of the folder's log, which the database keeps too.
pub const MARKER: &str = "rooms.id";
/// How far the server wrote each table, noted after each commit that
/// added rows.
pub const HIGHWATER: &str = "rooms.highwater";
/// The lock file a running server holds (`lib.rs`): not part of the log.
const LOCK: &str = "lock";
/// The `meta` key noting the seats taken without a seat token when this
/// version first opened the log (written before tokens were made durable
/// ahead of the seat): those are not refused.
const TOKENLESS: &str = "tokenless_seats";

/// The high-water record's length: always the same, so each rewrite in
/// place covers the last one whole.
const RECORD_LEN: usize = 256;
/// The high-water record's first words.
const RECORD_TAG: &str = "digipology-highwater 1";
/// Longest log id taken from a file.
const ID_MAX: usize = 64;
/// Most bytes read of the marker or the high-water file (each is far
/// shorter; more is not one of them).
const READ_MAX: u64 = 64 * 1024;

/// Opens the data folder's log for the server, after checking it: a new
/// folder gets a new log (with a warning when `existed`, the folder being
/// there before this start), a folder written before the marker existed
/// is adopted, and a folder whose log lost its database, its write-ahead
/// log, tables, rows or seat tokens is refused with what is missing and
/// what to do. A refusal leaves the folder's files as they were.
///
/// # Errors
/// The one-paragraph refusal, or a file that cannot be read or written.
pub fn open_log(data: &Path, existed: bool) -> Result<SqliteLog, String> {
    let mut found = Found::look(data)?;
    found.existed = existed;
    match (found.marker.is_some(), found.db) {
        (true, None) => Err(found.refuse(
            &format!(
                "{}, its log database, is missing ({} says the folder has one)",
                found.path(DATABASE),
                found.path(MARKER)
            ),
            "",
        )),
        (true, Some(0)) => Err(found.refuse(
            &format!(
                "{}, its log database, is empty (0 bytes)",
                found.path(DATABASE)
            ),
            "",
        )),
        (false, None | Some(0)) => match found.leftover() {
            Some(left) => Err(found.refuse(
                &format!(
                    "{} is missing or empty, but {} is still here: the folder held a log",
                    found.path(DATABASE),
                    found.path(left)
                ),
                "",
            )),
            None => create(&found),
        },
        _ => existing(&found),
    }
}

/// What the folder holds, looked at before SQLite opens anything (SQLite
/// makes a missing `-wal` and `-shm` when it opens the database).
struct Found {
    data: PathBuf,
    /// The log id `rooms.id` names.
    marker: Option<String>,
    /// The database's size, when it is there.
    db: Option<u64>,
    wal: bool,
    shm: bool,
    /// `rooms.highwater`: its log id and tops, or why it cannot be read.
    high: Option<Result<(String, Tops), String>>,
    /// The folder was there before this start.
    existed: bool,
    /// It holds nothing but the lock a server takes.
    empty: bool,
}

impl Found {
    fn look(data: &Path) -> Result<Found, String> {
        let there = |name: &str| std::fs::metadata(data.join(name)).ok();
        let mut found = Found {
            data: data.to_path_buf(),
            marker: None,
            db: there(DATABASE).map(|m| m.len()),
            wal: there(WAL).is_some(),
            shm: there(SHM).is_some(),
            high: match read(&data.join(HIGHWATER)) {
                Ok(bytes) => bytes.map(|b| parse_record(&b)),
                Err(e) => Some(Err(e)),
            },
            existed: false,
            empty: std::fs::read_dir(data)
                .map_err(|e| format!("{}: {e}", data.display()))?
                .flatten()
                .all(|e| e.file_name() == LOCK),
        };
        if let Some(bytes) = read(&data.join(MARKER))? {
            let id = parse_marker(&bytes).ok_or_else(|| {
                found.refuse(
                    &format!("{} is not a log marker", found.path(MARKER)),
                    &format!(
                        "; or, if {} is whole, delete {}: the server then takes the log's id from the database",
                        found.path(DATABASE),
                        found.path(MARKER)
                    ),
                )
            })?;
            found.marker = Some(id);
        }
        Ok(found)
    }

    fn path(&self, name: &str) -> String {
        self.data.join(name).display().to_string()
    }

    /// A file only a folder that held a log has.
    fn leftover(&self) -> Option<&'static str> {
        [
            (self.wal, WAL),
            (self.shm, SHM),
            (self.high.is_some(), HIGHWATER),
        ]
        .into_iter()
        .find_map(|(there, name)| there.then_some(name))
    }

    /// What a missing write-ahead log says, when its index is still here:
    /// SQLite removes the two together, at a clean close, so the `-wal`
    /// was deleted by hand — with the newest writes in it.
    fn wal_note(&self) -> String {
        if self.wal || !self.shm {
            return String::new();
        }
        format!(
            "; and {} is missing while {} is still here: the write-ahead log was deleted after the server stopped (SQLite removes the two together)",
            self.path(WAL),
            self.path(SHM)
        )
    }

    /// The refusal: what is wrong (`what`), why the server stops, what an
    /// operator can do (`extra`: a way out of this finding's own).
    fn refuse(&self, what: &str, extra: &str) -> String {
        format!(
            "the log in {} is damaged, so the server does not start: {what}. Serving from it would lose what it acknowledged (matches, seat tokens, actions: a retry of an acknowledged clientActionId would be taken as a new action). Restore the whole folder from a backup, or move it away (or give --data another folder) to start afresh without its matches{extra}. docs/server.md, Log damage, says more.",
            self.data.display()
        )
    }
}

/// A file's bytes (at most [`READ_MAX`]), `None` when it is not there.
fn read(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(format!("{} is not a regular file", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(fail(e)),
    }
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|f| f.take(READ_MAX).read_to_end(&mut bytes))
        .map_err(fail)?;
    Ok(Some(bytes))
}

/// A new folder's log: the database is made whole under another name and
/// renamed into place (so a database without its tables is never this
/// server's), then the marker, then the high-water file.
fn create(found: &Found) -> Result<SqliteLog, String> {
    let data = &found.data;
    let id = new_id()?;
    let db = data.join(DATABASE);
    let fresh = data.join(format!("{DATABASE}.new"));
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let _ = std::fs::remove_file(data.join(format!("{DATABASE}.new{suffix}")));
    }
    build_new(&fresh, &id).map_err(|e| format!("{}: {e}", fresh.display()))?;
    std::fs::rename(&fresh, &db)
        .and_then(|()| sync_dir(data))
        .map_err(|e| format!("{}: {e}", db.display()))?;
    write_atomic(data, MARKER, marker_text(&id).as_bytes())?;
    let writer = store::open(&db)?;
    let high = HighWater::create(data, &id, Tops::default());
    if found.existed {
        let what = if found.empty {
            "was there already, empty"
        } else {
            "was there already, without a log"
        };
        tracing::warn!(
            "{} {what}: the server made a new, empty log in it ({}): no matches from before are here; if this folder should hold a log, check the path or the mount",
            data.display(),
            db.display()
        );
    } else {
        tracing::info!("made a new log in {}", db.display());
    }
    SqliteLog::start(&db, writer, high)
}

/// The new database: every table, and its id, in one transaction.
fn build_new(path: &Path, id: &str) -> rusqlite::Result<()> {
    let mut c = Connection::open(path)?;
    c.pragma_update(None, "synchronous", "FULL")?;
    let tx = c.transaction()?;
    tx.execute_batch(store::SCHEMA)?;
    tx.execute("INSERT INTO meta(key, value) VALUES ('log_id', ?1)", [id])?;
    tx.execute(
        "INSERT INTO meta(key, value) VALUES (?1, '[]')",
        [TOKENLESS],
    )?;
    tx.commit()?;
    c.close().map_err(|(_, e)| e)
}

/// What to do with an existing database's tables.
enum Tables {
    /// All there.
    Whole,
    /// A log written before later tables (and the marker) existed: make
    /// what it lacks.
    Adopt,
    /// No table at all, in a folder that never held a log: a new one.
    New,
}

/// What the checks of an existing database decided.
enum Checked {
    /// No table at all, in a folder that never held a log: a new log.
    New,
    /// The log, whole: its id, whether it is taken in now, and the seats
    /// taken without a token to note (when the log has no such note yet).
    Live {
        id: String,
        adopting: bool,
        tokenless: Option<Vec<(String, String)>>,
    },
}

/// A folder whose database is there: checked, then opened. A refusal
/// leaves the folder's files as they were.
fn existing(found: &Found) -> Result<SqliteLog, String> {
    let db = found.data.join(DATABASE);
    let checked = inspect(&db)
        .map_err(|e| found.fault(Fault::Sql(e)))
        .and_then(|c| found.check(&c).map(|plan| (c, plan)));
    match checked {
        Ok((c, Checked::New)) => {
            // An empty database in a folder that never held a log: replaced
            // by a new one, without the -wal and -shm opening it just made.
            drop(c);
            for made in [WAL, SHM] {
                let _ = std::fs::remove_file(found.data.join(made));
            }
            create(found)
        }
        Ok((
            c,
            Checked::Live {
                id,
                adopting,
                tokenless,
            },
        )) => go_live(found, c, &id, adopting, tokenless),
        Err(refusal) => {
            found.tidy();
            Err(refusal)
        }
    }
}

impl Found {
    /// Every check of an existing database, in order: its tables, its
    /// id, how far it reaches, its matches' rows and seat tokens.
    fn check(&self, c: &Connection) -> Result<Checked, String> {
        let fault = |e: Fault| self.fault(e);
        let tables = audit::tables(c).map_err(|e| fault(e.into()))?;
        let plan = self.tables(&tables)?;
        if matches!(plan, Tables::New) {
            return Ok(Checked::New);
        }
        let id = self.identity(c, &tables)?;
        if matches!(plan, Tables::Whole) {
            self.high_water(c, &id)?;
        }
        let found = audit::match_findings(c).map_err(fault)?;
        // Without a note (a log this version never opened), the seats
        // without a token now are noted, not refused: a server before it
        // wrote a seat before its token.
        let noted = if tables.contains("meta") {
            audit::meta(c, TOKENLESS)
                .map_err(fault)?
                .map(|v| parse_seats(&v).ok_or_else(|| fault(self.bad_note())))
                .transpose()?
        } else {
            None
        };
        let mut findings = found.rows;
        let mut lost_tokens = false;
        if let Some(noted) = &noted {
            for (m, seat) in found.tokenless.iter().filter(|k| !noted.contains(*k)) {
                findings.push(audit::tokenless_finding(m, seat));
                lost_tokens = true;
            }
        }
        if !findings.is_empty() {
            let what = if lost_tokens {
                "rows or seat tokens"
            } else {
                "rows"
            };
            return Err(self.refuse(
                &format!(
                    "{} has lost {what} of its matches: {}{}",
                    self.path(DATABASE),
                    audit::listed(&findings),
                    self.wal_note()
                ),
                "",
            ));
        }
        Ok(Checked::Live {
            id,
            adopting: matches!(plan, Tables::Adopt) || self.marker.is_none(),
            tokenless: noted.is_none().then_some(found.tokenless),
        })
    }

    fn bad_note(&self) -> Fault {
        Fault::Malformed(format!(
            "the {TOKENLESS} row of its meta table holds something other than a list of seats"
        ))
    }

    /// After a refusal: removes the `-wal` and `-shm` the check's opening
    /// of the database made (absent before; the `-wal` still empty),
    /// so the folder is left as it was and the next start says the same.
    fn tidy(&self) {
        let wal = self.data.join(WAL);
        if !self.wal && std::fs::metadata(&wal).is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(&wal);
        }
        if !self.shm {
            // SQLite's index of the -wal, made by the opening: rebuilt by
            // whoever opens the database next.
            let _ = std::fs::remove_file(self.data.join(SHM));
        }
    }
}

/// The seats a `tokenless_seats` note lists: `[[match, seat], …]`.
fn parse_seats(text: &str) -> Option<BTreeSet<(String, String)>> {
    serde_json::from_str::<Vec<(String, String)>>(text)
        .ok()
        .map(|v| v.into_iter().collect())
}

/// A connection that only looks: closing it leaves the write-ahead log as
/// it was (no checkpoint), so a refused folder stays as it was found.
fn inspect(db: &Path) -> rusqlite::Result<Connection> {
    let c = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )?;
    c.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    c.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(c)
}

/// The checked database becomes the log: an adopted one gets the tables
/// and id it lacks and the folder its marker; the seats taken without a
/// token are noted when the log has no such note yet; the high-water file
/// starts from how far the tables reach now.
fn go_live(
    found: &Found,
    mut c: Connection,
    id: &str,
    adopting: bool,
    tokenless: Option<Vec<(String, String)>>,
) -> Result<SqliteLog, String> {
    let db = found.data.join(DATABASE);
    let fail = |e: rusqlite::Error| format!("{}: {e}", db.display());
    c.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, false)
        .map_err(fail)?;
    c.pragma_update(None, "journal_mode", "WAL")
        .and_then(|()| c.pragma_update(None, "synchronous", "FULL"))
        .map_err(fail)?;
    if adopting {
        let tx = c.transaction().map_err(fail)?;
        tx.execute_batch(store::SCHEMA).map_err(fail)?;
        tx.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('log_id', ?1)",
            [id],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
    }
    if let Some(seats) = tokenless {
        note_tokenless(&c, &db, &seats);
    }
    if found.marker.is_none() {
        write_atomic(&found.data, MARKER, marker_text(id).as_bytes())?;
        tracing::info!(
            "took in the log {} (its id is now kept in {})",
            db.display(),
            found.path(MARKER)
        );
    }
    let tops = audit::tops(&c).map_err(fail)?;
    let high = HighWater::create(&found.data, id, tops);
    SqliteLog::start(&db, c, high)
}

/// Notes, the first time this version opens a log, the seats a player
/// took whose token the log lacks: a server before it wrote a seat before
/// its token, so a kill between the two left such seats (nobody can play
/// them). Later starts refuse any other. A failed note (a full disk) is
/// a warning: the next start notes them again.
fn note_tokenless(c: &Connection, db: &Path, seats: &[(String, String)]) {
    for (m, seat) in seats {
        tracing::warn!(
            "match {m}: its seat {seat} was taken, but the log holds no seat token for it (a server before this version was stopped between writing the two, or the token was deleted): nobody can act in that seat"
        );
    }
    let text = serde_json::to_string(seats).unwrap_or_else(|_| "[]".to_owned());
    if let Err(e) = c.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
        [TOKENLESS, text.as_str()],
    ) {
        tracing::warn!(
            "cannot note the seats without a token in {} ({e}): the next start notes them again",
            db.display()
        );
    }
}

impl Found {
    /// The refusal for what kept a check from reading the database.
    fn fault(&self, e: Fault) -> String {
        let db = self.path(DATABASE);
        match e {
            Fault::Sql(e) => self.refuse(
                &format!("{db} cannot be read as a SQLite database ({e})"),
                "",
            ),
            Fault::Malformed(what) => self.refuse(
                &format!(
                    "{db} holds a malformed row: {what} (the row was edited, or the database was damaged){}",
                    self.wal_note()
                ),
                "",
            ),
        }
    }

    /// Which tables the database has against what the folder says it
    /// should: refused when some are missing.
    fn tables(&self, have: &BTreeSet<String>) -> Result<Tables, String> {
        let all: Vec<&str> = audit::CORE.into_iter().chain(audit::LATER).collect();
        let required: &[&str] = if self.marker.is_some() {
            &all
        } else {
            &audit::CORE
        };
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|t| !have.contains(*t))
            .collect();
        let db = self.path(DATABASE);
        if all.iter().all(|t| !have.contains(*t)) {
            // Replaced by a new log only when it holds no table at all:
            // a database of something else is left alone.
            return match (&self.marker, self.leftover()) {
                (None, None) if have.is_empty() => Ok(Tables::New),
                (None, Some(left)) => Err(self.refuse(
                    &format!(
                        "{db} holds none of the log's tables, but {} is still here: the folder held a log{}",
                        self.path(left),
                        self.wal_note()
                    ),
                    "",
                )),
                _ => Err(self.refuse(
                    &format!(
                        "{db} holds none of the log's tables: it was emptied, or replaced by another database{}",
                        self.wal_note()
                    ),
                    "",
                )),
            };
        }
        if !missing.is_empty() {
            let plural = if missing.len() == 1 { "" } else { "s" };
            return Err(self.refuse(
                &format!(
                    "{db} lacks its {} table{plural} (dropped or lost; other tables of the log are there){}",
                    missing.join(", "),
                    self.wal_note()
                ),
                "",
            ));
        }
        Ok(if all.iter().all(|t| have.contains(*t)) {
            Tables::Whole
        } else {
            Tables::Adopt
        })
    }

    /// The log's id: the database's, which must be the marker's; a new
    /// one for a log written before ids were kept.
    fn identity(&self, c: &Connection, have: &BTreeSet<String>) -> Result<String, String> {
        let kept = if have.contains("meta") {
            audit::log_id(c)
                .map_err(|e| self.fault(e))?
                .filter(|id| valid_id(id))
        } else {
            None
        };
        let db = self.path(DATABASE);
        match (&self.marker, kept) {
            (Some(m), Some(k)) if *m == k => Ok(k),
            (Some(m), Some(k)) => Err(self.refuse(
                &format!(
                    "{db} is the log of another data folder (its log id is {k}; {} says {m})",
                    self.path(MARKER)
                ),
                &format!(
                    "; or, to make that database this folder's log, delete {} and {}",
                    self.path(MARKER),
                    self.path(HIGHWATER)
                ),
            )),
            (Some(_), None) => Err(self.refuse(
                &format!(
                    "{db} has no log id: it is not the database this folder's server made (it was replaced or emptied){}",
                    self.wal_note()
                ),
                "",
            )),
            (None, Some(k)) => Ok(k),
            (None, None) => new_id(),
        }
    }

    /// Checks the database reaches as far as the high-water file says the
    /// server wrote.
    fn high_water(&self, c: &Connection, id: &str) -> Result<(), String> {
        let hw = self.path(HIGHWATER);
        match &self.high {
            Some(Ok((noted_id, noted))) if noted_id == id => {
                let held = audit::tops(c).map_err(|e| self.fault(e.into()))?;
                let Some((table, was, now)) = held.short_of(noted) else {
                    return Ok(());
                };
                let now = match now {
                    0 => "it holds none".to_owned(),
                    n => format!("it holds rows only up to {n}"),
                };
                Err(self.refuse(
                    &format!(
                        "{} lacks rows the server wrote: {hw} notes that its {table} table reached row {was}, and {now} (rows were deleted, the database was replaced by an older copy, {}, which held the newest writes, was deleted, or a power loss hit a disk that did not keep what it reported written){}",
                        self.path(DATABASE),
                        self.path(WAL),
                        self.wal_note()
                    ),
                    &format!(
                        "; or, to take the database as it is (what it lacks is lost, and a client retrying a lost action has it processed anew), delete {hw}"
                    ),
                ))
            }
            Some(Ok(_)) => {
                tracing::warn!("{hw} notes another log: not checked, and replaced");
                Ok(())
            }
            Some(Err(e)) => {
                tracing::warn!("{hw} cannot be read ({e}): this start cannot check that the log holds all the server wrote");
                Ok(())
            }
            None if self.marker.is_some() => {
                tracing::warn!("{hw} is missing: the log is taken as it is");
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// How far the server wrote each table, in `rooms.highwater`: the writer
/// notes it after each commit that moved a table's highest row (in place,
/// without a sync: a server that is killed leaves it to the system, which
/// writes it out; a machine that loses power may keep an older one, which
/// only checks less).
pub(crate) struct HighWater {
    file: File,
    path: PathBuf,
    id: String,
    last: Tops,
    failed: bool,
}

/// How a file is replaced whole ([`write_atomic`]; another in tests).
type Replace = fn(&Path, &str, &[u8]) -> Result<(), String>;

impl HighWater {
    /// Writes the file anew at `tops` and keeps it open; `None` (with a
    /// warning) when it cannot be written: the server then runs without
    /// noting, and the next start checks against the older record.
    fn create(data: &Path, id: &str, tops: Tops) -> Option<HighWater> {
        HighWater::create_with(data, id, tops, write_atomic)
    }

    /// [`HighWater::create`], replacing the file through `replace`: when
    /// that fails (it needs a new file: a full disk refuses one), the
    /// file there is rewritten in place, over a record of the same length.
    fn create_with(data: &Path, id: &str, tops: Tops, replace: Replace) -> Option<HighWater> {
        let path = data.join(HIGHWATER);
        let text = record(id, &tops);
        let open = || OpenOptions::new().write(true).open(&path);
        let file = match replace(data, HIGHWATER, text.as_bytes()) {
            Ok(()) => open().map_err(|e| format!("{}: {e}", path.display())),
            Err(e) => open()
                .and_then(|f| {
                    write_at_start(&f, text.as_bytes())?;
                    f.set_len(u64::try_from(text.len()).unwrap_or(u64::MAX))?;
                    f.sync_data()?;
                    Ok(f)
                })
                .inspect(|_| {
                    tracing::warn!("{e}; rewrote {} in place instead", path.display());
                })
                .map_err(|e2| format!("{e}; nor can it be rewritten in place ({e2})")),
        };
        match file {
            Ok(file) => Some(HighWater {
                file,
                path,
                id: id.to_owned(),
                last: tops,
                failed: false,
            }),
            Err(e) => {
                tracing::warn!("{e}: the server runs without noting how far the log reaches, so the next start checks less");
                None
            }
        }
    }

    /// Notes how far the tables reach after a commit, when that moved
    /// (a failure is logged once: the log is durable all the same; the
    /// next start checks less).
    pub(crate) fn note(&mut self, c: &Connection) {
        let now = match audit::tops(c) {
            Ok(t) => t,
            Err(e) => return self.fail(&e.to_string()),
        };
        if now == self.last {
            return;
        }
        let text = record(&self.id, &now);
        match write_at_start(&self.file, text.as_bytes()) {
            Ok(()) => self.last = now,
            Err(e) => self.fail(&e.to_string()),
        }
    }

    fn fail(&mut self, e: &str) {
        if !self.failed {
            self.failed = true;
            tracing::warn!(
                "cannot note how far the log reaches in {} ({e}): the next start checks less",
                self.path.display()
            );
        }
    }
}

/// Writes `bytes` over the start of `file` (one positioned write).
#[cfg(unix)]
fn write_at_start(file: &File, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(bytes, 0)
}

#[cfg(not(unix))]
fn write_at_start(mut file: &File, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(0))?;
    file.write_all(bytes)
}

/// The high-water record: tag, log id, the tops, a check of them; padded
/// to [`RECORD_LEN`].
fn record(id: &str, tops: &Tops) -> String {
    let mut body = format!("{RECORD_TAG} {id}");
    for (k, v) in tops.pairs() {
        body.push_str(&format!(" {k}={v}"));
    }
    let mut text = format!("{body} check={}", check(&body));
    let pad = RECORD_LEN.saturating_sub(text.len() + 1);
    text.push_str(&" ".repeat(pad));
    text.push('\n');
    text
}

fn check(body: &str) -> String {
    blake3::hash(body.as_bytes()).to_hex()[..16].to_owned()
}

fn parse_record(bytes: &[u8]) -> Result<(String, Tops), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not text".to_owned())?;
    let (body, sum) = text.trim_end().rsplit_once(" check=").ok_or("no check")?;
    if sum != check(body) {
        return Err("its check does not match".into());
    }
    let mut words = body
        .strip_prefix(RECORD_TAG)
        .ok_or("not a high-water record")?
        .split_whitespace();
    let id = words.next().filter(|id| valid_id(id)).ok_or("no log id")?;
    let pairs: Option<Vec<(&str, i64)>> = words
        .map(|w| {
            w.split_once('=')
                .and_then(|(k, v)| Some((k, v.parse().ok()?)))
        })
        .collect();
    let tops = pairs
        .and_then(|p| Tops::from_pairs(p.into_iter()))
        .ok_or("no tops")?;
    Ok((id.to_owned(), tops))
}

fn marker_text(id: &str) -> String {
    format!("{}\n", json!({"logId": id, "database": DATABASE}))
}

fn parse_marker(bytes: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let id = v.get("logId")?.as_str()?;
    valid_id(id).then(|| id.to_owned())
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= ID_MAX && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A new log id: 16 random bytes, hex.
fn new_id() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for a log id: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Replaces `data/name` whole: a temporary file, synced, renamed over it,
/// and the folder synced, so a crash leaves the old file or the new one.
/// A failure removes the temporary file.
fn write_atomic(data: &Path, name: &str, bytes: &[u8]) -> Result<(), String> {
    let path = data.join(name);
    let tmp = data.join(format!("{name}.tmp"));
    let wrote = File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = wrote {
        let _ = std::fs::remove_file(&tmp);
        let full = if e.kind() == std::io::ErrorKind::StorageFull {
            " (the disk is full)"
        } else {
            ""
        };
        return Err(format!(
            "cannot write {} through the new file {}: {e}{full}",
            path.display(),
            tmp.display()
        ));
    }
    sync_dir(data).map_err(|e| format!("cannot sync the folder {}: {e}", data.display()))
}

/// Makes a folder's entries (a rename) durable.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("digipology-folder-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch");
        dir
    }

    fn tops(log: i64) -> Tops {
        Tops {
            log,
            ..Tops::default()
        }
    }

    /// A replacement that fails after making its temporary file (its
    /// rename refused: a folder of that name is in the way) leaves no
    /// temporary file, and says which file it could not write.
    #[test]
    fn a_failed_replacement_leaves_no_temporary_file() {
        let dir = scratch("atomic");
        std::fs::create_dir_all(dir.join("x").join("inside")).expect("in the way");
        let e = write_atomic(&dir, "x", b"new").expect_err("the rename fails");
        assert!(e.contains("cannot write") && e.contains("x.tmp"), "{e}");
        assert!(!dir.join("x.tmp").exists(), "the temporary file is left");
    }

    /// The full-disk case, injected: the replacement through a new file
    /// fails (as a full disk refuses a new file), so the high-water file
    /// there is rewritten in place, whole; and noting goes on in it.
    #[test]
    fn the_high_water_file_is_rewritten_in_place_when_it_cannot_be_replaced() {
        let dir = scratch("in-place");
        let path = dir.join(HIGHWATER);
        std::fs::write(&path, record("ab", &tops(3))).expect("an older record");
        let full: Replace = |_, _, _| Err("No space left on device".to_owned());
        let high = HighWater::create_with(&dir, "ab", tops(7), full).expect("kept");
        let bytes = std::fs::read(&path).expect("the file");
        assert_eq!(bytes.len(), RECORD_LEN);
        let (id, noted) = parse_record(&bytes).expect("a record");
        assert_eq!((id.as_str(), noted), ("ab", tops(7)));
        drop(high);
        // A torn, shorter file is made whole.
        std::fs::write(&path, b"digipology-highwater 1 ab").expect("torn");
        let high = HighWater::create_with(&dir, "ab", tops(9), full).expect("kept");
        let bytes = std::fs::read(&path).expect("the file");
        assert_eq!(parse_record(&bytes).map(|r| r.1), Ok(tops(9)));
        drop(high);
    }

    /// Neither a new file nor the file there can be written (a folder is
    /// in its place): the server runs without noting.
    #[test]
    fn a_high_water_file_that_cannot_be_written_is_not_noted() {
        let dir = scratch("unwritable");
        std::fs::create_dir_all(dir.join(HIGHWATER).join("inside")).expect("in the way");
        assert!(HighWater::create(&dir, "ab", tops(1)).is_none());
        assert!(!dir.join(format!("{HIGHWATER}.tmp")).exists());
    }
}
