//! The replayable record's lines (docs/formats.md, The record): each
//! processed input with the state hash after it and the parts of the state
//! it changed — both read from the kernel's tracked digests, so a line
//! costs what the action touched, never the table.

use std::collections::BTreeMap;

use digipology_kernel::value::{write_string, write_u64};
use digipology_kernel::{Action, Kernel};
use serde_json::Value;

/// Version of the record format. 2: the state hash is composed from leaf
/// digests and `changed` names leaves (`players.<id>`, not `players`).
pub const RECORD_VERSION: u64 = 2;

/// A failure to write the record, told apart from a failure to write the
/// events (both reach the caller as `std::io::Error`: this one wraps the
/// original, so the caller can name the record's file).
#[derive(Debug)]
pub struct RecordWriteError(pub std::io::Error);

impl std::fmt::Display for RecordWriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for RecordWriteError {}

/// Marks an error as the record's.
pub(crate) fn failed(e: std::io::Error) -> std::io::Error {
    std::io::Error::other(RecordWriteError(e))
}

/// The record's own failure inside `e`, if it is one.
pub fn record_failure(e: &std::io::Error) -> Option<&RecordWriteError> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<RecordWriteError>())
}

/// One input as the room processed it, borrowed for the record.
#[derive(Clone, Copy)]
pub(crate) enum Given<'a> {
    /// Read straight into its typed envelope (clock stamped).
    Typed(&'a Action),
    /// Processed as JSON (clock stamped), or JSON that was not an action.
    Json(&'a Value),
    /// A line that was not JSON (empty when over 4 KiB or not UTF-8).
    Raw(&'a str),
}

/// Writes one record line (with its newline) for an input the kernel just
/// processed as sequence `seq`: `{"seq":N,"action":{…}|"raw":"…",
/// "hash":"…","changed":{path: short digest or null}}`.
pub(crate) fn write_line(
    out: &mut String,
    seq: u64,
    given: Given<'_>,
    origin: crate::matches::Origin,
    kernel: &Kernel,
) {
    out.push_str("{\"seq\":");
    write_u64(seq, out);
    if origin == crate::matches::Origin::SafeDefault {
        out.push_str(",\"origin\":\"safe_default\"");
    }
    match given {
        Given::Typed(action) => {
            out.push_str(",\"action\":");
            action.write_json(out);
        }
        Given::Json(v) => {
            out.push_str(",\"action\":");
            out.push_str(&v.to_string());
        }
        Given::Raw(r) => {
            out.push_str(",\"raw\":");
            write_string(r, out);
        }
    }
    out.push_str(",\"hash\":\"");
    kernel.write_state_hash(out);
    out.push_str("\",\"changed\":{");
    let mut path = String::new();
    for (i, c) in kernel.changes().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        path.clear();
        c.write_path(&mut path);
        write_string(&path, out);
        out.push(':');
        match &c.digest {
            Some(d) => {
                out.push('"');
                digipology_kernel::digest::write_hex(d, out);
                out.push('"');
            }
            None => out.push_str("null"),
        }
    }
    out.push_str("}}\n");
}

/// The parts of the state the last action changed, by path (a removed
/// part maps to `None`).
pub(crate) fn changes(kernel: &Kernel) -> BTreeMap<String, Option<String>> {
    kernel
        .changes()
        .iter()
        .map(|c| (c.path(), c.hex()))
        .collect()
}

/// One record line after the header, read back (docs/formats.md, The
/// record).
#[derive(serde::Deserialize)]
struct RecordLine<'a> {
    #[serde(default)]
    seq: u64,
    #[serde(borrow, default)]
    action: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    origin: Option<String>,
    #[serde(default)]
    hash: String,
    #[serde(default)]
    changed: BTreeMap<String, Option<String>>,
}

/// What a record line said, once its input was processed again.
#[derive(Debug)]
pub struct Replayed {
    /// The sequence the record gave it.
    pub seq: u64,
    /// The action (`null` for a line that was not one).
    pub action: Value,
    /// The state hash the record holds after it.
    pub hash: String,
    /// The parts of the state the record says it changed.
    pub changed: BTreeMap<String, Option<String>>,
}

/// Why a record line could not be processed again.
#[derive(Debug)]
pub enum ReplayError {
    /// The line is not a record line.
    Json(serde_json::Error),
    /// Writing its events failed.
    Io(std::io::Error),
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::Json(e) => e.fmt(f),
            ReplayError::Io(e) => e.fmt(f),
        }
    }
}

impl crate::Room {
    /// Processes one record line's input again, the way the room first
    /// processed it (a raw line as a raw line, a safe default as one), and
    /// says what the record holds after it: `replay` and a recovering
    /// server compare [`Replayed::hash`] with the room's state hash. Turn
    /// [`crate::Room::autofire`] off first: the record holds every fire.
    ///
    /// # Errors
    /// The line is not a record line, or writing events failed.
    pub fn replay_line(
        &mut self,
        line: &str,
        events: &mut dyn std::io::Write,
    ) -> Result<Replayed, ReplayError> {
        let rec: RecordLine<'_> = serde_json::from_str(line).map_err(ReplayError::Json)?;
        // The action is read on its own: the line wraps it one level
        // deeper than the deepest action a room accepts.
        let action: Value = match rec.action {
            Some(a) => serde_json::from_str(a.get()).map_err(ReplayError::Json)?,
            None => Value::Null,
        };
        match rec.raw {
            Some(text) => self.submit_line(&crate::jsonl::Line::Bytes(text.into_bytes()), events),
            // A safe default the room committed is replayed as one.
            None if rec.origin.as_deref() == Some("safe_default") => {
                self.submit_safe_json(action.clone(), events)
            }
            None => self.submit_json(action.clone(), events),
        }
        .map_err(ReplayError::Io)?;
        Ok(Replayed {
            seq: rec.seq,
            action,
            hash: rec.hash,
            changed: rec.changed,
        })
    }
}
