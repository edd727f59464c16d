//! Helpers for running the `digipology` binary.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The built binary.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_digipology"))
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("digipology-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Runs the binary with `args`, feeding `stdin`.
pub fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = bin()
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary starts");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin);
    }
    child.wait_with_output().expect("binary finishes")
}

/// Events printed on stdout, parsed.
pub fn events(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each event line is JSON"))
        .collect()
}

/// Asserts no Rust panic or backtrace text reached the user.
pub fn assert_no_panic(out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write test file");
    p
}

/// Copies a folder recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let p = entry.path();
        let dest = to.join(entry.file_name());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).expect("copy");
        }
    }
}

/// A scratch copy of an example game (`examples/<game>`) for one test to
/// change: `<scratch(test)>/<game>`.
pub fn example_copy(test: &str, game: &str) -> PathBuf {
    let copy = scratch(test).join(game);
    copy_dir(&root().join("examples").join(game), &copy);
    copy
}

/// Rewrites a game's `game.json` through `change`.
pub fn edit_manifest(game: &Path, change: impl FnOnce(&mut serde_json::Value)) {
    let manifest = game.join("game.json");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).expect("manifest")).expect("json");
    change(&mut doc);
    std::fs::write(&manifest, serde_json::to_string_pretty(&doc).expect("json")).expect("write");
}

/// Reads a child's output until a line containing `needle` (returning every
/// line read, that one last), or until the output ends. The 120-second
/// limit only stops a hung child from hanging the suite; nothing measures
/// how long the lines took.
pub fn lines_until(out: impl std::io::Read + Send + 'static, needle: &str) -> Vec<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    while let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(120)) {
        let done = line.contains(needle);
        seen.push(line);
        if done {
            break;
        }
    }
    seen
}

/// The lines `stream` writes, as they come (read on a thread of their own).
pub fn lines(stream: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stream)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Waits for a line containing `needle`. The limit only stops a hung child
/// from hanging the suite; nothing here measures how long anything took.
pub fn wait_for(rx: &std::sync::mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    panic!("no line containing {needle:?}; saw: {seen:#?}");
}

/// A room of `game`, written into `dir` as `game.json` (beside any script
/// the caller wrote there), started with `seed`, with `players` joined and
/// seated in seat order.
pub fn seated_room(
    dir: &Path,
    game: &serde_json::Value,
    seed: u64,
    players: &[&str],
) -> digipology_room::room::Room {
    std::fs::write(dir.join("game.json"), game.to_string()).expect("write game.json");
    let package = digipology_room::package::Package::load(dir).expect("game loads");
    let mut room =
        digipology_room::package::build_room(&package, seed, (None, None)).expect("room");
    let mut sink = Vec::new();
    room.start(&mut sink).expect("start");
    let players: Vec<String> = players.iter().map(|p| (*p).to_owned()).collect();
    room.seat_players(&players, &package.seats(), &mut sink)
        .expect("seat");
    room
}

/// `player`'s action of type `ty` with `payload` in `room`: its rejection
/// code, or `accepted`.
pub fn sends(
    room: &mut digipology_room::room::Room,
    player: &str,
    ty: &str,
    payload: serde_json::Value,
) -> String {
    let action = serde_json::json!({"type": ty, "source": {"kind": "player", "playerId": player}, "payload": payload});
    room.keep_events();
    room.submit_json(action, &mut Vec::new()).expect("submit");
    room.take_events()
        .iter()
        .find_map(|e| match &e.kind {
            digipology_kernel::EventKind::ActionRejected { rejection, .. } => {
                Some(rejection.code.as_str().to_owned())
            }
            _ => None,
        })
        .unwrap_or_else(|| "accepted".into())
}
