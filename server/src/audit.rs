//! What the server checks inside its log database before it serves
//! (docs/server.md, Log damage): which tables it holds, the log's id, how
//! far each table reaches, and each match's rows. Everything here only
//! reads; `crate::folder` decides what a finding means.

use std::collections::{BTreeSet, HashMap};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension};

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

/// The log's id, as its `meta` table keeps it (the table must exist).
pub(crate) fn log_id(c: &Connection) -> rusqlite::Result<Option<String>> {
    c.query_row("SELECT value FROM meta WHERE key = 'log_id'", [], |r| {
        r.get(0)
    })
    .optional()
}

/// What the log's rows of one match look like, read in rowid order.
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

/// Reads every row of the log once: per match, where its rows lie and
/// whether their line numbers run from 0 without a gap or a repeat.
fn scan_log(c: &Connection) -> rusqlite::Result<HashMap<String, Rows>> {
    let mut out: HashMap<String, Rows> = HashMap::new();
    let mut s = c.prepare("SELECT rowid, match_id, first, lines FROM log ORDER BY rowid")?;
    let mut rows = s.query([])?;
    while let Some(r) = rows.next()? {
        let row: i64 = r.get(0)?;
        let id: String = r.get(1)?;
        let first = u64::try_from(r.get::<_, i64>(2)?).unwrap_or(u64::MAX);
        // As recovery splits them: one line more than the newlines.
        let count = match r.get_ref(3)? {
            ValueRef::Text(t) | ValueRef::Blob(t) => t.iter().filter(|b| **b == b'\n').count(),
            _ => 0,
        };
        let count = u64::try_from(count).unwrap_or(u64::MAX).saturating_add(1);
        let seen = out.entry(id.clone()).or_insert_with(|| Rows {
            first_row: row,
            ..Rows::default()
        });
        if seen.wrong.is_none() {
            seen.wrong = line_gap(&id, seen.next, first, seen.first_row == row);
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
}

fn described(c: &Connection) -> rusqlite::Result<Vec<Described>> {
    let mut s = c.prepare(
        "SELECT m.id, m.status, s.first_row, s.last_row FROM matches m
         LEFT JOIN spans s ON s.match_id = m.id ORDER BY m.created_ms, m.id",
    )?;
    let rows = s.query_map([], |r| {
        let first: Option<i64> = r.get(2)?;
        let last: Option<i64> = r.get(3)?;
        Ok(Described {
            id: r.get(0)?,
            status: r.get(1)?,
            span: first.map(|f| (f, last)),
        })
    })?;
    rows.collect()
}

/// What is wrong with one match's rows, given its row and span.
fn match_finding(m: &Described, rows: Option<&Rows>) -> Option<String> {
    let id = &m.id;
    let Some(rows) = rows else {
        // A running match with neither rows nor a span: its start never
        // reached the log (the server died in between); it starts anew.
        return match (m.status.as_str(), m.span) {
            ("finished", _) => Some(format!(
                "match {id}: it is finished, but its log rows are gone"
            )),
            ("running", Some((first, _))) => Some(format!(
                "match {id}: its log rows are gone (they began at row {first})"
            )),
            _ => None,
        };
    };
    if m.status == "open" {
        return Some(format!(
            "match {id}: it is marked waiting for players, but the log holds rows of it"
        ));
    }
    if let Some(w) = &rows.wrong {
        return Some(w.clone());
    }
    match m.span {
        Some((first, _)) if rows.first_row != first => Some(format!(
            "match {id}: its log rows from row {first} are gone"
        )),
        Some((_, Some(last))) if rows.last_row < last => Some(format!(
            "match {id}: its last log rows are gone (its end was written at row {last}, its rows stop at row {})",
            rows.last_row
        )),
        _ => None,
    }
}

/// Every finding about the matches' rows: each match's rows against its
/// row and span, then rows, spans and tokens of matches the `matches`
/// table lacks.
pub(crate) fn match_findings(c: &Connection) -> rusqlite::Result<Vec<String>> {
    let rows = scan_log(c)?;
    let matches = described(c)?;
    let mut out: Vec<String> = matches
        .iter()
        .filter_map(|m| match_finding(m, rows.get(&m.id)))
        .collect();
    let known: BTreeSet<&str> = matches.iter().map(|m| m.id.as_str()).collect();
    let mut orphans: BTreeSet<String> = rows
        .keys()
        .filter(|id| !known.contains(id.as_str()))
        .cloned()
        .collect();
    let mut s = c.prepare(
        "SELECT match_id FROM spans WHERE match_id NOT IN (SELECT id FROM matches)
         UNION SELECT match_id FROM tokens WHERE match_id NOT IN (SELECT id FROM matches)",
    )?;
    for id in s.query_map([], |r| r.get::<_, String>(0))? {
        orphans.insert(id?);
    }
    out.extend(orphans.into_iter().map(|id| {
        format!("the log holds rows or seat tokens of match {id}, but the matches table has no row for it")
    }));
    Ok(out)
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
