//! What the server checks inside its log database before it serves
//! (docs/server.md, Log damage): which tables it holds, the log's id, how
//! far each table reaches, and each match's rows. Everything here only
//! reads; `crate::folder` decides what a finding means.

use std::collections::{BTreeSet, HashMap, HashSet};

use rusqlite::types::{FromSql, Type, ValueRef};
use rusqlite::{Connection, Row};
use serde_json::Value;

/// The tables every log has had since the server began: a database with
/// some of them and not the others lost some.
pub(crate) const CORE: [&str; 3] = ["matches", "tokens", "log"];

/// The tables later versions added: made for a log written before them,
/// required of a log this version marked (`rooms.id`).
pub(crate) const LATER: [&str; 3] = ["spans", "games", "meta"];

/// Findings listed by name in a refusal; the rest are counted.
const LISTED: usize = 3;

/// The highest rowid of each table rows are only ever added to (0: none).
/// A database that reaches less far than the server last noted lost rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tops {
    pub log: i64,
    pub matches: i64,
    pub tokens: i64,
    pub spans: i64,
    pub games: i64,
}

impl Tops {
    /// The names and values, in the order the high-water file keeps them.
    pub(crate) fn pairs(&self) -> [(&'static str, i64); 5] {
        [
            ("log", self.log),
            ("matches", self.matches),
            ("tokens", self.tokens),
            ("spans", self.spans),
            ("games", self.games),
        ]
    }

    /// Tops from their names and values (each of the five once).
    pub(crate) fn from_pairs<'a>(pairs: impl Iterator<Item = (&'a str, i64)>) -> Option<Tops> {
        let mut t = Tops::default();
        let mut seen = 0u8;
        for (k, v) in pairs {
            let (slot, bit) = match k {
                "log" => (&mut t.log, 1),
                "matches" => (&mut t.matches, 2),
                "tokens" => (&mut t.tokens, 4),
                "spans" => (&mut t.spans, 8),
                "games" => (&mut t.games, 16),
                _ => return None,
            };
            *slot = v;
            seen |= bit;
        }
        (seen == 31).then_some(t)
    }

    /// The first table that reaches less far than `noted`: (its name, the
    /// noted top, the held one).
    pub(crate) fn short_of(&self, noted: &Tops) -> Option<(&'static str, i64, i64)> {
        self.pairs()
            .into_iter()
            .zip(noted.pairs())
            .find(|((_, held), (_, was))| held < was)
            .map(|((name, held), (_, was))| (name, was, held))
    }
}

/// How far each table reaches now.
pub(crate) fn tops(c: &Connection) -> rusqlite::Result<Tops> {
    c.prepare_cached(
        "SELECT (SELECT ifnull(max(rowid), 0) FROM log), (SELECT ifnull(max(rowid), 0) FROM matches),
                (SELECT ifnull(max(rowid), 0) FROM tokens), (SELECT ifnull(max(rowid), 0) FROM spans),
                (SELECT ifnull(max(rowid), 0) FROM games)",
    )?
    .query_row([], |r| {
        Ok(Tops {
            log: r.get(0)?,
            matches: r.get(1)?,
            tokens: r.get(2)?,
            spans: r.get(3)?,
            games: r.get(4)?,
        })
    })
}

/// The names of the database's tables.
pub(crate) fn tables(c: &Connection) -> rusqlite::Result<BTreeSet<String>> {
    let mut s = c.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names = s.query_map([], |r| r.get(0))?;
    names.collect()
}

/// Why a check could not read what it needed.
#[derive(Debug)]
pub(crate) enum Fault {
    /// SQLite could not read the database (not a database, an I/O error).
    Sql(rusqlite::Error),
    /// A row holds a value its column should not: which row of which
    /// table, and what it holds.
    Malformed(String),
}

impl From<rusqlite::Error> for Fault {
    fn from(e: rusqlite::Error) -> Self {
        Fault::Sql(e)
    }
}

/// A row being read: its table and rowid, for a malformed value's finding.
#[derive(Clone, Copy)]
struct At {
    table: &'static str,
    row: i64,
}

impl At {
    fn malformed(self, column: &str, what: &str) -> Fault {
        Fault::Malformed(format!(
            "row {} of its {} table holds {what} in its {column} column",
            self.row, self.table
        ))
    }

    /// Column `i` of `r`, which should hold `want`; a value of another
    /// type is a malformed row.
    fn get<T: FromSql>(self, r: &Row<'_>, i: usize, want: &str) -> Result<T, Fault> {
        r.get(i).map_err(|e| match e {
            rusqlite::Error::InvalidColumnType(_, name, ty) => {
                self.malformed(&name, &format!("{} where {want} belongs", kind(ty)))
            }
            rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::IntegralValueOutOfRange(..) => {
                let name = r.as_ref().column_name(i).unwrap_or("?");
                self.malformed(name, &format!("a value that is not {want}"))
            }
            e => Fault::Sql(e),
        })
    }

    /// Column `i` of `r` as text (`None` when it holds `NULL` and `null`
    /// may): anything else is a malformed row.
    fn text<'r>(self, r: &'r Row<'_>, i: usize, null: bool) -> Result<Option<&'r str>, Fault> {
        let name = || r.as_ref().column_name(i).unwrap_or("?").to_owned();
        match r.get_ref(i)? {
            ValueRef::Text(t) => std::str::from_utf8(t)
                .map(Some)
                .map_err(|_| self.malformed(&name(), "bytes that are not UTF-8 text")),
            ValueRef::Null if null => Ok(None),
            v => Err(self.malformed(
                &name(),
                &format!("{} where text belongs", kind(v.data_type())),
            )),
        }
    }
}

fn kind(t: Type) -> &'static str {
    match t {
        Type::Null => "nothing (NULL)",
        Type::Integer => "an integer",
        Type::Real => "a real number",
        Type::Text => "text",
        Type::Blob => "a blob",
    }
}

/// The log's id, as its `meta` table keeps it (the table must exist).
pub(crate) fn log_id(c: &Connection) -> Result<Option<String>, Fault> {
    meta(c, "log_id")
}

/// A value of the `meta` table (the table must exist).
pub(crate) fn meta(c: &Connection, key: &str) -> Result<Option<String>, Fault> {
    let mut s = c.prepare_cached("SELECT rowid, value FROM meta WHERE key = ?1")?;
    let mut rows = s.query([key])?;
    let Some(r) = rows.next()? else {
        return Ok(None);
    };
    let at = At {
        table: "meta",
        row: r.get(0)?,
    };
    Ok(at.text(r, 1, false)?.map(str::to_owned))
}

/// What the log's rows of one running match look like, read in rowid
/// order.
#[derive(Default)]
struct Rows {
    /// The line number the next row should begin with.
    next: u64,
    /// The first and last rowid of its rows.
    first_row: i64,
    last_row: i64,
    /// What is wrong with them, once something is (the first finding).
    wrong: Option<String>,
}

/// What the read of the log's newest rows found.
#[derive(Default)]
struct Scan {
    /// The running matches' rows.
    running: HashMap<String, Rows>,
    /// Matches waiting for players that have rows.
    open: BTreeSet<String>,
    /// Matches the `matches` table lacks that have rows.
    unknown: BTreeSet<String>,
}

/// The log's rows from a rowid on, with what recovery reads of them.
const SCAN: &str = "SELECT rowid, match_id, first, lines, seat, client_id, action_digest, answer
     FROM log WHERE rowid >= ?1 ORDER BY rowid";

/// Reads the rows of the log from rowid `from` on — where the oldest
/// running match's rows begin, the rows recovery reads anyway — and, per
/// running match, checks that their line numbers run from 0 without a gap
/// or a repeat, and that recovery can read them. Finished matches' rows
/// are passed over (their line is not read); rows of a match waiting for
/// players, or of none, are noted.
fn scan_log(c: &Connection, from: i64, status: &HashMap<&str, &str>) -> Result<Scan, Fault> {
    let mut out = Scan::default();
    let mut s = c.prepare(SCAN)?;
    let mut rows = s.query([from])?;
    while let Some(r) = rows.next()? {
        let row: i64 = r.get(0)?;
        let at = At { table: "log", row };
        let id = at.text(r, 1, false)?.unwrap_or_default();
        match status.get(id) {
            Some(&"running") => {}
            Some(&"finished") => continue,
            Some(_) => {
                out.open.insert(id.to_owned());
                continue;
            }
            None => {
                out.unknown.insert(id.to_owned());
                continue;
            }
        }
        let first = u64::try_from(at.get::<i64>(r, 2, "an integer")?).unwrap_or(u64::MAX);
        // As recovery splits them: one line more than the newlines.
        let lines = at.text(r, 3, false)?.unwrap_or_default();
        let count = lines.bytes().filter(|b| *b == b'\n').count();
        let count = u64::try_from(count).unwrap_or(u64::MAX).saturating_add(1);
        for i in 4..8 {
            at.text(r, i, true)?;
        }
        let seen = out.running.entry(id.to_owned()).or_insert_with(|| Rows {
            first_row: row,
            ..Rows::default()
        });
        if seen.wrong.is_none() {
            seen.wrong = line_gap(id, seen.next, first, seen.first_row == row);
        }
        seen.next = first.saturating_add(count);
        seen.last_row = row;
    }
    Ok(out)
}

/// What is wrong with a row of match `id` that begins at line `first`
/// where line `next` was due (`opening`: its first row).
fn line_gap(id: &str, next: u64, first: u64, opening: bool) -> Option<String> {
    if first == next {
        return None;
    }
    Some(if opening {
        format!(
            "match {id}: its log begins at line {first}, not at line 0 (its first lines are gone)"
        )
    } else if first == next.saturating_add(1) {
        format!("match {id}: line {next} of its log is gone")
    } else if first > next {
        format!(
            "match {id}: lines {next} to {} of its log are gone",
            first.saturating_sub(1)
        )
    } else {
        format!("match {id}: its log holds line {first} twice")
    })
}

/// A match as its row and the `spans` table describe it.
struct Described {
    id: String,
    status: String,
    span: Option<(i64, Option<i64>)>,
    /// Its seats a player took (not a bot's).
    taken: Vec<String>,
}

fn described(c: &Connection) -> Result<Vec<Described>, Fault> {
    let mut s = c.prepare(
        "SELECT m.rowid, m.id, m.status, m.seats, s.rowid, s.first_row, s.last_row
         FROM matches m LEFT JOIN spans s ON s.match_id = m.id ORDER BY m.created_ms, m.id",
    )?;
    let mut rows = s.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let at = At {
            table: "matches",
            row: r.get(0)?,
        };
        let seats = at.text(r, 3, false)?.unwrap_or_default();
        let taken = taken_seats(seats)
            .ok_or_else(|| at.malformed("seats", "text that is not a list of seats (JSON)"))?;
        let span = match r.get::<_, Option<i64>>(4)? {
            Some(row) => {
                let at = At {
                    table: "spans",
                    row,
                };
                let first: i64 = at.get(r, 5, "an integer")?;
                let last: Option<i64> = at.get(r, 6, "an integer or nothing")?;
                Some((first, last))
            }
            None => None,
        };
        out.push(Described {
            id: at.text(r, 1, false)?.unwrap_or_default().to_owned(),
            status: at.text(r, 2, false)?.unwrap_or_default().to_owned(),
            span,
            taken,
        });
    }
    Ok(out)
}

/// The seats a player (not a bot) took, from a match row's `seats` JSON
/// (`None`: not such a list).
fn taken_seats(seats: &str) -> Option<Vec<String>> {
    let list: Vec<Value> = serde_json::from_str(seats).ok()?;
    list.iter()
        .filter(|s| {
            let flag = |k: &str| s.get(k).and_then(Value::as_bool).unwrap_or(false);
            flag("taken") && !flag("bot")
        })
        .map(|s| s.get("seat").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// What is wrong with one running match's rows, given its row and span.
fn running_finding(m: &Described, rows: Option<&Rows>) -> Option<String> {
    let id = &m.id;
    let Some(rows) = rows else {
        // A running match with neither rows nor a span: its start never
        // reached the log (the server died in between); it starts anew.
        return m.span.map(|(first, _)| {
            format!("match {id}: its log rows are gone (they began at row {first})")
        });
    };
    if let Some(w) = &rows.wrong {
        return Some(w.clone());
    }
    match m.span {
        Some((first, _)) if rows.first_row != first => Some(format!(
            "match {id}: its log rows from row {first} are gone"
        )),
        _ => None,
    }
}

/// The match and line number of the log's row `row`, when it has one.
fn row_at(c: &Connection, row: i64) -> Result<Option<(String, i64)>, Fault> {
    let mut s = c.prepare_cached("SELECT match_id, first FROM log WHERE rowid = ?1")?;
    let mut rows = s.query([row])?;
    let Some(r) = rows.next()? else {
        return Ok(None);
    };
    let at = At { table: "log", row };
    let id = at.text(r, 0, false)?.unwrap_or_default().to_owned();
    Ok(Some((id, at.get(r, 1, "an integer")?)))
}

/// What is wrong with a finished match's rows, looking only at the two
/// rows its span names: its first (line 0) and the one its end was
/// written in. The rows between are checked when the match is loaded
/// (its replay checks every state hash); a match begun before the log
/// kept spans is checked only then.
fn finished_finding(c: &Connection, m: &Described) -> Result<Option<String>, Fault> {
    let id = &m.id;
    let Some((first, last)) = m.span else {
        return Ok(None);
    };
    let head = row_at(c, first)?.filter(|(of, _)| of == id);
    let tail = match last {
        Some(last) => Some((last, row_at(c, last)?.is_some_and(|(of, _)| of == *id))),
        None => None,
    };
    Ok(match (head, tail) {
        (None, Some((last, false))) => Some(format!(
            "match {id}: it is finished, but its log rows are gone (its first row, {first}, and its last, {last}, are not in the log)"
        )),
        (None, _) => Some(format!(
            "match {id}: its log rows from row {first} are gone"
        )),
        (Some(_), Some((last, false))) => Some(format!(
            "match {id}: its last log rows are gone (its end was written at row {last}, which is not in the log)"
        )),
        (Some((_, line)), _) => {
            line_gap(id, 0, u64::try_from(line).unwrap_or(u64::MAX), true)
        }
    })
}

/// What the checks of the matches found: rows gone, and seats taken
/// without their token.
pub(crate) struct Findings {
    /// Rows of matches gone (or of no match), one finding each.
    pub rows: Vec<String>,
    /// Each (match, seat) a player took whose seat token the log lacks.
    pub tokenless: Vec<(String, String)>,
}

/// Every finding about the matches: the rows of each running match
/// against its row and span (read from the oldest running match's first
/// row on), the two ends of each finished match, seats taken without a
/// token, then rows, spans and tokens of matches the `matches` table
/// lacks.
pub(crate) fn match_findings(c: &Connection) -> Result<Findings, Fault> {
    let matches = described(c)?;
    let status: HashMap<&str, &str> = matches
        .iter()
        .map(|m| (m.id.as_str(), m.status.as_str()))
        .collect();
    let running: Vec<&Described> = matches.iter().filter(|m| m.status == "running").collect();
    // A running match without a span (begun before spans were kept, or
    // whose start never reached the log): the whole log.
    let from = running
        .iter()
        .map(|m| m.span.map_or(i64::MIN, |(first, _)| first))
        .min();
    let scan = match from {
        Some(from) => scan_log(c, from, &status)?,
        None => Scan::default(),
    };
    let mut out = Vec::new();
    for m in &matches {
        let found = match m.status.as_str() {
            "running" => running_finding(m, scan.running.get(&m.id)),
            "finished" => finished_finding(c, m)?,
            _ if m.span.is_some() || scan.open.contains(&m.id) => Some(format!(
                "match {}: it is marked waiting for players, but the log holds rows of it",
                m.id
            )),
            _ => None,
        };
        out.extend(found);
    }
    let tokens = token_seats(c)?;
    let tokenless = matches
        .iter()
        .flat_map(|m| m.taken.iter().map(move |s| (m.id.clone(), s.clone())))
        .filter(|k| !tokens.contains(k))
        .collect();
    let mut orphans = scan.unknown;
    let mut s = c.prepare(
        "SELECT match_id FROM spans WHERE match_id NOT IN (SELECT id FROM matches)
         UNION SELECT match_id FROM tokens WHERE match_id NOT IN (SELECT id FROM matches)",
    )?;
    let mut rows = s.query([])?;
    while let Some(r) = rows.next()? {
        let id = match r.get_ref(0)? {
            ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
            v => format!("{v:?}"),
        };
        orphans.insert(id);
    }
    out.extend(orphans.into_iter().map(|id| {
        format!("the log holds rows or seat tokens of match {id}, but the matches table has no row for it")
    }));
    Ok(Findings {
        rows: out,
        tokenless,
    })
}

/// Every (match, seat) the `tokens` table holds a token for.
fn token_seats(c: &Connection) -> Result<HashSet<(String, String)>, Fault> {
    let mut s = c.prepare("SELECT rowid, match_id, seat FROM tokens")?;
    let mut rows = s.query([])?;
    let mut out = HashSet::new();
    while let Some(r) = rows.next()? {
        let at = At {
            table: "tokens",
            row: r.get(0)?,
        };
        let m = at.text(r, 1, false)?.unwrap_or_default().to_owned();
        let seat = at.text(r, 2, false)?.unwrap_or_default().to_owned();
        out.insert((m, seat));
    }
    Ok(out)
}

/// The finding for a seat a player took whose token the log lacks.
pub(crate) fn tokenless_finding(match_id: &str, seat: &str) -> String {
    format!("match {match_id}: its seat {seat} was taken, but its seat token is gone")
}

/// Findings as one clause: the first few, and how many more.
pub(crate) fn listed(findings: &[String]) -> String {
    let mut text = findings
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if findings.len() > LISTED {
        text.push_str(&format!(
            "; and {} more such findings",
            findings.len() - LISTED
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The start reads the log from the oldest running match's first row
    /// on, by row number: SQLite searches the table from there, without
    /// reading the rows before it.
    #[test]
    fn the_scan_starts_at_a_row_number() {
        let c = Connection::open_in_memory().expect("a database");
        c.execute_batch(crate::store::SCHEMA).expect("the tables");
        let mut s = c
            .prepare(&format!("EXPLAIN QUERY PLAN {SCAN}"))
            .expect("a plan");
        let plan: Vec<String> = s
            .query_map([5], |r| r.get(3))
            .expect("the plan")
            .collect::<Result<_, _>>()
            .expect("the plan");
        let plan = plan.join("; ");
        assert!(
            plan.contains("SEARCH log USING INTEGER PRIMARY KEY (rowid>?)"),
            "{plan}"
        );
    }

    /// A finished match's rows between its two ends are not read (its
    /// replay checks them when it is loaded); a running match's are.
    #[test]
    fn only_running_matches_rows_are_read_through() {
        let c = Connection::open_in_memory().expect("a database");
        c.execute_batch(crate::store::SCHEMA).expect("the tables");
        let seats = r#"[{"seat":"a","taken":true},{"seat":"b","taken":true,"bot":true}]"#;
        for (id, status, last) in [("f", "finished", Some(3)), ("r", "running", None)] {
            c.execute(
                "INSERT INTO matches(id, game_id, header, seats, status, created_ms) VALUES (?1, 'g', '{}', ?2, ?3, 0)",
                rusqlite::params![id, seats, status],
            )
            .expect("a match");
            c.execute(
                "INSERT INTO tokens(digest, match_id, seat) VALUES (?1, ?1, 'a')",
                [id],
            )
            .expect("a token");
            let first = if id == "f" { 1 } else { 4 };
            c.execute(
                "INSERT INTO spans(match_id, first_row, last_row) VALUES (?1, ?2, ?3)",
                rusqlite::params![id, first, last],
            )
            .expect("a span");
        }
        for (row, id, first) in [
            (1, "f", 0),
            (2, "f", 1),
            (3, "f", 2),
            (4, "r", 0),
            (5, "r", 1),
            (6, "r", 2),
        ] {
            c.execute(
                "INSERT INTO log(rowid, match_id, first, lines) VALUES (?1, ?2, ?3, 'x')",
                rusqlite::params![row, id, first],
            )
            .expect("a row");
        }
        let whole = match_findings(&c).expect("read");
        assert!(
            whole.rows.is_empty() && whole.tokenless.is_empty(),
            "{:?}",
            whole.rows
        );
        c.execute_batch("DELETE FROM log WHERE rowid IN (2, 5)")
            .expect("delete");
        let found = match_findings(&c).expect("read");
        assert_eq!(
            found.rows,
            vec!["match r: line 1 of its log is gone".to_owned()]
        );
    }
}
