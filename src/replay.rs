//! `digipology replay`: re-run a record and verify every state hash.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use crate::package::Package;

/// Replays `log`; exit 0 when every hash matches, 1 at the first
/// divergence (reported by sequence, with the differing state paths), 2
/// when the record or the game cannot be read.
pub fn replay(log: &Path, game: Option<&Path>) -> ExitCode {
    match replay_inner(log, game) {
        Ok(Verdict::Verified(n)) => {
            println!("verified {n} actions: every state hash matches");
            ExitCode::SUCCESS
        }
        Ok(Verdict::Diverged(msg)) => {
            println!("{msg}");
            ExitCode::from(1)
        }
        Err(msg) => {
            eprintln!("digipology: {msg}");
            ExitCode::from(2)
        }
    }
}

enum Verdict {
    Verified(u64),
    Diverged(String),
}

fn replay_inner(log: &Path, game: Option<&Path>) -> Result<Verdict, String> {
    let file = std::fs::File::open(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut lines = BufReader::new(file).lines();
    let header = read_header(log, lines.next())?;
    let game_path: PathBuf = match game {
        Some(g) => g.to_path_buf(),
        None => PathBuf::from(header.get("game").and_then(Value::as_str).unwrap_or(".")),
    };
    let package = Package::load(&game_path).map_err(|e| e.to_string())?;
    let mut expected: BTreeMap<String, String> = header
        .get("digest")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let mut room = room_for(&header, &package, log)?;
    // A room's own match config (`run --match`) came with the record.
    if let Some(m) = header.get("match") {
        let config =
            crate::package::match_config_from(m, "match", log).map_err(|e| e.to_string())?;
        crate::package::apply_match(&mut room, config, log).map_err(|e| e.to_string())?;
    }
    crate::notices_to_stderr(&mut room);
    room.autofire = false;
    room.track_digests();
    let mut sink = std::io::sink();
    let mut verified = 0u64;
    for (i, line) in lines.enumerate() {
        let line = line.map_err(|e| e.to_string())?;
        if line.trim().is_empty() {
            continue;
        }
        let lineno = i + 2;
        let rec = room.replay_line(&line, &mut sink).map_err(|e| match e {
            crate::record::ReplayError::Json(e) => format!("{}:{lineno}: {e}", log.display()),
            crate::record::ReplayError::Io(e) => e.to_string(),
        })?;
        for (k, v) in rec.changed {
            match v {
                Some(h) => expected.insert(k, h),
                None => expected.remove(&k),
            };
        }
        let got = room.kernel().state_hash();
        if got != rec.hash {
            return Ok(Verdict::Diverged(divergence(
                &room,
                &expected,
                (rec.seq, &rec.action),
                (&rec.hash, &got),
                (log, lineno),
            )));
        }
        verified += 1;
    }
    Ok(Verdict::Verified(verified))
}

/// The record's first line: its header.
fn read_header(log: &Path, first: Option<std::io::Result<String>>) -> Result<Value, String> {
    let header_text = first
        .ok_or_else(|| format!("{}: empty record", log.display()))?
        .map_err(|e| e.to_string())?;
    let header: Value = serde_json::from_str(&header_text).map_err(|e| {
        format!(
            "{}:1: not a record header ({e}); records are written by `digipology run --record`",
            log.display()
        )
    })?;
    match header.get("record").and_then(Value::as_u64) {
        Some(crate::record::RECORD_VERSION) => {}
        Some(1) => {
            return Err(format!(
                "{}:1: a record of format 1, written before state hashes were composed from \
                 per-part digests: its hashes cannot be checked by this build; run the game \
                 again with --record to make a new one",
                log.display()
            ))
        }
        _ => {
            return Err(format!(
                "{}:1: not a digipology record (its first line must be the header)",
                log.display()
            ))
        }
    }
    Ok(header)
}

/// The room the record started from: a fresh one, or the resumed save.
fn room_for(header: &Value, package: &Package, log: &Path) -> Result<crate::room::Room, String> {
    let seed = header.get("seed").and_then(Value::as_u64).unwrap_or(0);
    let overrides = (
        header.get("instructionsMax").and_then(Value::as_u64),
        header
            .get("memoryMax")
            .and_then(Value::as_u64)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
    );
    match header.get("resume") {
        Some(save) => {
            let save = crate::package::Save::from_value(save, package)
                .map_err(|m| format!("{}:1: the record's resume point: {m}", log.display()))?;
            crate::package::room_from_save(package, &save, log, overrides)
        }
        None => crate::package::build_room(package, seed, overrides),
    }
    .map_err(|e| e.to_string())
}

/// What the replay says when a hash differs: where, and which state paths.
fn divergence(
    room: &crate::room::Room,
    expected: &BTreeMap<String, String>,
    (seq, action): (u64, &Value),
    (want, got): (&str, &str),
    (log, lineno): (&Path, usize),
) -> String {
    let now = room.kernel().digest_map();
    let mut paths: Vec<&String> = expected.keys().chain(now.keys()).collect();
    paths.sort();
    paths.dedup();
    let differing: Vec<&str> = paths
        .into_iter()
        .filter(|p| expected.get(*p) != now.get(*p))
        .map(String::as_str)
        .collect();
    let ty = action
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("(unreadable line)");
    format!(
        "diverged at sequence {seq} ({ty}, {}:{lineno}): expected state hash {want}, got {got}\n\
                 differing state paths: {}",
        log.display(),
        if differing.is_empty() {
            "(none found in the digest)".to_owned()
        } else {
            differing.join(", ")
        }
    )
}
