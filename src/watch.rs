//! `digipology watch`: a live room that reloads the game while it runs.
//!
//! Actions come from `--actions` first, then from standard input, one JSON
//! action per line. The game folder is watched (notify, debounced 30 ms):
//!
//! - a script change compiles and loads the new scripts beside the old ones
//!   against the current canonical state; on any error the old code keeps
//!   running and the error is printed with file:line. On success the next
//!   action runs the new code, and prompts/timers whose named callback
//!   vanished are reported.
//! - a `game.json` change reports which entities were added, removed or
//!   changed, then restarts the room from the new package and replays every
//!   action processed so far (so the game goes on where it was, on the new
//!   table); if the new package does not load, the room is left untouched.
//! - `--replay-on-change` also replays the whole stream against new scripts
//!   in a fresh room and prints where the outcome first diverges from the
//!   run so far (sequence, event, state paths).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use digipology_kernel::Value as Canon;
use notify::{RecursiveMode, Watcher};
use serde_json::Value;

use crate::error::CliError;
use crate::package::{build_room, Package};
use crate::room::{Room, Step};

/// Quiet time after the last file event before a reload.
const DEBOUNCE: Duration = Duration::from_millis(30);

/// What the watch loop reacts to.
enum Msg {
    Line(crate::jsonl::Line),
    Changed(PathBuf),
    InputClosed,
}

/// Options of `digipology watch`.
pub struct Options {
    /// The game folder.
    pub game: PathBuf,
    /// Room seed.
    pub seed: u64,
    /// Actions to process before standard input.
    pub actions: Option<PathBuf>,
    /// Players to join and seat.
    pub players: Vec<String>,
    /// Replay the stream on every script change and report divergence.
    pub replay_on_change: bool,
}

struct Status {
    terminal: bool,
    reloads: u32,
    last_error: Option<String>,
}

impl Status {
    /// A plain line on stderr (and the status line again on a terminal).
    fn say(&mut self, room: &Room, msg: &str) {
        let mut err = io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[2K");
        }
        let _ = writeln!(err, "watch: {msg}");
        if self.terminal {
            let _ = write!(
                err,
                "[watch] seq {} · reloads {} · {}",
                room.kernel().state().sequence,
                self.reloads,
                self.last_error.as_deref().unwrap_or("no errors")
            );
        }
        let _ = err.flush();
    }
}

/// Runs the watch loop until standard input closes and no file changes
/// arrive for a while when not interactive — in practice, until killed.
///
/// # Errors
/// The game cannot be loaded at start, or output fails.
pub fn watch(opts: &Options) -> Result<(), CliError> {
    let package = Package::load(&opts.game)?;
    let mut room = build_room(&package, opts.seed, (None, None))?;
    crate::notices_to_stderr(&mut room);
    room.keep_history();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let io_err = |e: io::Error| CliError::Io {
        path: PathBuf::from("-"),
        message: e.to_string(),
    };
    let seats = package.seats();
    let players = opts.players.clone();
    let setup = |room: &mut Room, file_starts_game: bool, out: &mut dyn Write| -> io::Result<()> {
        if !file_starts_game {
            room.start(out)?;
        }
        room.seat_players(&players, &seats, out)
    };
    match &opts.actions {
        Some(path) => {
            let file = std::fs::File::open(path).map_err(|e| CliError::Io {
                path: path.clone(),
                message: e.to_string(),
            })?;
            room.run_lines(io::BufReader::new(file), setup, &mut out)
                .map_err(io_err)?;
        }
        None => setup(&mut room, false, &mut out).map_err(io_err)?,
    }
    out.flush().map_err(io_err)?;

    let (tx, rx) = mpsc::channel();
    spawn_stdin(tx.clone());
    let dir = package
        .dir
        .canonicalize()
        .unwrap_or_else(|_| package.dir.clone());
    let running = Running::default();
    let _watcher = start_watcher(&dir, tx, running.clone()).map_err(|e| CliError::Io {
        path: dir.clone(),
        message: format!("cannot watch the game folder: {e}"),
    })?;
    let mut status = Status {
        terminal: io::stderr().is_terminal(),
        reloads: 0,
        last_error: None,
    };
    status.say(
        &room,
        &format!(
            "watching {} (seq {})",
            package.dir.display(),
            room.kernel().state().sequence
        ),
    );
    let mut state = Watching {
        package,
        room,
        seed: opts.seed,
        replay_on_change: opts.replay_on_change,
        running,
    };
    serve_changes(&mut state, &rx, &mut status, &mut out)
}

/// Input lines and file changes, in arrival order, until the input and
/// the watcher are gone.
fn serve_changes(
    state: &mut Watching,
    rx: &Receiver<Msg>,
    status: &mut Status,
    mut out: &mut dyn Write,
) -> Result<(), CliError> {
    let io_err = |e: io::Error| CliError::Io {
        path: PathBuf::from("-"),
        message: e.to_string(),
    };
    loop {
        match rx.recv() {
            Ok(Msg::Line(line)) => {
                if state.line(&line, &mut out).map_err(io_err)? {
                    status.say(
                        &state.room,
                        "the game's files changed while an action ran: an action was stopped (a script error), and the new code loads now",
                    );
                }
            }
            Ok(Msg::Changed(first)) => {
                let noticed = Instant::now();
                let mut changed = BTreeSet::from([first]);
                let mut queued = Vec::new();
                debounce(rx, &mut changed, &mut queued);
                state.reload(&changed, noticed, Instant::now(), status, out);
                for line in queued {
                    let _ = state.line(&line, &mut out).map_err(io_err)?;
                }
            }
            Ok(Msg::InputClosed) => {}
            Err(_) => return Ok(()),
        }
    }
}

/// Collects further file events until DEBOUNCE passes quietly; input lines
/// arriving meanwhile wait until after the reload.
fn debounce(
    rx: &Receiver<Msg>,
    changed: &mut BTreeSet<PathBuf>,
    queued: &mut Vec<crate::jsonl::Line>,
) {
    loop {
        match rx.recv_timeout(DEBOUNCE) {
            Ok(Msg::Changed(p)) => {
                changed.insert(p);
            }
            Ok(Msg::Line(l)) => queued.push(l),
            Ok(Msg::InputClosed) => {}
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Reads standard input as `run` does: lines of any bytes, each at most
/// `LINE_BYTES_MAX` long (a longer one is consumed without being held, a
/// non-UTF-8 one is a malformed action) — neither ends the input.
fn spawn_stdin(tx: Sender<Msg>) {
    std::thread::spawn(move || {
        let stdin = io::stdin();
        let mut lines = crate::jsonl::Lines::new(stdin.lock(), crate::jsonl::LINE_BYTES_MAX);
        while let Ok(Some(line)) = lines.next_line() {
            if tx.send(Msg::Line(line)).is_err() {
                return;
            }
        }
        let _ = tx.send(Msg::InputClosed);
    });
}

/// The stop switch of the room running an action now, if one is (shared
/// with the file watcher): a change to the game's files stops that action,
/// so a game caught in a long action reloads as soon as it is fixed.
#[derive(Clone, Default)]
struct Running(Arc<Mutex<Option<Arc<AtomicBool>>>>);

impl Running {
    fn set(&self, switch: Option<Arc<AtomicBool>>) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = switch;
    }

    fn stop(&self) {
        if let Some(s) = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
        {
            s.store(true, Ordering::Relaxed);
        }
    }
}

fn start_watcher(
    dir: &Path,
    tx: Sender<Msg>,
    running: Running,
) -> notify::Result<notify::RecommendedWatcher> {
    let sources = crate::package::SourceFilter::new(dir);
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let Ok(event) = res else { return };
        if !(event.kind.is_modify() || event.kind.is_create() || event.kind.is_remove()) {
            return;
        }
        for path in event.paths {
            if sources.is_source(&path) {
                // An action still running on the old code is stopped: the
                // reload waits for it.
                running.stop();
                let _ = tx.send(Msg::Changed(path));
            }
        }
    })?;
    watcher.watch(dir, RecursiveMode::Recursive)?;
    Ok(watcher)
}

struct Watching {
    package: Package,
    room: Room,
    seed: u64,
    replay_on_change: bool,
    running: Running,
}

impl Watching {
    /// Processes one input line; `true` when a change to the files
    /// stopped it.
    fn line(&mut self, line: &crate::jsonl::Line, out: &mut dyn Write) -> io::Result<bool> {
        if let crate::jsonl::Line::Bytes(b) = line {
            if b.iter().all(u8::is_ascii_whitespace) {
                return Ok(false);
            }
        }
        let switch = self.room.interrupt();
        self.running.set(switch.clone());
        let done = self.room.submit_line(line, out);
        self.running.set(None);
        // The room goes on (with the old code if the reload fails).
        let stopped = switch.is_some_and(|s| s.swap(false, Ordering::Relaxed));
        done?;
        out.flush()?;
        Ok(stopped)
    }

    fn reload(
        &mut self,
        changed: &BTreeSet<PathBuf>,
        noticed: Instant,
        settled: Instant,
        status: &mut Status,
        out: &mut dyn Write,
    ) {
        let manifest_changed = changed
            .iter()
            .any(|p| p.file_name().is_some_and(|n| n == "game.json"));
        let result = if manifest_changed {
            self.reload_manifest(status, out)
        } else {
            self.reload_scripts(status)
        };
        match result {
            Ok(what) => {
                status.reloads += 1;
                status.last_error = None;
                let total = noticed.elapsed().as_secs_f64() * 1000.0;
                let work = settled.elapsed().as_secs_f64() * 1000.0;
                status.say(
                    &self.room,
                    &format!("{what}: new code live {total:.1} ms after the change was noticed ({work:.1} ms reloading, the rest debounce)"),
                );
            }
            Err(msg) => {
                status.last_error = Some(msg.clone());
                status.say(
                    &self.room,
                    &format!("reload failed, the previous code keeps running: {msg}"),
                );
            }
        }
    }

    fn reload_scripts(&mut self, status: &mut Status) -> Result<String, String> {
        let package = Package::load(&self.package.dir).map_err(|e| e.to_string())?;
        let host = package
            .script_host(self.room.kernel().state(), (None, None))
            .map_err(|e| e.to_string())?;
        self.room.replace_scripts(host);
        self.package = package;
        for warning in vanished_callbacks(&self.room) {
            status.say(&self.room, &warning);
        }
        if self.replay_on_change {
            let report = self.replay_report();
            status.say(&self.room, &report);
        }
        Ok("reloaded scripts".into())
    }

    fn reload_manifest(
        &mut self,
        status: &mut Status,
        out: &mut dyn Write,
    ) -> Result<String, String> {
        let package = Package::load(&self.package.dir).map_err(|e| e.to_string())?;
        let diff = manifest_diff(&self.package.json, &package.json);
        let mut room = build_room(&package, self.seed, (None, None)).map_err(|e| e.to_string())?;
        crate::notices_to_stderr(&mut room);
        room.keep_history();
        room.autofire = false;
        let steps = self.room.history().to_vec();
        let mut sink = io::sink();
        replay_steps(&mut room, &steps, &mut sink).map_err(|e| e.to_string())?;
        room.autofire = true;
        status.say(&self.room, &format!("game.json changed: {diff}"));
        let _ = writeln!(
            io::stderr(),
            "watch: replayed {} actions on the new table",
            steps.len()
        );
        let _ = out.flush();
        self.room = room;
        self.package = package;
        Ok("restarted the room on the new game.json".into())
    }

    /// Replays the stream in a fresh room with the current package and
    /// compares it with the run so far.
    fn replay_report(&self) -> String {
        let steps = self.room.history();
        let mut fresh = match build_room(&self.package, self.seed, (None, None)) {
            Ok(r) => r,
            Err(e) => return format!("replay: cannot build a fresh room: {e}"),
        };
        crate::notices_to_stderr(&mut fresh);
        fresh.keep_history();
        fresh.autofire = false;
        let mut sink = io::sink();
        if let Err(e) = replay_steps(&mut fresh, steps, &mut sink) {
            return format!("replay failed: {e}");
        }
        let replayed = fresh.history();
        for (old, new) in steps.iter().zip(replayed.iter()) {
            if old.hash == new.hash {
                continue;
            }
            let seq =
                serde_json::from_str::<Value>(old.events.first().map_or("{}", String::as_str))
                    .ok()
                    .and_then(|e| e["seq"].as_u64())
                    .unwrap_or(0);
            let event = old
                .events
                .iter()
                .zip(new.events.iter())
                .position(|(a, b)| a != b)
                .or_else(|| {
                    (old.events.len() != new.events.len())
                        .then(|| old.events.len().min(new.events.len()))
                });
            let event_text = match event {
                Some(i) => format!(
                    "event #{}: was {}, now {}",
                    i + 1,
                    old.events.get(i).map_or("(none)", String::as_str),
                    new.events.get(i).map_or("(none)", String::as_str)
                ),
                None => "same events".into(),
            };
            // Every earlier step agreed on the hash, so the states differ
            // only in parts one of the two runs changed at this step.
            let mut paths: Vec<&String> = old.changed.keys().chain(new.changed.keys()).collect();
            paths.sort();
            paths.dedup();
            let differing: Vec<&str> = paths
                .into_iter()
                .filter(|p| old.changed.get(*p) != new.changed.get(*p))
                .map(String::as_str)
                .collect();
            return format!(
                "replay with the new code diverges at sequence {seq}: {event_text}; state paths: {}",
                differing.join(", ")
            );
        }
        format!(
            "replay with the new code: same outcome for all {} actions",
            steps.len()
        )
    }
}

fn replay_steps(room: &mut Room, steps: &[Step], sink: &mut dyn Write) -> io::Result<()> {
    let done = usize::try_from(room.kernel().state().sequence).unwrap_or(usize::MAX);
    for step in steps.iter().skip(done) {
        match &step.input {
            crate::room::Input::Raw(raw) => {
                room.submit_line(&crate::jsonl::Line::Bytes(raw.as_bytes().to_vec()), sink)?
            }
            crate::room::Input::Action(action) => room.submit_json(action.clone(), sink)?,
        }
    }
    Ok(())
}

/// "added entities a, b; removed entities c; changed entities d; settings,
/// prefabs changed" between two manifests.
fn manifest_diff(old: &Value, new: &Value) -> String {
    let index = |v: &Value| -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        match v.get("entities") {
            Some(Value::Array(list)) => {
                for e in list {
                    if let Some(id) = e.get("id").and_then(Value::as_str) {
                        out.insert(id.to_owned(), canon(e));
                    }
                }
            }
            Some(Value::Object(map)) => {
                for (id, e) in map {
                    out.insert(id.clone(), canon(e));
                }
            }
            _ => {}
        }
        out
    };
    let (a, b) = (index(old), index(new));
    let added: Vec<&str> = b
        .keys()
        .filter(|k| !a.contains_key(*k))
        .map(String::as_str)
        .collect();
    let removed: Vec<&str> = a
        .keys()
        .filter(|k| !b.contains_key(*k))
        .map(String::as_str)
        .collect();
    let changed: Vec<&str> = a
        .iter()
        .filter(|(k, v)| b.get(*k).is_some_and(|w| w != *v))
        .map(|(k, _)| k.as_str())
        .collect();
    let mut parts = Vec::new();
    for (label, list) in [("added", added), ("removed", removed), ("changed", changed)] {
        if !list.is_empty() {
            parts.push(format!("{label} entities {}", list.join(", ")));
        }
    }
    // Every other manifest field, by name.
    let others: Vec<&str> = digipology_kernel::load::GAME_KEYS
        .iter()
        .copied()
        .filter(|k| *k != "entities" && old.get(*k) != new.get(*k))
        .collect();
    if !others.is_empty() {
        parts.push(format!("{} changed", others.join(", ")));
    }
    if parts.is_empty() {
        "nothing that the room reads changed".into()
    } else {
        parts.join("; ")
    }
}

fn canon(v: &Value) -> String {
    Canon::from_json(v)
        .map(|c| c.to_canonical_json())
        .unwrap_or_default()
}

/// Open prompts and scheduled timers whose stored callback no longer exists.
fn vanished_callbacks(room: &Room) -> Vec<String> {
    let Some(host) = room.scripts() else {
        return Vec::new();
    };
    let state = room.kernel().state();
    let mut out = Vec::new();
    let text = |v: &Canon| match v {
        Canon::String(s) => s.clone(),
        _ => String::new(),
    };
    for (id, timer) in &state.timers {
        let (cb, script, binding) = (
            timer.callback.clone(),
            timer.script_id.clone(),
            timer.binding_id.clone(),
        );
        if !host.has_function(&script, &binding, &cb) {
            out.push(format!("timer {id}: its callback '{cb}' (script {script}) no longer exists; its fire will be a script error"));
        }
    }
    if let Some(Canon::Object(runtime)) = state.storage().get("@runtime") {
        if let Some(Canon::Object(prompts)) = runtime.get("prompts") {
            for (id, rec) in prompts {
                let open = state.prompts.get(id.as_str()).is_some_and(|p| p.is_open());
                let Canon::Object(rec) = rec else { continue };
                let field = |k: &str| rec.get(k).map(&text).unwrap_or_default();
                let (cb, script, binding) = (field("callback"), field("script"), field("binding"));
                if open && !host.has_function(&script, &binding, &cb) {
                    out.push(format!("prompt {id}: its callback '{cb}' (script {script}) no longer exists; its answer will be a script error"));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::manifest_diff;
    use serde_json::json;

    #[test]
    fn a_manifest_diff_names_what_changed() {
        let old =
            json!({"settings": {"a": 1}, "entities": [{"id": "x"}, {"id": "y"}], "prefabs": {}});
        let same = manifest_diff(&old, &old);
        assert_eq!(same, "nothing that the room reads changed");
        let mut settings = old.clone();
        settings["settings"]["a"] = json!(2);
        assert_eq!(manifest_diff(&old, &settings), "settings changed");
        let mut prefabs = old.clone();
        prefabs["prefabs"] = json!({"token": {}});
        assert_eq!(manifest_diff(&old, &prefabs), "prefabs changed");
        let ents = json!({"settings": {"a": 2}, "entities": [{"id": "y", "tags": ["t"]}, {"id": "z"}], "prefabs": {}});
        assert_eq!(
            manifest_diff(&old, &ents),
            "added entities z; removed entities x; changed entities y; settings changed"
        );
    }
}
