//! `digipology test`: scenario files under each game's `tests/`.
//!
//! A scenario is a JSON file:
//!
//! ```json
//! { "name": "a full round", "seed": 3, "players": ["ann", "bob"],
//!   "steps": [
//!     { "do": {"type": "button.press", "source": {"kind": "player", "playerId": "ann"},
//!              "payload": {"entityId": "deal"}},
//!       "events": [{"type": "deck.drawn"}, {"type": "counter.changed", "data": {"value": 1}}] },
//!     { "do": {…}, "reject": "guard_denied" },
//!     { "advance": 5000 },
//!     { "expect": {"entities.score.components.counter.value": 1, "storage.main.rounds": 1} }
//!   ] }
//! ```
//!
//! See docs/formats.md ("Scenario tests") for every field.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use digipology_kernel::Viewer;

use crate::package::Package;
use crate::room::Room;

/// One scenario's outcome.
pub struct Outcome {
    /// The game folder.
    pub game: PathBuf,
    /// The scenario file.
    pub file: PathBuf,
    /// The scenario's name.
    pub name: String,
    /// `None` when it passed; else the failure, naming the step.
    pub failure: Option<String>,
}

/// Finds the scenario files under `paths` (game folders, folders of games,
/// or scenario files), in sorted order.
pub fn discover(paths: &[PathBuf]) -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_file() {
            out.push((game_of(p), p.clone()));
        } else if p.join("game.json").is_file() {
            out.extend(scenarios_of(p));
        } else if let Ok(entries) = std::fs::read_dir(p) {
            let mut dirs: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|d| d.is_dir())
                .collect();
            dirs.sort();
            for d in dirs {
                if d.join("game.json").is_file() {
                    out.extend(scenarios_of(&d));
                }
            }
        }
    }
    out
}

/// The game a scenario file belongs to: the nearest folder above it that
/// holds a `game.json` (`tests/x.json` given inside the game folder is the
/// current folder's game).
fn game_of(file: &Path) -> PathBuf {
    for dir in file.ancestors().skip(1) {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if dir.join("game.json").is_file() {
            return dir.to_path_buf();
        }
    }
    // Given from inside the game's tests/ folder: look above the current
    // folder too.
    if let Ok(absolute) = std::path::absolute(file) {
        if let Some(dir) = absolute
            .ancestors()
            .skip(1)
            .find(|d| d.join("game.json").is_file())
        {
            return dir.to_path_buf();
        }
    }
    file.parent()
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn scenarios_of(game: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(game.join("tests")) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|f| f.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.into_iter().map(|f| (game.to_path_buf(), f)).collect()
}

/// Runs one scenario.
pub fn run(game: &Path, file: &Path) -> Outcome {
    let mut outcome = Outcome {
        game: game.to_path_buf(),
        file: file.to_path_buf(),
        name: file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        failure: None,
    };
    match run_inner(game, file, &mut outcome.name) {
        Ok(()) => {}
        Err(e) => outcome.failure = Some(e),
    }
    outcome
}

fn run_inner(game: &Path, file: &Path, name: &mut String) -> Result<(), String> {
    let text =
        std::fs::read_to_string(file).map_err(|e| format!("cannot read the scenario: {e}"))?;
    let scenario: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}:{}:{}: invalid JSON: {e}",
            file.display(),
            e.line(),
            e.column()
        )
    })?;
    let obj = scenario
        .as_object()
        .ok_or("a scenario must be a JSON object")?;
    const KEYS: &[&str] = &["name", "seed", "players", "settings", "match", "steps"];
    if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!(
            "unknown scenario key \"{k}\" (allowed: {})",
            KEYS.join(", ")
        ));
    }
    if let Some(n) = obj.get("name").and_then(Value::as_str) {
        *name = n.to_owned();
    }
    let seed = obj.get("seed").and_then(Value::as_u64).unwrap_or(0);
    let package = Package::load(game).map_err(|e| e.to_string())?;
    let mut room =
        crate::package::build_room(&package, seed, (None, None)).map_err(|e| e.to_string())?;
    crate::notices_to_stderr(&mut room);
    scenario_match(&mut room, obj, file)?;
    let seats = package.seats();
    let players: Vec<String> = match obj.get("players") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|p| p.as_str().map(str::to_owned))
            .collect(),
        Some(_) => return Err("\"players\" must be an array of player ids".into()),
    };
    let mut sink: Vec<u8> = Vec::new();
    start_scenario(&mut room, obj.get("settings"), &mut sink)?.map_err(|e| e.to_string())?;
    if let Some(e) = events_of(&sink)
        .iter()
        .find(|e| e["type"] == "action.rejected")
    {
        return Err(format!(
            "the game did not start: {} ({})",
            e["data"]["code"], e["data"]["message"]
        ));
    }
    room.seat_players(&players, &seats, &mut sink)
        .map_err(|e| e.to_string())?;
    room.keep_events();
    let steps = obj
        .get("steps")
        .and_then(Value::as_array)
        .ok_or("a scenario needs a \"steps\" array")?;
    for (i, step) in steps.iter().enumerate() {
        let n = i + 1;
        step_once(&mut room, step).map_err(|e| format!("step {n}: {e}"))?;
    }
    Ok(())
}

/// Starts a scenario's room: the game's settings, then the match's rules,
/// then the scenario's own `settings` (docs/match.md, The config).
fn start_scenario(
    room: &mut Room,
    over: Option<&Value>,
    sink: &mut Vec<u8>,
) -> Result<std::io::Result<()>, String> {
    Ok(match over {
        None => room.start(sink),
        Some(Value::Object(over)) => room.start_overriding(over, sink),
        Some(_) => {
            return Err(
                "\"settings\" must be an object of setting overrides, like {\"target\": 3}".into(),
            )
        }
    })
}

/// A scenario's own match config (`"match"`), replacing the game's.
fn scenario_match(
    room: &mut Room,
    obj: &serde_json::Map<String, Value>,
    file: &Path,
) -> Result<(), String> {
    let Some(m) = obj.get("match") else {
        return Ok(());
    };
    let config = crate::package::match_config_from(m, "match", file).map_err(|e| e.to_string())?;
    crate::package::apply_match(room, config, file).map_err(|e| e.to_string())
}

fn events_of(buf: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(buf)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

const STEP_KEYS: &[&str] = &[
    "do",
    "events",
    "absent",
    "reject",
    "advance",
    "expect",
    "lengths",
    "views",
    "observations",
    "note",
];

/// What a step may check of one viewer's events and state.
const VIEW_KEYS: &[&str] = &["events", "absent", "expect", "lengths"];

fn step_once(room: &mut Room, step: &Value) -> Result<(), String> {
    let obj = step.as_object().ok_or("a step must be an object")?;
    if let Some(k) = obj.keys().find(|k| !STEP_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "unknown step key \"{k}\" (allowed: {})",
            STEP_KEYS.join(", ")
        ));
    }
    let mut sink: Vec<u8> = Vec::new();
    if let Some(ms) = obj.get("advance") {
        let ms = ms
            .as_i64()
            .filter(|m| *m >= 0)
            .ok_or("\"advance\" must be a non-negative number of milliseconds")?;
        room.advance(ms, &mut sink).map_err(|e| e.to_string())?;
    }
    if let Some(action) = obj.get("do") {
        room.submit_json(action.clone(), &mut sink)
            .map_err(|e| e.to_string())?;
    }
    let raw = room.take_events();
    let events = events_of(&sink);
    check_rejection(obj, &events)?;
    check_view(obj, &events, &mut || room.kernel().state().canonical_json())?;
    if let Some(obs) = obj.get("observations") {
        check_observations(room, obs)?;
    }
    if let Some(views) = obj.get("views") {
        let views = views
            .as_object()
            .ok_or("\"views\" must map viewers (a seat id, spectator, referee) to checks")?;
        for (name, checks) in views {
            let checks = checks
                .as_object()
                .ok_or_else(|| format!("views.{name} must be an object of checks"))?;
            if let Some(k) = checks.keys().find(|k| !VIEW_KEYS.contains(&k.as_str())) {
                return Err(format!(
                    "views.{name}: unknown key \"{k}\" (allowed: {})",
                    VIEW_KEYS.join(", ")
                ));
            }
            let viewer = Viewer::parse(name);
            let kernel_state = room.kernel().state();
            if let Viewer::Seat(seat) = &viewer {
                if !kernel_state.seats.contains_key(seat) {
                    return Err(format!("views.{name}: no seat \"{seat}\" in this game"));
                }
            }
            let mut line = String::new();
            let seen: Vec<Value> = raw
                .iter()
                .filter_map(|e| {
                    line.clear();
                    kernel_state
                        .write_event_for(e, &viewer, &mut line)
                        .then(|| serde_json::from_str(&line).ok())
                        .flatten()
                })
                .collect();
            check_view(checks, &seen, &mut || {
                room.observe(&viewer).to_canonical_json()
            })
            .map_err(|e| format!("as {name}: {e}"))?;
        }
    }
    Ok(())
}

/// `observations`: viewer → {path in its observation → value} (a path
/// whose value is `null` must be absent or null: what a viewer must not
/// be shown).
fn check_observations(room: &mut Room, obs: &Value) -> Result<(), String> {
    let obs = obs.as_object().ok_or(
        "\"observations\" must map viewers (a seat id, spectator, referee) to {path: value}",
    )?;
    for (name, checks) in obs {
        let checks = checks
            .as_object()
            .ok_or_else(|| format!("observations.{name} must map observation paths to values"))?;
        let viewer = Viewer::parse(name);
        if let Viewer::Seat(seat) = &viewer {
            if !room.kernel().state().seats.contains_key(seat) {
                return Err(format!(
                    "observations.{name}: no seat \"{seat}\" in this game"
                ));
            }
        }
        let doc = room.observation(&viewer);
        for (path, want) in checks {
            let got = lookup(&doc, path);
            if got.is_none() {
                parent_exists(&doc, path).map_err(|e| format!("observation of {name}: {e}"))?;
            }
            if !same(&got, want) {
                return Err(format!(
                    "observation of {name}, {path}: expected {want}, got {}",
                    got.unwrap_or(Value::Null)
                ));
            }
        }
    }
    Ok(())
}

/// `events`, `absent`, `lengths` and `expect` against one view of the
/// step's events and of the state (its canonical JSON, written only when a
/// check needs it).
fn check_view(
    obj: &serde_json::Map<String, Value>,
    events: &[Value],
    state: &mut dyn FnMut() -> String,
) -> Result<(), String> {
    if let Some(expected) = obj.get("events") {
        let list = expected.as_array().ok_or("\"events\" must be an array")?;
        match_events(list, events)?;
    }
    if let Some(absent) = obj.get("absent") {
        let list = absent.as_array().ok_or("\"absent\" must be an array")?;
        absent_events(list, events)?;
    }
    if !obj.contains_key("lengths") && !obj.contains_key("expect") {
        return Ok(());
    }
    let state: Value = serde_json::from_str(&state()).map_err(|e| e.to_string())?;
    let state = &state;
    if let Some(lengths) = obj.get("lengths") {
        check_lengths(state, lengths)?;
    }
    if let Some(expect) = obj.get("expect") {
        let map = expect
            .as_object()
            .ok_or("\"expect\" must map state paths to values")?;
        for (path, want) in map {
            let got = lookup(state, path);
            if got.is_none() {
                parent_exists(state, path)?;
            }
            if !same(&got, want) {
                return Err(format!(
                    "state {path}: expected {want}, got {}",
                    got.unwrap_or(Value::Null)
                ));
            }
        }
    }
    Ok(())
}

/// `reject`: the action was refused with this code; without it, an action
/// (`do`) must be accepted.
fn check_rejection(obj: &serde_json::Map<String, Value>, events: &[Value]) -> Result<(), String> {
    if let Some(code) = obj.get("reject") {
        let code = code.as_str().ok_or("\"reject\" must be a rejection code")?;
        let got = events.iter().find(|e| e["type"] == "action.rejected");
        match got {
            Some(e) if e["data"]["code"] == json!(code) => {}
            Some(e) => {
                return Err(format!(
                    "expected rejection {code}, got {} ({})",
                    e["data"]["code"], e["data"]["message"]
                ))
            }
            None => {
                return Err(format!(
                    "expected rejection {code}, but the action was accepted: {}",
                    brief(events)
                ))
            }
        }
    } else if obj.contains_key("do") {
        if let Some(e) = events.iter().find(|e| e["type"] == "action.rejected") {
            return Err(format!(
                "the action was rejected ({}: {}); add \"reject\" to the step if that is expected",
                e["data"]["code"], e["data"]["message"]
            ));
        }
    }
    Ok(())
}

/// `lengths`: state paths and the number of entries each holds.
fn check_lengths(state: &Value, lengths: &Value) -> Result<(), String> {
    let map = lengths
        .as_object()
        .ok_or("\"lengths\" must map state paths to lengths")?;
    for (path, want) in map {
        let want = want
            .as_u64()
            .ok_or_else(|| format!("lengths {path}: the length must be a non-negative integer"))?;
        let got = match lookup(state, path) {
            Some(Value::Array(a)) => a.len(),
            Some(Value::Object(o)) => o.len(),
            Some(Value::String(s)) => s.chars().count(),
            Some(other) => {
                return Err(format!(
                    "state {path}: expected something with {want} entries, got {other}"
                ))
            }
            // An absent key of an object that exists has length 0; a
            // path whose parent is missing is a typo, not a zero.
            None => {
                parent_exists(state, path)?;
                0
            }
        };
        if got as u64 != want {
            return Err(format!("state {path}: expected length {want}, got {got}"));
        }
    }
    Ok(())
}

/// A path that finds nothing is fine when its parent exists (an absent
/// key reads as null, or length 0); a missing parent is a typo, and fails.
fn parent_exists(state: &Value, path: &str) -> Result<(), String> {
    let parent = path.rsplit_once('.').map_or("", |(p, _)| p);
    let exists = parent.is_empty()
        || matches!(
            lookup(state, parent),
            Some(Value::Object(_) | Value::Array(_))
        );
    if exists {
        Ok(())
    } else {
        Err(format!(
            "state {path}: no such path ({parent} does not exist)"
        ))
    }
}

fn brief(events: &[Value]) -> String {
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    format!("[{}]", types.join(", "))
}

/// Each expected event must appear, in order, among the step's events; its
/// `data` (when given) must be contained in the actual data.
fn match_events(expected: &[Value], actual: &[Value]) -> Result<(), String> {
    let mut from = 0;
    for (i, want) in expected.iter().enumerate() {
        let ty = want
            .get("type")
            .and_then(Value::as_str)
            .ok_or("each expected event needs a \"type\"")?;
        let found = actual[from..]
            .iter()
            .position(|e| event_matches(e, ty, want));
        match found {
            Some(p) => from += p + 1,
            None => {
                let mut msg = format!("expected event #{} {ty}", i + 1);
                if let Some(d) = want.get("data") {
                    let _ = write!(msg, " with data {d}");
                }
                let near: Vec<String> = actual
                    .iter()
                    .filter(|e| e["type"] == json!(ty))
                    .map(|e| e["data"].to_string())
                    .collect();
                if near.is_empty() {
                    let _ = write!(msg, "; the step emitted {}", brief(actual));
                } else {
                    let _ = write!(msg, "; got {ty} with {}", near.join(" and "));
                }
                return Err(msg);
            }
        }
    }
    Ok(())
}

/// None of the listed events (type, and `data` as a subset when given) may
/// appear among the step's events.
fn absent_events(unwanted: &[Value], actual: &[Value]) -> Result<(), String> {
    for want in unwanted {
        let ty = want
            .get("type")
            .and_then(Value::as_str)
            .ok_or("each absent event needs a \"type\"")?;
        if let Some(e) = actual.iter().find(|e| event_matches(e, ty, want)) {
            return Err(format!(
                "expected no {ty}{}, but the step emitted one with data {}",
                want.get("data")
                    .map(|d| format!(" with data {d}"))
                    .unwrap_or_default(),
                e["data"]
            ));
        }
    }
    Ok(())
}

/// Whether event `e` has type `ty` and, when `want` gives `data`, data
/// containing it.
fn event_matches(e: &Value, ty: &str, want: &Value) -> bool {
    e["type"] == json!(ty) && want.get("data").is_none_or(|d| contains(&e["data"], d))
}

fn contains(actual: &Value, want: &Value) -> bool {
    match (actual, want) {
        (Value::Object(a), Value::Object(w)) => w
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|x| contains(x, v))),
        _ => same(&Some(actual.clone()), want),
    }
}

fn same(got: &Option<Value>, want: &Value) -> bool {
    match (got, want) {
        (None, Value::Null) => true,
        (Some(Value::Number(a)), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Some(g), w) => g == w,
        (None, _) => false,
    }
}

/// A dot-separated path into the canonical state (`entities.score.components.counter.value`,
/// `stacks.pile.items.0`).
pub fn lookup(state: &Value, path: &str) -> Option<Value> {
    let mut v = state;
    for part in path.split('.') {
        v = match v {
            Value::Object(o) => o.get(part)?,
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v.clone())
}

/// A JUnit XML report.
pub fn junit(outcomes: &[Outcome]) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let failures = outcomes.iter().filter(|o| o.failure.is_some()).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites tests=\"{}\" failures=\"{failures}\">",
        outcomes.len()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"digipology\" tests=\"{}\" failures=\"{failures}\">",
        outcomes.len()
    );
    for o in outcomes {
        let class = esc(&o.game.display().to_string());
        let name = esc(&o.name);
        match &o.failure {
            None => {
                let _ = writeln!(out, "    <testcase classname=\"{class}\" name=\"{name}\"/>");
            }
            Some(f) => {
                let _ = writeln!(out, "    <testcase classname=\"{class}\" name=\"{name}\">");
                let _ = writeln!(
                    out,
                    "      <failure message=\"{}\">{}</failure>",
                    esc(f),
                    esc(&o.file.display().to_string())
                );
                let _ = writeln!(out, "    </testcase>");
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
